"""Appends and compactions of one session from threads and processes serialise without loss."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.memory.provider import CompactionMode, Session
from core.plugins.memory.lcm import LCMProvider
from tests.providers.test_lossless import expand_all, key
from tests.providers.workers import CONFIG, SlowSummarizer, append

ROOT = Path(__file__).resolve().parents[2]
SESSION = Session("shared")


def assert_lossless(db_path: Path, expected_count: int) -> None:
    """Every stored message is reachable exactly once from the context, in order."""
    provider = LCMProvider(db_path, config=CONFIG)
    history = provider.load_history(SESSION.id)
    assert len(history) == expected_count
    context = provider.assemble(SESSION, 10**9, 4)
    assert [key(m) for item in context for m in expand_all(provider, item)] == [key(m) for m in history]
    assert provider.db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    provider.close()


def per_writer_order(db_path: Path, prefixes: list[str]) -> None:
    provider = LCMProvider(db_path, config=CONFIG)
    texts = [m.content for m in provider.load_history(SESSION.id)]
    for prefix in prefixes:
        mine = [t for t in texts if t.startswith(prefix + " ")]
        numbers = [int(t.split()[2].rstrip(":")) for t in mine if " question " in t]
        assert numbers == sorted(numbers) and len(numbers) == len(set(numbers))
    provider.close()


def test_threads_append_and_compact(db_path):
    """Four appending threads and one compacting thread on one session lose no message."""
    compactor = LCMProvider(db_path, summarizer=SlowSummarizer(0.001), config=CONFIG)
    compactor.bootstrap(SESSION)
    stop = threading.Event()

    def compact_loop() -> None:
        while not stop.is_set():
            compactor.compact(SESSION, CompactionMode.INCREMENTAL)

    writers = [threading.Thread(target=append,
                                args=(str(db_path), SESSION.id, f"t{n}", 40)) for n in range(4)]
    background = threading.Thread(target=compact_loop)
    background.start()
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    stop.set()
    background.join()
    compactor.compact(SESSION, CompactionMode.FULL)
    compactor.close()
    assert_lossless(db_path, 4 * 40 * 2)
    per_writer_order(db_path, [f"t{n}" for n in range(4)])


@pytest.mark.slow
def test_processes_append_and_compact(db_path):
    """Three appending processes and two compacting processes on one session lose no message."""
    LCMProvider(db_path, config=CONFIG).bootstrap(SESSION)
    python = [sys.executable, "-m", "tests.providers.workers"]
    children = [subprocess.Popen([*python, "append", str(db_path), SESSION.id, f"p{n}", "60"], cwd=ROOT)
                for n in range(3)]
    children += [subprocess.Popen([*python, "compact", str(db_path), SESSION.id, "6", "0.002"], cwd=ROOT,
                                  stdout=subprocess.DEVNULL) for _ in range(2)]
    for child in children:
        assert child.wait(timeout=120) == 0
    assert_lossless(db_path, 3 * 60 * 2)
    per_writer_order(db_path, [f"p{n}" for n in range(3)])
