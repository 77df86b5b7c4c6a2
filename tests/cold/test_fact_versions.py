"""Versions of a fact: saving a new value keeps the earlier one, recalled as history below the current
value."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from core.memory.upkeep.rebuild import rebuild_all
from core.memory_manager import MemoryManager

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ada(agents_home, storage_backend):
    """Agent ada in memory.db, then in a PostgreSQL schema."""
    with MemoryManager("ada") as manager:
        yield manager


def test_a_new_value_ranks_first_and_the_earlier_is_recalled_marked_superseded(ada):
    """The current value is the fact (``fact:<key>``) and ranks above its earlier value, which is still a
    ``fact`` hit, marked ``superseded_by`` the current one; get_fact returns the current value; all of it
    survives rebuild-index."""
    ada.save_fact("home_city", "Paris, near the Canal Saint-Martin", "personal")
    ada.save_fact("home_city", "Lyon", "personal")
    ada.save_fact("home_city", "Lyon", "personal")  # the same value again: no new version
    history = ada.get_fact("home_city", history=True)
    assert [(h["value"], h["replaced_at"] is None) for h in history] == [
        ("Lyon", True), ("Paris, near the Canal Saint-Martin", False)]
    old_id = history[1]["id"]
    assert old_id.startswith("fact_version:") and history[0]["id"] == "fact:home_city"
    assert ada.get_fact("home_city") == "Lyon"

    def check():
        hits = ada.recall_memory("home city Paris Lyon", 5, min_score=0)
        ids = [h["id"] for h in hits]
        assert ids.index("fact:home_city") < ids.index(old_id)
        earlier = hits[ids.index(old_id)]
        current = hits[ids.index("fact:home_city")]
        assert earlier["kind"] == "fact" and "Canal Saint-Martin" in earlier["content"]
        assert earlier["superseded_by"] == {"id": "fact:home_city", "occurred_at": current["occurred_at"]}
        assert "superseded_by" not in current
        # Found by words only the earlier value holds, it is still marked and still below the current one.
        alone = ada.recall_memory("Canal Saint-Martin", 5, kind="fact", min_score=0)
        assert [h["id"] for h in alone] == ["fact:home_city", old_id]
        assert alone[1]["superseded_by"]["id"] == "fact:home_city"

    check()
    rebuild_all(ada.tiers)
    check()


def test_history_lists_every_value_newest_first_and_deleting_the_fact_drops_it(ada):
    """Three values: history has all three, newest first, each replaced when the next was saved."""
    for value in ("tea", "coffee", "mate"):
        ada.save_fact("drink", value, "preference")
    history = ada.get_fact("drink", history=True)
    assert [h["value"] for h in history] == ["mate", "coffee", "tea"]
    assert (
        history[1]["replaced_at"] == history[0]["saved_at"]
        and history[2]["replaced_at"] == history[1]["saved_at"]
    )
    # strictly, even within 1 ms
    assert history[0]["saved_at"] > history[1]["saved_at"] > history[2]["saved_at"]
    assert ada.get_fact("unknown_key", history=True) == []
    assert ada.delete_fact("drink")
    assert ada.get_fact("drink", history=True) == []
    assert ada.recall_memory("coffee tea mate drink", 5, kind="fact", min_score=0) == []
    ada.save_fact("drink", "water", "preference")  # a new history starts
    assert [h["value"] for h in ada.get_fact("drink", history=True)] == ["water"]


CHILD = """
import sys
from core.durable import fault_points
from core.memory_manager import MemoryManager

manager = MemoryManager("ada")
manager.save_fact("home_city", "Paris", "personal")
fault_points.arm(sys.argv[1], thread="main")
manager.save_fact("home_city", "Lyon", "personal")
"""


@pytest.mark.slow
@pytest.mark.parametrize("point", ["log.append", "log.appended", "db.commit"])
def test_a_save_killed_midway_keeps_the_value_and_its_history_in_step(agents_home, point):
    """SIGKILL as the new value's FACT line is written, once it is, and as memory.db commits: the next open
    has either the old value and no history, or the new value with the old one kept (LOG.md's entry
    replayed)."""
    child = subprocess.run([sys.executable, "-c", CHILD, point], cwd=ROOT, env=dict(os.environ),
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    with MemoryManager("ada") as reopened:
        history = [v["value"] for v in reopened.get_fact("home_city", history=True)]
        assert history == (["Paris"] if point == "log.append" else ["Lyon", "Paris"])
        assert reopened.get_fact("home_city") == history[0]
        hits = reopened.recall_memory("home city Paris Lyon", 5, kind="fact", min_score=0)
        assert [h.get("superseded_by", {}).get("id") for h in hits] == [None,
                                                                        "fact:home_city"][: len(history)]
