"""AgentOSStore follows LangGraph's store contract (the behaviour InMemoryStore documents and tests)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp

from core.errors import ValidationError
from core.langgraph_store import AgentOSStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, agents_home):
    """A store on agent finn in the test's home (memory.db, or a schema on the test server), indexing ``text``
    (with the test's embedder: the real model where the test asks for ``minilm``)."""
    if request.param == "postgres":
        request.getfixturevalue("pg_home")
    yield AgentOSStore("finn", index={"fields": ["text"]})


def put_namespaces(store, namespaces):
    for i, ns in enumerate(namespaces):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})


def test_put_get_overwrite_delete(store):
    """put stores a copy, a second put overwrites it (created_at kept), delete removes it."""
    value = {"text": "first", "tags": ["a"]}
    store.put(("docs",), "k", value)
    first = store.get(("docs",), "k")
    assert first.value == value and first.key == "k" and first.namespace == ("docs",)
    assert first.created_at.tzinfo is not None and first.created_at == first.updated_at
    store.put(("docs",), "k", {"text": "second"})
    second = store.get(("docs",), "k")
    assert second.value == {"text": "second"}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    store.delete(("docs",), "k")
    assert store.get(("docs",), "k") is None
    assert store.get(("nowhere",), "k") is None
    store.delete(("docs",), "never-there")


def test_namespace_rules(store):
    """Empty namespaces, empty labels, dots and a 'langgraph' root are InvalidNamespaceError through put."""
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", "")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(store.aput(bad, "foo", doc))
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "foo"), "bar", doc)
    with pytest.raises(InvalidNamespaceError):
        store.get(("a.b",), "k")
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("x.y",), "k", doc)])
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.get(("foo", "langgraph", "foo"), "bar").value == doc
    assert store.search(("foo", "langgraph", "foo"))[0].value == doc
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])  # past the public API, as InMemoryStore allows
    assert store.get(("langgraph", "foo"), "bar").value == doc


def test_bad_values_are_refused_and_change_nothing(store):
    """A value that is not a JSON object is a ValidationError and no item of the batch is written."""
    with pytest.raises(ValidationError):
        store.batch([PutOp(("docs",), "ok", {"text": "fine"}), PutOp(("docs",), "bad", {"x": object()})])
    with pytest.raises(ValidationError):
        store.put(("docs",), "bad", ["not", "a", "mapping"])
    assert store.get(("docs",), "ok") is None


def test_batch_reads_see_the_state_before_its_writes(store):
    """In one batch, reads come before the writes and the last put of a key wins."""
    store.put(("docs",), "k", {"text": "old"})
    results = store.batch([PutOp(("docs",), "k", {"text": "new"}), GetOp(("docs",), "k"),
                           PutOp(("docs",), "k", {"text": "newest"}), SearchOp(("docs",)),
                           GetOp(("docs",), "none")])
    assert results[0] is None and results[2] is None and results[4] is None
    assert results[1].value == {"text": "old"} and [i.value for i in results[3]] == [{"text": "old"}]
    assert store.get(("docs",), "k").value == {"text": "newest"}


def test_a_namespace_given_as_a_string_is_refused(store):
    """``put("memories", ...)`` for ``("memories",)`` is an InvalidNamespaceError that shows the tuple to
    write; the string was taken as a tuple of its letters (``("m", "e", "m", ...)``), an item no search
    found."""
    for call in (lambda: store.put("memories", "k", {"text": "tea"}), lambda: store.get("memories", "k"),
                 lambda: store.search("memories"), lambda: store.delete("memories", "k")):
        with pytest.raises(InvalidNamespaceError, match=r"\('memories',\)"):
            call()
    assert store.list_namespaces() == []


def test_list_namespaces_prefix_suffix_depth_pagination(store):
    """list_namespaces filters by prefix and suffix (with * wildcards), truncates to max_depth and pages."""
    put_namespaces(store, [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
                           ("a", "c", "f"), ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"),
                           ("admin", "users", "789")])
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d", "e"),
                                                        ("a", "b", "d", "i"),
                                                        ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"),
                                                                     ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert len(store.list_namespaces()) == 9


def test_list_namespaces_pagination_and_empty_store(store):
    """An empty store lists nothing; 20 namespaces come in sorted pages."""
    assert store.list_namespaces() == []
    put_namespaces(store, [("namespace", f"sub_{i:02d}") for i in range(20)])
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=5) == [
        ("namespace", f"sub_{i:02d}") for i in range(5, 10)]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=15) == [
        ("namespace", f"sub_{i:02d}") for i in range(15, 20)]


def test_search_without_query_filters_and_pages(store):
    """Without a query, search returns the prefix's items newest first, filtered on values, paged."""
    for i in range(6):
        store.put(("docs", "u1" if i % 2 else "u2"), f"d{i}",
                  {"text": f"doc {i}", "score": i, "meta": {"ok": i > 2},
                                                              "tags": ["x", str(i)]})
    store.put(("docsX",), "other", {"text": "not under docs"})
    keys = [item.key for item in store.search(("docs",), limit=10)]
    assert keys == ["d5", "d4", "d3", "d2", "d1", "d0"]
    assert [i.key for i in store.search(("docs", "u1"))] == ["d5", "d3", "d1"]
    assert [i.key for i in store.search(("docs",), limit=2, offset=2)] == ["d3", "d2"]
    assert [i.key for i in store.search(("docs",), filter={"score": {"$gt": 1, "$lte": 4}})] == ["d4", "d3",
                                                                                                 "d2"]
    assert [i.key for i in store.search(("docs",),
                                        filter={"score": {"$ne": 0}, "meta": {"ok": False}})] == ["d2", "d1"]
    assert [i.key for i in store.search(("docs",), filter={"tags": ["x", "3"]})] == ["d3"]
    assert [i.key for i in store.search(("docs",), filter={"score": {"$eq": 5}})] == ["d5"]
    assert store.search(("docs",), filter={"missing": 1}) == []
    assert all(item.score is None for item in store.search(("docs",)))
    with pytest.raises(ValidationError, match=r"\$regex"):
        store.search(("docs",), filter={"text": {"$regex": "doc"}})


def test_query_orders_by_hybrid_recall_with_filters(minilm, store):
    """search(query=...) ranks by the tiers' hybrid recall, best first, within the filter and namespace."""
    docs = [("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
            ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
            ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
            ("doc4", {"text": "blue car", "color": "blue", "score": 3.5})]
    for key, value in docs:
        store.put(("test",), key, value)
    store.put(("elsewhere",), "doc9", {"text": "red apple pie", "color": "red"})
    results = store.search(("test",), query="apple", filter={"color": "red"})
    assert [r.key for r in results] == ["doc1", "doc2"]
    assert results[0].score > results[1].score
    results = store.search(("test",), query="car", filter={"color": "red"})
    assert [r.key for r in results][0] == "doc2"
    results = store.search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})
    assert [r.key for r in results] == ["doc3"]
    results = store.search(("test",), query="automobile")
    assert {r.key for r in results[:2]} == {"doc2", "doc4"} and len(results) == 4
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_query_pagination_updates_and_unindexed_items(store):
    """Query results page without overlap; an update re-indexes the item; index=False items only fill the
    end."""
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == len(page2) == 2 and not {r.key for r in page1} & {r.key for r in page2}
    assert len(store.search(("test",), query="test", limit=10)) == 5

    store.put(("zoo",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("zoo",), "doc2", {"text": "something about dogs"})
    assert store.search(("zoo",), query="Zany Xerxes")[0].key == "doc1"
    store.put(("zoo",), "doc1", {"text": "new text about dogs and puppies"})
    stale = store.manager.recall_memory("zany zebra Xerxes", kind="item", n_results=20)
    assert not any("zany" in hit["content"] for hit in stale)  # the old passage left the index
    assert store.search(("zoo",), query="puppies")[0].key == "doc1"
    store.put(("zoo",), "doc3", {"text": "puppies puppies puppies"}, index=False)
    results = store.search(("zoo",), query="puppies", limit=3)
    assert results[-1].key == "doc3" and results[-1].score is None
    assert all(r.score is not None for r in results[:-1])
    assert [r.key for r in store.search(("zoo",), query="puppies", limit=2)] != ["doc3"]


def test_query_edge_cases(store):
    """Empty, None, long and punctuation-only queries still return the item."""
    store.put(("test",), "doc1", {"text": "test document"})
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        assert len(store.search(("test",), query=query)) == 1


def test_index_fields_and_recall(store, agents_home):
    """Only the configured fields are indexed; the items are found by the agent's recall_memory as kind
    item."""
    indexed = AgentOSStore("finn", index={"fields": ["messages[*].content", "title"]})
    indexed.put(("chats",), "c1", {"title": "Trip planning", "secret_note": "zebra crossing",
                                   "messages": [{"content": "Book the train to Lisbon"},
                                                {"content": "Pack sunscreen"}]})
    hits = indexed.manager.recall_memory("train to Lisbon", kind="item")
    assert hits[0]["content"] == "Book the train to Lisbon" and hits[0]["source"] == "store:chats/c1"
    every = indexed.manager.recall_memory("trip", kind="item", n_results=10, min_score=0)
    assert {h["metadata"]["path"] for h in every} == {"messages[*].content.0", "messages[*].content.1",
                                                      "title"}
    assert every[0]["where"] == {"namespace": ["chats"], "key": "c1", "path": "title"}
    assert not any("zebra" in h["content"]
                   for h in indexed.manager.recall_memory("zebra crossing", kind="item"))
    with pytest.raises(ValidationError, match="cold.embedder"):
        AgentOSStore("finn", index={"dims": 384, "embed": "openai:text-embedding-3-small"})


def test_secrets_are_not_kept(store):
    """A secret fact's value inside an item is redacted in the item and in the cold store, like in a fact of
    another category (only get_fact returns it); one put before the secret was saved is scrubbed then."""
    store.put(("notes",), "early", {"text": "the deploy token will be tok-abcdef-123"})
    store.manager.save_fact("token", "tok-abcdef-123", category="secret")
    store.put(("notes",), "n", {"text": "the deploy token is tok-abcdef-123"})
    assert store.get(("notes",), "n").value["text"] == "the deploy token is [REDACTED]"
    assert store.get(("notes",), "early").value["text"] == "the deploy token will be [REDACTED]"
    hits = store.manager.recall_memory("deploy token", kind="item")
    assert hits and "tok-abcdef-123" not in json.dumps(hits) and "[REDACTED]" in hits[0]["content"]
    assert store.manager.get_fact("token") == "tok-abcdef-123"


def test_async_api(store):
    """aput, aget, asearch, alist_namespaces and adelete behave like their synchronous twins."""
    async def main():
        await store.aput(("a", "b"), "k", {"text": "async apple"})
        item = await store.aget(("a", "b"), "k")
        found = await store.asearch(("a",), query="apple")
        spaces = await store.alist_namespaces(prefix=("a",))
        await store.adelete(("a", "b"), "k")
        return item, found, spaces, await store.aget(("a", "b"), "k")

    item, found, spaces, gone = asyncio.run(main())
    assert (
        item.value == {"text": "async apple"}
        and found[0].key == "k"
        and spaces == [("a", "b")]
        and gone is None
    )
    assert store.batch([ListNamespacesOp(match_conditions=(), limit=10)]) == [[]]


@pytest.mark.slow
def test_langgraph_graph_memories_survive_a_restart(agents_home):
    """A graph writes memories through runtime.store in one process; a second process finds them by
    meaning."""
    env = dict(os.environ)
    write = subprocess.run([sys.executable, "-m", "tests.langgraph_store.graph_child", "write"], cwd=ROOT,
                           env=env,
                           capture_output=True, text=True, timeout=180)
    assert write.returncode == 0, write.stderr
    read = subprocess.run([sys.executable, "-m", "tests.langgraph_store.graph_child", "read"], cwd=ROOT,
                          env=env,
                          capture_output=True, text=True, timeout=180)
    assert read.returncode == 0, read.stderr
    found = json.loads(read.stdout.strip().splitlines()[-1])
    assert found[0]["content"] == "Ada prefers tea over coffee" and found[0]["score"] > 0
    assert len(found) == 2
    assert (agents_home / "finn" / "memory" / "memory.db").is_file()
