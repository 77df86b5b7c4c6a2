"""Purging a space: the text of forgotten memories leaves the journal and index.db, byte for byte, and a purge
killed at any step is finished by the next open."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.memory.files.log_file import scan_bytes
from core.memory.spaces import Space
from core.memory.spaces.purge import PENDING, PURGED
from core.memory_manager import MemoryManager

ROOT = Path(__file__).resolve().parents[2]
FORGOTTEN = "The vault opens with the zebrafinch sequence"
WORD = b"zebrafinch"
PURGE = (
    "from core.memory.spaces import Space\nSpace('research').purge_forgotten()\nprint('purged', flush=True)\n"
)


@pytest.fixture
def space(agents_home: Path):
    """A space with three memories, the second forgotten and its text still in the journal and the index's
    pages."""
    for name in ("researcher", "writer"):
        MemoryManager(name).close()
    created = Space.create("research", {"researcher": "read-write", "writer": "read-only"})
    created.publish("researcher", "Sea otters hold hands while they sleep")
    secret = created.publish("researcher", FORGOTTEN, {"note": "zebrafinch"})
    created.publish("researcher", "Kelp grows half a metre a day")
    assert created.latest("writer", 5)  # indexed: the words are in index.db
    created.forget("researcher", [secret])
    assert holding(agents_home / "spaces" / "research") == ["LOG.md", "index.db-wal"]
    created.close()
    yield agents_home / "spaces" / "research"


def holding(folder: Path) -> list[str]:
    """The files under ``folder`` whose bytes hold the forgotten memory's distinctive word."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()
                  and WORD in p.read_bytes().lower())


def test_purge_takes_forgotten_text_out_of_the_journal_and_every_byte_of_the_index(space):
    writer = MemoryManager("writer")
    assert writer.recall_memory("sea otters", spaces=["research"])  # the writer's process keeps index.db open
    with Space("research") as opened:
        report = opened.purge_forgotten()
        assert report.purged == [2] and report.index_scrubbed
        assert holding(space) == []
        entries = scan_bytes((space / "LOG.md").read_bytes(), "journal")
        assert not entries.bad_lines
        purged = next(e for e in entries.entries if e.seq == 2)
        assert (purged.type, purged.content, purged.metadata["author"]) == ("PUBLISH", PURGED, "researcher")
        assert entries.entries[-1].type == "SYSTEM" and entries.entries[-1].metadata == {"purged": [2]}
        assert [m["content"] for m in opened.latest("writer", 5)] == ["Kelp grows half a metre a day",
                                                                      "Sea otters hold hands while they "
                                                                      "sleep"]
        assert opened.purge_forgotten().purged == []  # nothing left to purge: nothing rewritten
        assert opened.rebuild_index() == len(scan_bytes((space / "LOG.md").read_bytes(), "journal").entries)
        assert [m["seq"] for m in opened.latest(None, 5)] == [3, 1]
    assert not (space / PENDING).exists()
    found = [h["content"] for h in writer.recall_memory("vault zebrafinch otters", spaces=["research"],
                                                        min_score=0.0)]
    assert (
        "Sea otters hold hands while they sleep" in found and FORGOTTEN not in found and PURGED not in found
    )
    writer.close()


def test_purge_deletes_copies_of_a_damaged_index(space):
    (space / "index.db").rename(space / "index.db.damaged-20261127T120000Z")
    with Space("research") as opened:
        assert opened.purge_forgotten().removed == ["index.db.damaged-20261127T120000Z"]
    assert holding(space) == []


@pytest.mark.slow
@pytest.mark.parametrize("point", ["file.replace@2", "file.replaced@2", "db.commit@2"])
def test_a_purge_killed_at_a_fault_point_is_finished_by_the_next_open(space, agents_home, point):
    """SIGKILL before the rewritten journal replaces the old one, after it did, and as the index's merge
    commits (the first replace is the ``.purging`` mark, the first commit the index catching up)."""
    env = dict(os.environ, AGENTOS_HOME=str(agents_home), PYTHONPATH=str(ROOT), AGENTOS_FAULT_POINT=point)
    child = subprocess.run([sys.executable, "-c", PURGE], env=env, capture_output=True, text=True,
                           timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    assert (space / PENDING).exists()
    with Space("research") as opened:  # the open finishes the purge
        assert not (space / PENDING).exists()
        assert holding(space) == []
        assert [m["seq"] for m in opened.latest(None, 5)] == [3, 1]
    entries = scan_bytes((space / "LOG.md").read_bytes(), "journal")
    assert not entries.bad_lines and [e.seq for e in entries.entries][:4] == [1, 2, 3, 4]
