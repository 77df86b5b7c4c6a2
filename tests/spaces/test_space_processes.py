"""Memory spaces under real processes: concurrent publishers of many agents, and SIGKILL during a publish."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.memory.files.log_file import scan_bytes
from core.memory.spaces import Space
from core.memory_manager import MemoryManager

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

PUBLISHER = """
import sys
from core.memory.spaces import Space

agent, count = sys.argv[1], int(sys.argv[2])
space = Space("shared")
for n in range(count):
    space.publish(agent, f"entry {n} of {agent}", {"n": n})
print("done", flush=True)
"""


def start(script: str, home: Path, *args: str, fault_point: str = "") -> subprocess.Popen:
    env = dict(os.environ, AGENTOS_HOME=str(home), PYTHONPATH=str(ROOT), AGENTOS_FAULT_POINT=fault_point)
    return subprocess.Popen([sys.executable, "-c", script, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_eight_processes_of_eight_agents_publishing_200_each_lose_and_double_nothing(agents_home):
    agents = [f"agent{i}" for i in range(8)]
    for agent in agents:
        MemoryManager(agent).close()
    Space.create("shared", {agent: "read-write" for agent in agents})
    procs = [start(PUBLISHER, agents_home, agent, "200") for agent in agents]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    entries = scan_bytes((agents_home / "spaces" / "shared" / "LOG.md").read_bytes(), "journal")
    assert not entries.bad_lines
    published = [(e.metadata["author"], e.metadata["metadata"]["n"]) for e in entries.entries]
    assert len(published) == 1600 and set(published) == {(a, n) for a in agents for n in range(200)}
    seqs = [e.seq for e in entries.entries]
    assert seqs == list(range(1, 1601))
    with Space("shared") as space:
        assert space.show()["memories"] == 1600


@pytest.mark.parametrize("point", ["log.append", "log.appended"])
def test_sigkill_during_a_publish_leaves_the_journal_whole(agents_home, point):
    MemoryManager("researcher").close()
    Space.create("shared", {"researcher": "read-write"})
    Space("shared").publish("researcher", "before the crash")
    proc = start(PUBLISHER, agents_home, "researcher", "5", fault_point=f"{point}@3")
    proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL
    path = agents_home / "spaces" / "shared" / "LOG.md"
    lines = path.read_bytes().split(b"\n")
    # Every line before the last newline is whole: a kill can only leave a torn tail.
    assert not scan_bytes(b"\n".join(lines[:-1]) + b"\n", path).bad_lines
    with Space("shared") as space:  # opening repairs the tail; the next publish continues the journal
        space.publish("researcher", "after the crash")
        contents = [e.content for e in scan_bytes(path.read_bytes(), path).entries]
        assert not scan_bytes(path.read_bytes(), path).bad_lines
        kept = 3 if point == "log.appended" else 2  # the third write was killed before or after its flush
        assert contents == ["before the crash"] + [f"entry {n} of researcher"
                                                   for n in range(kept)] + ["after the crash"]
        assert space.show()["memories"] == len(contents)
