"""AgentOSStore's items are recall memories: found by words at once, deleted and forgotten everywhere."""

from __future__ import annotations

import pytest

from core.langgraph_store import AgentOSStore
from core.memory.upkeep.rebuild import rebuild_all
from tests.cold.conftest import write_config


@pytest.fixture
def store(agents_home, minilm):
    """A store on agent finn indexing the ``text`` field, with the real embedding model."""
    write_config(agents_home, {"llm": {"backend": "offline"}, "memory": {"auto_compact": False}})
    return AgentOSStore("finn", index={"fields": ["text"]})


def item_docs(store: AgentOSStore) -> list[str]:
    return [row[0] for row in store.manager.db.conn.execute("SELECT id FROM recall_docs WHERE kind = 'item'")]


def vectors(store: AgentOSStore) -> list[str]:
    return [i for i in store.manager.cold.store().ids() if i.startswith("item:")]


def test_an_item_is_searchable_by_words_while_the_embedder_is_down(agents_home):
    """With no embedder answering, a put item is found by its words at once, with a score; nothing is lost."""
    write_config(agents_home, {"cold": {"embedder": "ollama:fake-embed", "vector_wait_s": 0.2},
                               "llm": {"backend": "offline"}})  # OLLAMA_HOST points at a closed port
    store = AgentOSStore("finn")
    store.put(("zoo",), "z", {"text": "a zany zebra named Xerxes"})
    store.put(("zoo",), "d", {"text": "something about dogs"})
    found = store.search(("zoo",), query="Xerxes the zebra")
    assert found[0].key == "z" and found[0].score > 0 and found[1].score is None
    assert store.manager.cold.docs.pending_count() == 2  # their vectors wait for the embedder


def test_deleting_or_shrinking_an_item_removes_its_passages_from_recall_and_lancedb(store):
    """A deleted item's docs and vectors are gone; an item rewritten with fewer passages keeps only those."""
    store.put(("notes",), "trip",
              {"text": ["Book the train to Lisbon", "Pack sunscreen", "Renew the passport"]},
              index=["text[*]"])
    store.put(("notes",), "cat", {"text": "Pixel the cat likes tuna"})
    store.manager.cold.catch_up()
    assert len(item_docs(store)) == 4 and sorted(vectors(store)) == sorted(item_docs(store))
    store.put(("notes",), "trip", {"text": ["Book the train to Porto"]}, index=["text[*]"])
    store.delete(("notes",), "cat")
    store.manager.cold.catch_up()
    assert len(item_docs(store)) == 1 and sorted(vectors(store)) == item_docs(store)
    hits = store.manager.recall_memory("cat tuna sunscreen passport", 10, kind="item", min_score=0)
    assert [h["content"] for h in hits] == ["Book the train to Porto"]


def test_forgetting_an_item_deletes_it_and_survives_rebuild(store):
    """forget_memory on an item's passage deletes the item (FORGET logged without its text); rebuild_index
    does not bring it back; the same key written again afterwards is a new memory."""
    store.put(("people",), "ada", {"text": "Ada lives at 12 Elm Street"})
    hit = store.manager.recall_memory("where does Ada live?", 1, kind="item")[0]
    assert store.manager.forget_memory(hit["id"])
    assert store.get(("people",), "ada") is None and store.search(("people",), query="Elm Street") == []
    forget = [e for e in store.manager.scan_log().entries if e.type == "FORGET"]
    assert len(forget) == 1 and "Elm" not in forget[0].content + str(forget[0].metadata)
    rebuild_all(store.manager.tiers)
    assert store.get(("people",), "ada") is None and item_docs(store) == []
    store.put(("people",), "ada", {"text": "Ada moved to Porto"})
    rebuild_all(store.manager.tiers)
    assert store.search(("people",), query="where does Ada live?")[0].value == {"text": "Ada moved to Porto"}


def test_rebuild_index_reindexes_items(store):
    """rebuild_all recreates the docs and vectors of every item from store_items."""
    for i in range(3):
        store.put(("docs",), f"d{i}", {"text": f"document number {i} about compilers"})
    before = sorted(item_docs(store))
    result = rebuild_all(store.manager.tiers)
    assert sorted(item_docs(store)) == before and sorted(vectors(store)) == before and result.memories >= 3
    assert store.search(("docs",), query="compilers", limit=3)[0].score > 0.5
