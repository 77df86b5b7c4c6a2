"""Many processes on one PostgreSQL schema: appends and compactions under SIGKILL lose and duplicate
nothing."""

from __future__ import annotations

import os
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
HANG_GUARD_S = 1500
"""A hang guard, not a time bound: the ten processes finish long before on a quiet machine; they were seen to
take more than five minutes on one whose load average stood at 15."""


class Child:
    """A worker process whose printed lines are collected as they come, started again each time it dies at one
    of its ``fault_points`` (one a start, see core.durable.fault_points; the start after the last is not
    armed)."""

    def __init__(self, args: list[str], fault_points: list[str]) -> None:
        self.args = args
        self.fault_points = fault_points
        self.lines: list[str] = []
        self.kills = 0
        self.start()

    def start(self) -> None:
        point = self.fault_points[self.kills] if self.kills < len(self.fault_points) else ""
        self.process = subprocess.Popen([*PYTHON, *self.args], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                                        env=dict(os.environ, AGENTOS_FAULT_POINT=point))
        self.reader = threading.Thread(target=self._read, args=(self.process,), daemon=True)
        self.reader.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.append(line.strip())

    def restart_if_killed(self) -> bool:
        """Start the worker again if it died at its fault point; False while it runs or once it has
        finished."""
        if self.process.poll() != -signal.SIGKILL:
            return False
        self.reader.join(30)
        self.kills += 1
        self.start()
        return True

    def stop(self) -> None:
        """End a worker that runs for ever (a compactor) once the test is done with it."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        self.reader.join(30)


def stored_turns(provider: LCMProvider, session_id: str, writer: str) -> list[int]:
    return [int(m.content.split()[2].rstrip(":")) for m in provider.load_history(session_id)
            if m.content.startswith(f"{writer} question ")]


@pytest.mark.slow
@pytest.mark.timeout(HANG_GUARD_S + 300)
def test_eight_appenders_and_compactors_under_sigkill(postgres_db):
    """8 processes append to 4 conversations while 2 compact them; SIGKILLs at commits drawn at random (twice
    each appender; each compactor when it reaches them) lose and duplicate no turn."""
    dsn, schema = postgres_db.dsn, postgres_db.schema
    sessions = [f"fleet:{n}" for n in range(4)]
    writers = {f"w{n}": sessions[n % 4] for n in range(8)}
    chance = random.Random(14)
    appenders = {writer: Child(["append", dsn, schema, session, writer, str(TURNS)],
                               [f"db.commit@{chance.randint(1, TURNS // 3)}" for _ in range(2)])
                 for writer, session in writers.items()}
    compactors = [Child(["compact", dsn, schema, "0.01", *sessions[n::2]],
                        [f"db.commit@{chance.randint(1, 20)}" for _ in range(2)]) for n in range(2)]
    deadline = time.monotonic() + HANG_GUARD_S
    while any(child.process.poll() != 0 for child in appenders.values()):
        assert time.monotonic() < deadline, f"the appenders still run after {HANG_GUARD_S} s"
        if not any([child.restart_if_killed() for child in [*appenders.values(), *compactors]]):
            time.sleep(0.05)  # polling the children's state, not timing a kill
    for child in compactors:
        child.stop()
    assert all(child.kills == 2
               for child in appenders.values()), "an appender finished before its fault point"

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
