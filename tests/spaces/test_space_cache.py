"""A process keeps a space open between recalls, and what other processes change is still seen at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import PermissionDeniedError
from core.memory.spaces import Space, members as members_file
from core.memory.spaces.opened import opened
from core.memory.spaces.paths import SpacePaths
from core.memory_manager import MemoryManager

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def team(agents_home: Path):
    agents = {name: MemoryManager(name) for name in ("researcher", "writer")}
    Space.create("research", {"researcher": "read-write", "writer": "read-only"})
    yield agents
    for manager in agents.values():
        manager.close()


def in_another_process(home: Path, code: str) -> None:
    """Run ``code`` (with ``Space`` imported) in a child process of this home, which must succeed."""
    env = dict(os.environ, AGENTOS_HOME=str(home), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", "from core.memory.spaces import Space\n" + code], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def shared(hits: list[dict]) -> list[str]:
    return [h["content"] for h in hits if h["space"] == "research"]


def test_recalls_use_one_open_space_and_its_index(team, agents_home):
    team["researcher"].publish("research", "Kelp forests shelter sea otters")
    team["writer"].recall_memory("kelp otters")
    with opened("research", agents_home) as first:
        index = first.index()
    team["writer"].recall_memory("kelp otters")
    with opened("research", agents_home) as second:
        assert second is first and second.index() is index


def test_a_publish_by_another_process_is_found_by_the_next_recall(team, agents_home):
    team["researcher"].publish("research", "Kelp forests shelter sea otters")
    assert shared(team["writer"].recall_memory("kelp otters")) == ["Kelp forests shelter sea otters"]
    in_another_process(agents_home,
                       "Space('research').publish('researcher', 'Kelp grows half a metre a day')")
    assert sorted(shared(team["writer"].recall_memory("kelp", min_score=0.0))) == [
        "Kelp forests shelter sea otters", "Kelp grows half a metre a day"]


def test_a_member_removed_by_another_process_is_refused_at_once(team, agents_home):
    team["researcher"].publish("research", "Kelp forests shelter sea otters")
    assert shared(team["writer"].recall_memory("kelp otters"))
    in_another_process(agents_home, "Space('research').remove_member('writer')")
    with pytest.raises(PermissionDeniedError, match="not a member"):
        team["writer"].recall_memory("kelp otters", spaces=["research"])
    assert shared(team["writer"].recall_memory("kelp otters")) == []  # no longer one of its spaces


def test_an_index_replaced_by_another_process_is_reopened(team, agents_home):
    team["researcher"].publish("research", "Kelp forests shelter sea otters")
    assert shared(team["writer"].recall_memory("kelp otters"))
    with opened("research", agents_home) as before:
        pass
    index = SpacePaths.for_space("research", agents_home).index_file
    in_another_process(agents_home, f"""
from pathlib import Path
index = Path({str(index)!r})
for name in (index.name, index.name + '-wal', index.name + '-shm'):  # deleted: it is derived
    index.with_name(name).unlink(missing_ok=True)
with Space('research') as space:
    space.publish('researcher', 'Sea urchins eat kelp')
    assert space.show()['memories'] == 2  # a new index.db, filled from the journal
""")
    assert sorted(shared(team["writer"].recall_memory("kelp", min_score=0.0))) == [
        "Kelp forests shelter sea otters", "Sea urchins eat kelp"]
    with opened("research", agents_home) as after:
        assert after is not before


def test_members_are_read_again_only_when_the_file_is_replaced(team, agents_home):
    paths = SpacePaths.for_space("research", agents_home)
    assert members_file.read(paths) is members_file.read(paths)
    Space("research").add_member("writer")  # an atomic replace: a new file
    assert members_file.read(paths).of("writer") == "read-write"


def test_a_question_that_counts_keeps_the_weaker_space_memories_too(team):
    """Space memories follow the rule of the agent's own: a question that counts is not cut at a share of its
    best result, a question about one thing is."""
    for text in ("I counted three sea otters in the kelp forest this morning", "kelp", "otters",
                 "The boat needs new paint", "Tides were low on Tuesday"):
        team["researcher"].publish("research", text)
    writer = team["writer"]
    every = shared(writer.recall_memory("how many sea otters in the kelp forest this morning",
                                        spaces=["research"],
                                        min_score=0.0))
    assert shared(writer.recall_memory("how many sea otters in the kelp forest this morning",
                                       spaces=["research"])) == every
    plain = "sea otters in the kelp forest this morning"
    assert len(shared(writer.recall_memory(plain, spaces=["research"]))) < len(
        shared(writer.recall_memory(plain, spaces=["research"], min_score=0.0)))
