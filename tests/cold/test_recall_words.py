"""The word search of recall: the best BM25 matches that pass the filters, however many other matches rank
first."""

from __future__ import annotations

from core.memory.recall.docs import Filters
from core.memory.storage.words import FILTER_MARGIN


def test_filtered_word_matches_are_found_below_many_better_unfiltered_ones(finn):
    """Summaries that match weakly are found with kind="summary" though more than depth + margin notes match
    better."""
    depth = 10
    notes = [f"zebra {i}" for i in range(depth + FILTER_MARGIN + 20)]
    summaries = [f"a long summary that mentions a zebra once among many other words, number {i}"
                 for i in range(3)]
    note_ids = finn.store_memories(notes)
    summary_ids = finn.store_memories([{"content": s, "kind": "summary"} for s in summaries])
    everything = [i for i, _ in finn.cold.docs.words("zebra", len(notes) + 3, Filters())]
    assert set(everything) == set(note_ids + summary_ids) and set(everything[-3:]) == set(summary_ids)
    found = finn.cold.docs.words("zebra", depth, Filters(kinds=("summary",)))
    assert sorted(i for i, _ in found) == sorted(summary_ids)
    assert all(0 < strength <= 1 for _, strength in found)


def test_the_best_matches_come_first_with_or_without_filters(finn):
    """Without filters and with filters every match passes, the word search returns the same ranking."""
    ids = finn.store_memories([f"the blue heron {'waits ' * n}by the pond" for n in range(1, 30)])
    plain = finn.cold.docs.words("heron pond", 5, Filters())
    assert [i for i, _ in plain] == ids[:5]
    assert finn.cold.docs.words("heron pond", 5, Filters(kinds=("note",))) == plain
