"""An agent that has been used (requests run by the engine, a fact saved, several topics): forgetting by query
takes only what was named, with why, and recall shows each request once, with its other records."""

from __future__ import annotations

import json
import re

import pytest

from core.commands import main as agentos_main
from core.memory_manager import MemoryManager
from tests.engine.conftest import run_cli
from tests.inprocess import Ran, run_main

TASKS = ("remember that my deploy target is fly.io", "what is my deploy target",
         "explain asyncio task groups to me",
         *(f"summarize topic number {n}" for n in (1, 2, 3, 4, 5, 6, 13, 30)))


def agentos(*args: str, stdin: str = "") -> Ran:
    return run_main(agentos_main, args, stdin=stdin)


def used(agent: str = "finn") -> None:
    """Run every task of TASKS with the offline backend, as a user of ``agentos run`` would."""
    for task in TASKS:
        ran = run_cli("--agent", agent, "--offline", task)
        assert ran.returncode in (0, 3), ran.stderr  # 3: blocked, the offline backend cannot do open tasks


def texts_of(ids: list[str]) -> dict[str, str]:
    with MemoryManager("finn") as manager:
        return {doc_id: doc.text for doc_id, doc in manager.cold.docs.get(ids).items()}


def forget_entries() -> list:
    with MemoryManager("finn") as manager:
        return [e for e in manager.scan_log().entries if e.type == "FORGET"]


@pytest.fixture
def finn_used_with_minilm(minilm):
    """finn after TASKS, recalling with the real model (meaning as a user's agent sees it), every vector done
    (as for a user who forgets later)."""
    used()
    with MemoryManager("finn") as manager:
        manager.cold.catch_up()


def test_forget_asyncio_lists_only_the_memories_that_say_it_and_why(finn_used_with_minilm):
    """`forget --query asyncio --dry-run` lists the request about asyncio and its records, each with the word
    it says, and nothing about the deploy target (close in vectors as it may be); nothing is forgotten."""
    with MemoryManager("finn") as manager:
        planned = manager.forget_memories(query="asyncio", dry_run=True)
    assert planned and all("asyncio" in text.lower() for text in texts_of(planned).values())
    ran = agentos("forget", "--agent", "finn", "--query", "asyncio", "--dry-run", "--json")
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    taken = [i for entry in found["matched"] for i in (entry["id"], *entry["also"])]
    assert found["dry_run"] and found["forgotten"] == [] and found["count"] == 0
    assert taken and all("asyncio" in text.lower() for text in texts_of(taken).values())
    assert all(entry["why"] == {"words": ["asyncio"]} for entry in found["matched"])
    assert not any("fly.io" in text for text in texts_of(taken).values())
    assert forget_entries() == []
    shown = agentos("forget", "--agent", "finn", "--query", "asyncio", "--dry-run")
    assert shown.stdout.startswith(f"{len(taken)} memories would be forgotten (dry run: nothing is):")
    assert "says: asyncio" in shown.stdout and "also recorded as" in shown.stdout


def test_forget_topic_number_3_takes_only_topic_number_3_and_lists_it_with_yes(finn_used_with_minilm):
    """`forget --query "topic number 3" --yes` forgets the records that say all three words (not the other
    topics, which share two of them) and prints what it forgot, with why."""
    with MemoryManager("finn") as manager:
        manager.cold.sync()
        every = {doc_id: doc.text for doc_id, doc in manager.cold.docs.get(manager.cold.docs.ids()).items()}
    meant = {i for i, text in every.items() if re.search(r"\btopic number 3\b", text)}
    ran = agentos("forget", "--agent", "finn", "--query", "topic number 3", "--yes")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"forgot {len(meant)} memories:") and "says: topic, number, 3" in ran.stdout
    assert set(re.findall(r"\b(?:log|msg):\d+", ran.stdout)) == meant and 2 <= len(meant) <= 6
    assert {i for e in forget_entries() for i in e.metadata["ids"]} == meant
    with MemoryManager("finn") as manager:
        left = manager.recall_memory("summarize topic number 4", 3)
        assert left and "topic number 4" in left[0]["content"]
        assert not any(hit["id"] in meant for hit in manager.recall_memory("topic number 3", 20, min_score=0))


def test_declining_or_a_dry_run_forgets_nothing_and_is_no_error(agents_home):
    """Answering no prints 'nothing forgotten' and exits 0; --dry-run lists and exits 0; neither writes
    FORGET. A query of common words alone names nothing: a usage error that says what to give."""
    used()
    declined = agentos("forget", "--agent", "finn", "--query", "deploy target", stdin="n\n")
    assert declined.returncode == 0 and declined.stdout == "nothing forgotten\n"
    assert "will be forgotten:" in declined.stderr and "says: deploy, target" in declined.stderr
    assert "Forget them? [y/N]" in declined.stderr
    assert agentos("forget", "--agent", "finn", "--query", "deploy target", "--dry-run").returncode == 0
    said_no = json.loads(agentos("forget", "--agent", "finn", "--query", "deploy target", "--json",
                                 stdin="no\n").stdout)
    assert (
        said_no["forgotten"] == []
        and not said_no["confirmed"]
        and said_no["matched"]
        and "dry_run" not in said_no
    )
    assert json.loads(agentos("forget", "--agent", "finn", "--query", "zebra", "--json").stdout) == {
        "forgotten": [], "count": 0, "matched": [], "more": 0}
    assert forget_entries() == []
    common = agentos("forget", "--agent", "finn", "--query", "what is it")
    assert common.returncode == 2 and "only common words" in common.stderr and forget_entries() == []
    alone = agentos("forget", "--agent", "finn", "--meaning-above", "0.5")
    assert alone.returncode == 2 and "--meaning-above goes with --query" in alone.stderr


def test_forget_by_meaning_takes_what_is_closer_than_asked_and_shows_the_similarity(finn_used_with_minilm):
    """--meaning-above X takes the memories whose similarity to the query is above X, each with it."""
    ran = agentos("forget", "--agent", "finn", "--query", "where do my deployments go", "--meaning-above",
                  "0.4",
                  "--dry-run", "--json")
    assert ran.returncode == 0, ran.stderr
    matched = json.loads(ran.stdout)["matched"]
    assert matched and all(entry["why"]["meaning"] > 0.4 for entry in matched)
    assert any("deploy target" in entry["content"] for entry in matched)
    assert not any("topic number" in entry["content"] for entry in matched)


def test_recall_and_the_week_show_each_request_once_and_keep_every_record(agents_home):
    """`recall "what is my deploy target"` returns the request once (its RUN_START, USER_FEEDBACK and message
    are one hit that lists the others); `--since "last week"` lists no request twice, and the listed ids with
    their ``also`` are every record of the week; LOG.md still holds each entry."""
    used()
    ran = agentos("recall", "--agent", "finn", "what is my deploy target", "-n", "3", "--json")
    hits = json.loads(ran.stdout)
    said = [" ".join(h["content"].lower().removeprefix("response: ").split()) for h in hits]
    assert len(said) == len(set(said)), said
    asked = next(h for h in hits if h["content"] == "what is my deploy target")
    assert len(asked["also"]) == 2
    week = json.loads(agentos("recall", "--agent", "finn", "--since", "last week", "-n", "100",
                              "--json").stdout)
    said = [" ".join(h["content"].lower().removeprefix("response: ").split()) for h in week]
    assert len(said) == len(set(said)), said
    listed = [i for h in week for i in (h["id"], *h.get("also", []))]
    with MemoryManager("finn") as manager:
        assert sorted(listed) == sorted(manager.cold.docs.ids())
        types = [e.type for e in manager.scan_log().entries]
    assert types.count("RUN_START") == types.count("USER_FEEDBACK") == len(TASKS)
    explained = agentos("recall", "--agent", "finn", "what is my deploy target", "-n", "3",
                        "--explain").stdout
    assert (
        f"(also recorded as {', '.join(asked['also'])})" in explained
        and f"repeats {asked['id']}" in explained
    )
