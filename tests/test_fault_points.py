"""Named fault points: a process armed for one dies by SIGKILL exactly there, and only there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.durable import fault_points
from core.memory_manager import MemoryManager
from memory_format_checks import parse_log_file

ROOT = Path(__file__).resolve().parent.parent

APPEND_FIVE = """
import threading
from core.memory_manager import MemoryManager

manager = MemoryManager("finn")
worker = threading.Thread(target=lambda: [manager.append_log("THOUGHT", f"thread {i}") for i in range(3)],
                          name="worker")
worker.start()
worker.join()
for i in range(5):
    manager.append_log("THOUGHT", f"entry {i}")
print("finished", flush=True)
"""


def append_five(home: Path, point: str) -> subprocess.CompletedProcess:
    """A process that appends 3 entries from a thread, then 5 from the main thread, armed for ``point``."""
    MemoryManager("finn").close()
    env = dict(os.environ, AGENTOS_HOME=str(home), PYTHONPATH=str(ROOT), AGENTOS_FAULT_POINT=point)
    return subprocess.run([sys.executable, "-c", APPEND_FIVE], env=env, capture_output=True, text=True,
                          timeout=120)


def texts(home: Path) -> list[str]:
    return [e["text"] for e in parse_log_file(home / "finn" / "memory" / "LOG.md") if e["type"] == "THOUGHT"]


def test_a_process_dies_at_the_nth_time_it_reaches_the_point(agents_home: Path) -> None:
    """``log.append@5``: the fifth append of any thread is never written, the four before it are whole."""
    done = append_five(agents_home, "log.append@5")
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert texts(agents_home) == ["thread 0", "thread 1", "thread 2", "entry 0"]


def test_a_thread_prefix_counts_only_that_threads_points(agents_home: Path) -> None:
    """``main:log.appended@2``: the kill follows the main thread's second line, flushed; the other thread's
    lines are not counted."""
    done = append_five(agents_home, "main:log.appended@2")
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert texts(agents_home) == ["thread 0", "thread 1", "thread 2", "entry 0", "entry 1"]
    with MemoryManager("finn") as manager:  # the killed append's index row is caught up from LOG.md
        assert manager.db.conn.execute("SELECT count(*) FROM log_metadata WHERE entry_type = "
                                       "'THOUGHT'").fetchone()[0] == 5


def test_a_thread_name_prefix_counts_that_threads_points(agents_home: Path) -> None:
    """``worker:log.append@2``: the worker thread's second append is never written; the main thread's never
    ran."""
    done = append_five(agents_home, "worker:log.append@2")
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert texts(agents_home) == ["thread 0"]


def test_a_point_never_reached_kills_nothing_and_counts_every_point(agents_home: Path) -> None:
    """Armed for a point the run does not reach, the process finishes; ``reached()`` counts the points."""
    done = append_five(agents_home, "no.such.point")
    assert done.returncode == 0 and "finished" in done.stdout, done.stderr[-2000:]
    fault_points.arm("no.such.point")  # the test's own process: a point it reaches would kill it
    try:
        with MemoryManager("finn") as manager:
            manager.append_log("THOUGHT", "one more")
        counts = fault_points.reached()
    finally:
        fault_points.arm(None)
    assert counts["log.append"] == counts["log.appended"] == 1 and counts["*"] >= 2
    assert fault_points.reached() == {}


def test_arming_for_the_zeroth_time_is_refused() -> None:
    with pytest.raises(ValueError, match="1st time or later"):
        fault_points.arm("log.append", 0)
