"""Many processes on one PostgreSQL schema: appends and compactions under SIGKILL lose and duplicate nothing."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.memory.provider import CompactionMode, Session
from core.plugins.memory.lcm import DeterministicSummarizer, LCMProvider
from tests.providers.test_lossless import expand_all, key
from tests.providers.workers import CONFIG

ROOT = Path(__file__).resolve().parents[2]
PYTHON = [sys.executable, "-m", "tests.postgres.workers"]
TURNS = 40


class Child:
    """A worker process whose printed lines are collected as they come."""

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.lines: list[str] = []
        self.kills = 0
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen([*PYTHON, *self.args], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, args=(self.process,), daemon=True)
        self.reader.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.append(line.strip())

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        self.reader.join(30)
        self.kills += 1


def stored_turns(provider: LCMProvider, session_id: str, writer: str) -> list[int]:
    return [int(m.content.split()[2].rstrip(":")) for m in provider.load_history(session_id)
            if m.content.startswith(f"{writer} question ")]


@pytest.mark.slow
def test_eight_appenders_and_compactors_under_sigkill(postgres_db):
    """8 processes append to 4 conversations while 2 compact them; random SIGKILLs lose and duplicate no turn."""
    dsn, schema = postgres_db.dsn, postgres_db.schema
    sessions = [f"fleet:{n}" for n in range(4)]
    writers = {f"w{n}": sessions[n % 4] for n in range(8)}
    chance = random.Random(14)
    appenders = {writer: Child(["append", dsn, schema, session, writer, str(TURNS)]) for writer, session in writers.items()}
    compactors = [Child(["compact", dsn, schema, "0.01", *sessions[n::2]]) for n in range(2)]
    deadline = time.monotonic() + 150
    while any(child.process.poll() is None for child in appenders.values()) and time.monotonic() < deadline:
        time.sleep(chance.uniform(0.1, 0.3))  # kills land before the appenders finish, even on a fast machine
        victim = chance.choice([*[c for c in appenders.values() if c.process.poll() is None], *compactors])
        if victim.kills < 2:
            victim.kill()
            victim.start()
    for child in compactors:
        child.kill()
    for writer, child in appenders.items():
        assert child.process.wait(timeout=max(1, deadline - time.monotonic())) == 0, writer
    assert sum(child.kills for child in [*appenders.values(), *compactors]) >= 8

    provider = LCMProvider(postgres_db, summarizer=DeterministicSummarizer(), config=CONFIG)
    assert sum(provider.stats(Session(s)).summary_count for s in sessions) > 0  # compaction ran meanwhile
    for writer, session_id in writers.items():
        committed = {int(line) for line in appenders[writer].lines}
        stored = stored_turns(provider, session_id, writer)
        assert stored == list(range(TURNS)), writer  # in order, none lost, none twice
        assert committed <= set(stored)
    for session_id in sessions:
        history = provider.load_history(session_id)
        assert len(history) == 2 * 2 * TURNS
        provider.compact(Session(session_id), CompactionMode.FULL)
        context = provider.assemble(Session(session_id), 10**9, 4)
        assert [key(m) for item in context for m in expand_all(provider, item)] == [key(m) for m in history]
        assert provider.stats(Session(session_id)).summary_count > 0
    provider.close()
