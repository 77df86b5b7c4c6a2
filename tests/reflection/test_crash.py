"""SIGKILL during reflection, at named fault points (never after a sleep): no entry skipped, no fact lost or
doubled, every learned fact with its provenance, once the agent is opened again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_home_config
from tests.reflection.conftest import MODEL, reflect_config
from tests.reflection.corpus import conversation

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import sys
sys.path.insert(0, {root!r})
from core.llm.ollama_backend import OllamaBackend
from core.durable import fault_points
from core.memory_manager import MemoryManager
manager = MemoryManager("finn")
backend = OllamaBackend({model!r}, {host!r}, timeout_s=10.0, num_ctx=4096)
fault_points.arm({point!r}, {nth}, thread={thread!r})
print("ready", flush=True)
manager.reflection.{call}
print("finished without reaching", {point!r}, flush=True)
"""
POINTS = [
    ("reflect.commit", 2, "main"),   # the second batch's reply checked, nothing of it written
    ("log.append", 3, "main"),       # a FACT line about to be written (the second batch's first)
    ("log.appended", 1, "main"),     # a FACT line on disk, its transaction not committed
    ("log.appended", 4, "main"),
    ("db.commit", 1, "main"),        # the first batch's transaction about to commit
    ("db.commit", 3, "main"),
]
"""Where the explicit pass is killed: points of the main thread, counted from the pass's start."""


def kill_child(home: Path, host: str, point: str, nth: int, thread: str, call: str = "run(backend)") -> str:
    """Run the pass in a child that SIGKILLs itself at ``point`` (its ``nth`` time); return what it
    printed."""
    code = CHILD.format(root=str(ROOT), model=MODEL, host=host, point=point, nth=nth, thread=thread,
                        call=call)
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "AGENTOS_HOME": str(home)})
    assert child.returncode == -signal.SIGKILL, (child.returncode, child.stdout, child.stderr[-2000:])
    return child.stdout


def fact_entries(manager) -> dict[str, int]:
    """How many FACT entries LOG.md holds for each key."""
    counts: dict[str, int] = {}
    for entry in manager.read_log(10_000):
        if entry["type"] == "FACT":
            key = entry["metadata"]["fact"]["key"]
            counts[key] = counts.get(key, 0) + 1
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("point, nth, thread", POINTS)
def test_a_pass_killed_at_any_step_loses_and_doubles_nothing(agents_home, server, backend, point, nth,
                                                             thread):
    """Killed mid-pass, then opened and reflected again: every stated fact learned once, with its sources,
    model and prompt; nothing quarantined; nothing left to read."""
    from core.memory_manager import MemoryManager

    write_home_config(agents_home, reflect_config(batch_entries=4))
    turns, stated = conversation(16, seed=5, facts=8)
    with MemoryManager("finn") as manager:
        for text in turns:
            manager.append_log("USER_FEEDBACK", text)
    assert "ready" in kill_child(agents_home, server.host, point, nth, thread)
    with MemoryManager("finn") as manager:
        manager.reflection.run(backend)
        learned = {f["key"]: f for f in manager.list_facts() if f["extracted"] is not None}
        assert {s.key: s.value for s in stated} == {k: f["value"] for k, f in learned.items()}
        assert all(f["sources"] and f["extracted"]["prompt"] == "reflect v1" for f in learned.values())
        assert fact_entries(manager) == {s.key: 1 for s in stated}, "a fact is saved once"
        status = manager.reflection.status()
        assert status["lag"]["total"] == 0 and status["quarantined"] == []


@pytest.mark.slow
def test_a_background_pass_killed_mid_commit_is_finished_by_the_next(agents_home, server, backend):
    """The background thread killed with a FACT line on disk: the next open applies it with its provenance and
    the next pass reads the rest."""
    from core.memory_manager import MemoryManager

    write_home_config(agents_home, reflect_config(batch_entries=4))
    turns, stated = conversation(12, seed=8, facts=6)
    with MemoryManager("finn") as manager:
        for text in turns:
            manager.append_log("USER_FEEDBACK", text)
    call = "wake(backend); import time; time.sleep(300)"
    kill_child(agents_home, server.host, "log.appended", 2, "agentos-reflect", call=call)
    with MemoryManager("finn") as manager:
        first = {f["key"] for f in manager.list_facts() if f["extracted"] is not None}
        assert first, "the FACT lines written before the kill are applied at open, with their provenance"
        manager.reflection.run(backend)
        learned = {f["key"]: f["value"] for f in manager.list_facts() if f["extracted"] is not None}
        assert learned == {s.key: s.value for s in stated}
        assert fact_entries(manager) == {s.key: 1 for s in stated}
