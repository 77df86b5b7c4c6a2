"""Recall from the inspector: the agent's own hybrid search, through a cold store opened read-only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import ColdStoreError
from core.llm.embedding.embedders import MiniLMEmbedder
from core.memory.recall.store import ColdStore, VectorRow
from core.memory_manager import MemoryManager
from tests.inspector.test_api import get, get_json, tree_digest

ROOT = Path(__file__).resolve().parents[2]


def stamps(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def test_recall_ranks_results_with_tier_kind_and_score_and_writes_nothing(agents_home, storage_backend,
                                                                          serve):
    """The recall box returns the agent's hybrid-search results best first, each with kind, source and
    score, masks secrets, and leaves memory.db (if the agent has one) and the LanceDB folder as they were."""
    with MemoryManager("ada", agents_home) as mm:
        mm.store_memory("The weekly report goes to Maria on Fridays")
        mm.store_memory("Exit code 137 means the container was killed for using too much memory")
        mm.store_memory("The deploy token is tok-9f8e7d")  # before it was known to be a secret
        mm.save_fact("preferred_currency", "USD", category="preference")
        mm.save_fact("token", "tok-9f8e7d", category="secret")
        mm.append_log("THOUGHT", "The portfolio tool step 17 loaded prices.csv")
        mm.compact_log("Loaded prices for the portfolio")
        mm.recall_memory("warm up", 1)  # indexes what is pending, as any recall of the agent does
        mm.save_fact("home_city", "Lisbon", category="personal")  # queued for the cold store, not indexed
    url = serve()
    memory = agents_home / "ada" / "memory"
    before_db, before_lance = tree_digest(memory).get("memory.db"), stamps(memory / "lancedb")
    answer = get_json(url, "/api/agents/ada/recall?q=who+receives+the+report%3F")
    hits = answer["results"]
    assert hits[0]["content"] == "The weekly report goes to Maria on Fridays" and hits[0]["kind"] == "note"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert all(h["source"] and h["created_at"] for h in hits)
    facts = get_json(url, "/api/agents/ada/recall?q=currency&kind=fact")["results"]
    assert facts[0]["content"] == "preferred_currency: USD" and {h["kind"] for h in facts} == {"fact"}
    # The last fact waits unless the agent indexed it before closing; a reader never indexes it.
    assert answer["pending_cold_items"] in (0, 1)
    assert get_json(url,
                    "/api/agents/ada/recall?q=report")["pending_cold_items"] == answer["pending_cold_items"]
    token = get_json(url, "/api/agents/ada/recall?q=deploy+token")["results"]
    assert token[0]["content"] == "The deploy token is [REDACTED]"
    assert tree_digest(memory).get("memory.db") == before_db and stamps(memory / "lancedb") == before_lance
    assert get(url, "/api/agents/ada/recall?q=")[0] == 400
    assert get(url, "/api/agents/ada/recall?q=x&kind=secret")[0] == 400


def test_recall_of_an_agent_without_cold_store_matches_words_and_says_so(agents_home, serve, monkeypatch):
    """An agent whose cold store does not exist yet is searched by words, with a note; nothing is created."""
    # no vectors yet
    monkeypatch.setattr("core.memory.recall.vector_indexer.BackgroundIndexer.wake", lambda self: None)
    with MemoryManager("bo", agents_home) as mm:
        mm.append_log("THOUGHT", "just started the quarterly tax report")
        mm.cold.sync()  # the entry is a recall doc, searchable by words; no vector is computed
    assert not (agents_home / "bo" / "memory" / "lancedb").exists()
    answer = get_json(serve(), "/api/agents/bo/recall?q=quarterly+tax+report")
    assert [h["content"] for h in answer["results"]] == ["just started the quarterly tax report"]
    assert "no cold store" in answer["note"] and answer["pending_vectors"] == 1
    assert get_json(serve(), "/api/agents/bo/recall?q=zzzz+qqqq")["results"] == []
    assert not (agents_home / "bo" / "memory" / "lancedb").exists()


@pytest.mark.bare_home
def test_a_read_only_cold_store_refuses_writes_and_creates_nothing(tmp_path):
    """ColdStore(read_only=True) opens no missing table, takes no lock and refuses upserts and optimize."""
    missing = ColdStore(tmp_path / "none", MiniLMEmbedder(), tmp_path / ".cold.lock", reindex_hint="-",
                        read_only=True)
    with pytest.raises(ColdStoreError, match="no cold store"):
        missing.count()
    assert os.listdir(tmp_path) == []
    writer = ColdStore(tmp_path / "db", MiniLMEmbedder(), tmp_path / ".cold.lock", reindex_hint="-")
    writer.put([VectorRow("note:1", "note", "hello there", "note:1", "2026-01-01T00:00:00.000Z")])
    writer.close()
    before = stamps(tmp_path)
    reader = ColdStore(tmp_path / "db", MiniLMEmbedder(), tmp_path / ".cold.lock", reindex_hint="-",
                       read_only=True)
    assert [h["text"] for h in reader.nearest(reader.embedder.embed(["hello"])[0], 1)] == ["hello there"]
    with pytest.raises(ColdStoreError, match="read-only"):
        reader.put([VectorRow("note:2", "note", "bye", "note:2", "2026-01-01T00:00:00.000Z")])
    with pytest.raises(ColdStoreError, match="read-only"):
        reader.optimize()
    reader.close()
    assert stamps(tmp_path) == before


def test_an_explained_recall_says_why_and_what_it_left_out(agents_home, storage_backend, serve):
    """explain=1 gives each result its evidence (words matched, vector similarity, kind, score) and left_out;
    without it the answer has neither."""
    with MemoryManager("ada", agents_home) as mm:
        first = mm.store_memory("The weekly report goes to Maria on Fridays", {"key": "report"},
                                occurred_at="2023-01-01")
        mm.store_memory("The weekly report goes to Ada on Mondays", {"key": "report"},
                        occurred_at="2023-06-01")
        # the same day: one memory
        mm.store_memory("The weekly report goes to Ada on Mondays!", occurred_at="2023-06-01")
        mm.recall_memory("warm up", 1)
    url = serve()
    answer = get_json(url, "/api/agents/ada/recall?q=who+receives+the+weekly+report%3F&explain=1")
    top = answer["results"][0]
    assert (
        "report" in top["why"]["words"]
        and top["why"]["kind"] == "note"
        and top["why"]["score"] == top["score"]
    )
    assert top["why"]["vector"] is not None
    assert answer["left_out"]["duplicate"]["count"] == 1
    earlier = next(h for h in answer["results"] if h["id"] == first)
    assert earlier["superseded_by"]["occurred_at"] == "2023-06-01T00:00:00.000Z"
    plain = get_json(url, "/api/agents/ada/recall?q=who+receives+the+weekly+report%3F")
    assert "left_out" not in plain and all("why" not in h for h in plain["results"])
    assert get(url, "/api/agents/ada/recall?q=report&explain=2")[0] == 400


def test_a_forgotten_memory_whose_vector_is_still_stored_is_reported_by_id(agents_home, serve):
    """A process killed after a forget committed but before its vector was deleted leaves the vector behind:
    an explained recall that meets it counts it as forgotten and shows its id, never its text."""
    script = (
        "from core.durable import fault_points\n"
        "from core.memory_manager import MemoryManager\n"
        "with MemoryManager('ada') as mm:\n"
        "    note = mm.store_memory('The alarm code for the garage is kept by Maria')\n"
        "    mm.cold.catch_up()\n"
        "    print(note, flush=True)\n"
        "    fault_points.arm('cold.write', thread='main')\n"
        "    mm.forget_memory(note)\n"
    )
    child = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                           timeout=300,
                           env=dict(os.environ))
    assert child.returncode == -signal.SIGKILL, child.stderr
    note = child.stdout.strip()
    answer = get_json(serve(), "/api/agents/ada/recall?q=garage+alarm+code+Maria&explain=1")
    assert answer["results"] == []
    assert answer["left_out"]["forgotten"] == {"count": 1, "examples": [{"id": note}]}
    assert "alarm" not in json.dumps(answer["left_out"])


def test_an_agent_an_earlier_version_wrote_is_not_recalled_until_it_is_upgraded(agents_home, serve):
    """A memory.db without the newest recall migration is read as it is (the inspector never migrates): the
    recall box says to open the agent once instead of failing."""
    from core.paths import AgentPaths
    from tests.old_databases import memory_db_before

    conn = memory_db_before(AgentPaths.for_agent("ada").db_file, "m010")
    conn.close()
    answer = get_json(serve(), "/api/agents/ada/recall?q=report")
    assert answer["results"] == [] and "open the agent once" in answer["note"]
