"""A batch of memories with bad items in it: the good ones are stored, the bad ones named with why."""

from __future__ import annotations

import pytest

from core.errors import ValidationError
from core.memory.recall.views.results import Refused, StoredMemories

TURNS = [f"turn {n}: the user talks about their trip to Lisbon, day {n}" for n in range(6)]


def test_bad_items_are_refused_by_position_and_the_rest_is_stored(manager):
    items = [TURNS[0], "   ", TURNS[1], {"content": TURNS[2], "kind": "diary"}, 42, TURNS[3],
             {"content": TURNS[4], "occurred_at": "the 35th of Smarch"}]
    stored = manager.store_memories(items)
    assert isinstance(stored, StoredMemories) and isinstance(stored, list)
    assert [r.index for r in stored.refused] == [1, 3, 4, 6]
    reasons = {r.index: r.reason for r in stored.refused}
    assert reasons[1] == "memory content must not be empty"
    assert "kind must be one of note, summary, got 'diary'" in reasons[3]
    assert "must be text or a dict with 'content', got int" in reasons[4]
    assert "is not a date" in reasons[6]
    assert sorted(stored.by_index) == [0, 2, 5] and list(stored) == [stored.by_index[i] for i in (0, 2, 5)]
    assert stored.report().startswith("stored 3 of 7 memories; refused item 1: memory content must not be "
                                      "empty")
    found = {r["id"]: r["content"]
             for r in manager.recall_memory("trip to Lisbon", n_results=20, min_score=0)}
    assert found == {stored.by_index[0]: TURNS[0], stored.by_index[2]: TURNS[1], stored.by_index[5]: TURNS[3]}


def test_the_batch_sent_again_after_a_fix_stores_nothing_twice(manager):
    items = [TURNS[0], "", TURNS[1], {"content": TURNS[2], "occurred_at": "not a date at all"}]
    first = manager.store_memories(items)
    fixed = [TURNS[0], TURNS[5], TURNS[1], {"content": TURNS[2], "occurred_at": "2023-05-20"}]
    second = manager.store_memories(fixed)
    assert second.refused == [] and len(second) == 4
    assert second.by_index[0] == first.by_index[0] and second.by_index[2] == first.by_index[2]
    assert manager.cold.docs.count() == 4
    hits = manager.recall_memory("trip to Lisbon", n_results=20, min_score=0)
    assert sorted(r["id"] for r in hits) == sorted(second)


def test_a_batch_with_no_good_item_raises_and_stores_nothing(manager):
    with pytest.raises(ValidationError,
                       match=r"none of the 3 memories was stored, each was refused: item 0: memory "
                             r"content must not be empty; item 1: .*got NoneType; item 2: unknown"):
        manager.store_memories(["", None, {"content": "x", "colour": "red"}])
    assert manager.cold.docs.count() == 0


def test_one_bad_memory_alone_raises_its_own_error(manager):
    with pytest.raises(ValidationError, match="^memory content must not be empty$"):
        manager.store_memories([" "])
    with pytest.raises(ValidationError, match="^memory content must not be empty$"):
        manager.store_memory("")
    assert manager.cold.docs.count() == 0


def test_an_empty_batch_stores_nothing_and_refuses_nothing(manager):
    stored = manager.store_memories([])
    assert stored == [] and stored.refused == [] and stored.report() == "stored 0 of 0 memories"


def test_refused_reads_as_its_position_and_reason():
    assert str(Refused(3, "memory content must not be empty")) == "item 3: memory content must not be empty"
