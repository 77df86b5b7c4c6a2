"""Processes and threads sharing one agent: appends and NOW writes are serialised (issue item 4)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.memory_manager import MemoryManager
from memory_format_checks import parse_log_file, parse_now_file

ROOT = Path(__file__).resolve().parent.parent

WORKER = """
import os, sys, time
from pathlib import Path
from core.memory_manager import MemoryManager

mode, writer, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
manager = MemoryManager("finn")
(go.parent / f"ready-{writer}").touch()
while not go.exists():  # start together, so the writers really contend
    time.sleep(0.001)
for i in range(count):
    if mode == "append":
        manager.append_log("TOOL_USE", f"writer {writer} call {i}", {"writer": writer, "i": i})
    else:
        manager.update_now("active", [f"writer {writer} step {i}"], objective=f"w{writer}-{i}")
manager.close()
"""


@pytest.fixture(autouse=True)
def whole_log(agents_home: Path) -> None:
    """These tests count every line of LOG.md: keep it from being compacted into archives."""
    agents_home.mkdir(parents=True, exist_ok=True)
    (agents_home / "config.yaml").write_text("memory:\n  auto_compact: false\n")


def run_workers(home: Path, tmp_path: Path, mode: str, writers: int, count: int,
                while_running=None) -> None:
    """Start ``writers`` fresh processes that each do ``count`` writes at once; wait for all."""
    MemoryManager("finn").close()  # create the files first, so the workers only contend on writes
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    go = tmp_path / "go"
    env = dict(os.environ, AGENTOS_HOME=str(home), PYTHONPATH=str(ROOT))
    procs = [
        subprocess.Popen([sys.executable, str(script), mode, str(w), str(count), str(go)], env=env,
                         stderr=subprocess.PIPE, text=True)
        for w in range(writers)
    ]
    deadline = time.monotonic() + 300  # a hang guard: on a busy machine interpreters take long to start
    while not all((tmp_path / f"ready-{w}").exists() for w in range(writers)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a writer did not start"
        time.sleep(0.01)
    go.touch()
    if while_running:
        while_running(procs)
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err


@pytest.mark.slow
def test_four_processes_append_1000_whole_lines(agents_home: Path, tmp_path: Path) -> None:
    """4 processes x 250 appends give 1000 CRC-valid lines, seqs 1..1000, each writer's lines in order."""
    run_workers(agents_home, tmp_path, "append", writers=4, count=250)
    entries = parse_log_file(agents_home / "finn" / "memory" / "LOG.md")  # every line parses
    assert [e["seq"] for e in entries] == list(range(1, 1001))
    for writer in range(4):
        mine = [e["meta"]["i"] for e in entries if e["meta"]["writer"] == writer]
        assert mine == list(range(250))
    with MemoryManager("finn") as manager:
        rows = manager.db.conn.execute("SELECT count(*), min(id), max(id) FROM log_metadata").fetchone()
        assert tuple(rows) == (1000, 1, 1000)


def test_threads_of_one_process_append_whole_lines(manager: MemoryManager) -> None:
    """Threads sharing a MemoryManager, and threads with their own, never interleave or reuse a seq."""
    def shared(t: int) -> None:
        for i in range(40):
            manager.append_log("THOUGHT", f"shared {t} {i}", {"t": t, "i": i})

    def own(t: int) -> None:
        with MemoryManager("finn") as mine:
            for i in range(40):
                mine.append_log("THOUGHT", f"own {t} {i}", {"t": t, "i": i})

    threads = [threading.Thread(target=fn, args=(t,)) for t, fn in enumerate([shared] * 3 + [own] * 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    entries = parse_log_file(manager.paths.log_file)
    assert [e["seq"] for e in entries] == list(range(1, 241))
    for t in range(6):
        assert [e["meta"]["i"] for e in entries if e["meta"]["t"] == t] == list(range(40))


@pytest.mark.slow
def test_concurrent_now_updates_keep_versions_strictly_increasing(agents_home: Path, tmp_path: Path) -> None:
    """Processes racing on update_now: NOW.md always parses, versions only grow, none is lost."""
    now_path = agents_home / "finn" / "memory" / "NOW.md"
    seen: list[int] = []

    def watch(procs) -> None:
        while any(p.poll() is None for p in procs):
            seen.append(parse_now_file(now_path)[0]["version"])  # a torn file would fail here

    run_workers(agents_home, tmp_path, "now", writers=3, count=40, while_running=watch)
    front, _ = parse_now_file(now_path)
    assert front["version"] == 120
    assert seen == sorted(seen) and len(seen) > 1
    entries = parse_log_file(agents_home / "finn" / "memory" / "LOG.md")
    versions = [e["meta"]["version"] for e in entries if e["type"] == "NOW_UPDATE"]
    assert versions == list(range(1, 121))
    last = [e for e in entries if e["type"] == "NOW_UPDATE"][-1]
    assert front["log_seq"] == last["seq"] and front["objective"] == last["meta"]["objective"]


def test_writers_of_one_process_queue_for_memory_db(tmp_path: Path) -> None:
    """Threads of one process wait for each other's memory.db transactions in a queue, woken when the one
    before commits, not in SQLite's sleep-and-retry (which, with no busy timeout, fails at once)."""
    from core.memory.storage.sqlite import SqliteDatabase as Database

    db = Database(tmp_path / "memory.db")
    db.conn.execute("PRAGMA busy_timeout = 0")
    inside, release = threading.Event(), threading.Event()
    written: list[str] = []

    def first() -> None:
        with db.transaction() as conn:
            conn.execute("INSERT INTO user_facts (key, value, created_at, updated_at) VALUES ('a', '1', 'x', "
                         "'x')")
            inside.set()
            release.wait(60)
        written.append("first")

    def second() -> None:
        db.conn.execute("PRAGMA busy_timeout = 0")
        with db.transaction() as conn:
            conn.execute("INSERT INTO user_facts (key, value, created_at, updated_at) VALUES ('b', '2', 'x', "
                         "'x')")
        written.append("second")

    holder = threading.Thread(target=first)
    holder.start()
    assert inside.wait(60)
    waiter = threading.Thread(target=second)
    waiter.start()
    waiter.join(0.5)  # it waits for the first transaction; without the queue it would have failed by now
    assert waiter.is_alive() and not written
    release.set()
    holder.join(60)
    waiter.join(60)
    assert written == ["first", "second"]
    assert db.conn.execute("SELECT count(*) FROM user_facts").fetchone()[0] == 2
    db.close()
