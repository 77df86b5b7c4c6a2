"""SIGKILL of a compacting process at fault points drawn at random: nothing lost, nothing doubled, restart
finishes."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core.memory.files.log_file import scan_bytes
from core.memory.recall.sources import log_doc
from core.memory_manager import MemoryManager
from tests.cold.conftest import write_config
from tests.cold.helpers import assert_each_seq_once

CHILD = Path(__file__).with_name("crash_child.py")
TRIALS = 14
POINTS = ("log.append", "log.appended", "file.replace", "file.replaced", "db.commit", "cold.write",
          "cold.written")
"""The steps a compaction loop reaches (see core.durable.fault_points): a LOG.md line, a staged archive or
LOG.md taking its place, a memory.db commit (reservation, history, index), a vector written to LanceDB."""


def kill_at_a_fault_point(rng: random.Random) -> str:
    """Run the child until it dies at a fault point drawn from ``POINTS`` (its 1st to 12th time); return
    it."""
    point, nth = rng.choice(POINTS), rng.randint(1, 12)
    child = subprocess.Popen([sys.executable, str(CHILD), point, str(nth)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        assert child.wait(timeout=300) == -signal.SIGKILL, f"the child did not die at {point}@{nth}"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return f"{point}@{nth}"


def check_consistent(manager: MemoryManager) -> None:
    assert_each_seq_once(manager.paths.memory_dir, manager.log.last_seq())
    archives = {p.stem for p in manager.paths.archive_dir.glob("LOG-*.md")}
    rows = manager.db.conn.execute(
        "SELECT archive_id, indexed_at, summary FROM compaction_history"
    ).fetchall()
    assert {r["archive_id"] for r in rows} == archives, "every archive has exactly its history row"
    assert all(r["indexed_at"] for r in rows), "restart finished indexing"
    manager.cold.catch_up()
    ids = manager.cold.store().ids()
    assert len(ids) == len(set(ids)), "no duplicate vectors"
    docs = manager.cold.docs.get(manager.cold.docs.ids())
    assert set(ids) == set(docs), "every memory has exactly one vector"
    for archive in archives:
        path = manager.paths.archive_dir / f"{archive}.md"
        entries = scan_bytes(path.read_bytes(), archive).entries
        expected = {f"log:{e.seq}" for e in entries if log_doc(e, []) is not None} | {f"summary:{archive}"}
        assert expected <= set(docs), "every archived entry and the summary are recalled"
        assert all(docs[i].kind == "log_archive" for i in expected if i.startswith("log:"))
    assert not list(manager.paths.memory_dir.glob(".LOG.md.*.tmp"))
    assert not list(manager.paths.archive_dir.glob(".*.tmp"))


def interrupted_state(memory: Path) -> list[str]:
    """What the killed run left undone after its swap, read straight from the files and memory.db."""
    conn = sqlite3.connect(memory / "memory.db")
    try:
        rows = conn.execute("SELECT archive_id, indexed_at FROM compaction_history").fetchall()
    finally:
        conn.close()
    states = ["unindexed"] if any(indexed is None for _, indexed in rows) else []
    if {p.stem for p in (memory / "archive").glob("LOG-*.md")} - {a for a, _ in rows}:
        states.append("unrecorded")
    return states


@pytest.mark.slow
def test_sigkill_during_compaction_loses_and_doubles_nothing(ollama_home):
    """After each SIGKILL, a restart finishes the interrupted step and every invariant holds."""
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"auto_compact": False}})
    rng = random.Random(int(os.environ.get("CRASH_SEED", "3")))
    outcomes = {"resumed": 0, "unindexed": 0, "unrecorded": 0, "orphan tmp": 0}
    kills = []
    for _ in range(TRIALS):
        kills.append(kill_at_a_fault_point(rng))
        memory = ollama_home / "finn" / "memory"
        outcomes["orphan tmp"] += bool(list(memory.glob(".LOG.md.*.tmp"))
                                       + list(memory.glob("archive/.*.tmp")))
        for state in interrupted_state(memory):
            outcomes[state] += 1
        with MemoryManager("finn") as manager:
            assert manager.compaction.wait(timeout=60)
            report = manager.compact_log(force=False)  # resumes a reserved compaction, else indexes leftovers
            outcomes["resumed"] += report.resumed
            check_consistent(manager)
    print(f"crash outcomes over {TRIALS} kills ({', '.join(kills)}): {outcomes}")
    with MemoryManager("finn") as manager:
        assert manager.db.conn.execute("SELECT count(*) FROM compaction_history").fetchone()[0] >= TRIALS // 2
