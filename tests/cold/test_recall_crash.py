"""SIGKILL during background indexing (at its fault points), and a clean exit while it runs: nothing missing,
nothing doubled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.memory.recall.lance_table import chunk_id, piece_texts
from core.memory_manager import MemoryManager
from tests.cold.conftest import write_config

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import sys
sys.path.insert(0, {root!r})
from core.durable import fault_points
from core.memory_manager import MemoryManager
manager = MemoryManager("finn")
manager.cold.store().table
# the background indexer's steps from now on, once it has finished the notes of the rounds before
if {point!r}:
    assert manager.cold.background.wait_idle(120)
    fault_points.arm({point!r}, thread="agentos-recall")
manager.store_memories([f"round {round} note {{i}} about ticker T{{i % 13}}"
                         + (". The desk wants it by Friday." if i % 2 else "") for i in range(300)])
print("stored", flush=True)
if {point!r}:
    manager.cold.background.wait_idle(120)
    print("indexed without reaching", {point!r}, flush=True)
"""
KILL_POINTS = ("cold.write", "cold.written", "db.commit")
"""Where background indexing is killed: before its first LanceDB write, after it, and at its first commit to
memory.db (the points of the background indexer's thread only)."""


def run_child(round_no: int, point: str = "") -> subprocess.Popen:
    """A process that stores 300 notes; with ``point`` it dies there, else it exits at once."""
    code = CHILD.format(root=str(ROOT), round=round_no, point=point)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env=os.environ.copy())


@pytest.mark.slow
def test_sigkill_during_background_indexing_then_the_index_catches_up(ollama_home):
    """After SIGKILLs while vectors are computed, a restart indexes every memory exactly once, and every
    sentence of the notes of two sentences once."""
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"}})
    for round_no, point in enumerate(KILL_POINTS):
        child = run_child(round_no, point)
        try:
            assert child.wait(timeout=300) == -signal.SIGKILL, child.stdout.read()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    with MemoryManager("finn") as manager:
        assert manager.cold.background.wait_idle(120)
        ids = manager.cold.store().ids()
        assert len(ids) == len(set(ids)) == 900, "every memory has one vector, none doubled"
        assert set(ids) == set(manager.cold.docs.ids())
        docs = manager.cold.docs.get(ids)
        pieces = manager.cold.store().chunk_ids()
        assert len(pieces) == len(set(pieces)) == 2 * 450
        assert set(pieces) == {chunk_id(i, n) for i in ids for n in range(1,
                                                                          len(piece_texts(docs[i].text)) + 1)}
        assert manager.recall_memory("round 2 note 8 about ticker T8",
                                     1)[0]["content"] == "round 2 note 8 about ticker T8"


@pytest.mark.slow
def test_a_process_exits_cleanly_while_background_indexing_runs(ollama_home):
    """A process that stores and exits at once ends with status 0; the next open finishes the vectors."""
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"}})
    child = run_child(0)
    assert child.stdout.readline().strip() == "stored"
    assert child.wait(timeout=90) == 0
    with MemoryManager("finn") as manager:
        assert manager.cold.background.wait_idle(120)
        assert sorted(manager.cold.store().ids()) == sorted(manager.cold.docs.ids())
        assert manager.cold.docs.count() == 300
