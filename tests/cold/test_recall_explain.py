"""Recall that explains itself, lists a time window with no query, and ranks a superseded version below the
later one."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from core.errors import ValidationError
from core.memory.recall.when import time_window
from core.memory.upkeep.rebuild import rebuild_all
from core.memory_manager import MemoryManager


@pytest.fixture
def ada(agents_home, storage_backend):
    """Agent ada in memory.db, then in a PostgreSQL schema."""
    with MemoryManager("ada") as manager:
        yield manager


def test_an_explained_hit_says_why_it_ranked_and_the_plain_result_is_unchanged(manager):
    """With explain=True each hit carries the query words it holds, its vector similarity, its features,
    kind and score; the results themselves are those of the same recall without explain."""
    manager.store_memory("Maria gets the weekly sales report every Friday", {"speaker": "Ada"})
    manager.store_memory("The cat sleeps on the sofa")
    manager.save_fact("report_day", "Friday")
    plain = manager.recall_memory("who gets the weekly sales report?", 5)
    explained = manager.recall_memory("who gets the weekly sales report?", 5, explain=True)
    assert isinstance(plain, list) and set(explained) == {"results", "left_out"}
    assert [{k: v for k, v in hit.items() if k != "why"} for hit in explained["results"]] == plain
    why = explained["results"][0]["why"]
    assert explained["results"][0]["content"].startswith("Maria gets the weekly sales report")
    assert {"weekly", "sales", "report"} <= set(why["words"]) and why["word_score"] > 0
    assert why["vector"] is not None and why["vector_search"] == "ran"
    assert set(why["features"]) >= {"vector", "words", "speaker", "informative"}
    assert (why["kind"], why["kind_bonus"], why["recency"], why["superseded_by"]) == ("note", 0.0, None, None)
    assert why["score"] == explained["results"][0]["score"]
    fact = next(h for h in manager.recall_memory("report day", 5, kind="fact", explain=True)["results"])
    assert fact["why"]["kind_bonus"] > 0


def test_an_explained_recall_reports_what_it_left_out(manager):
    """Below min_score, a duplicate (naming the result it repeats) and an expired note are counted, with
    examples."""
    kept = manager.store_memory("I adopted a grey cat named Pixel", {"speaker": "Ada", "session": "s1"})
    twin = manager.store_memory("I adopted a grey cat named Pixel!", {"speaker": "Ada", "session": "s1"})
    expired = manager.store_memory("Pixel the grey cat was adopted at the shelter", expires_at="2020-01-01")
    manager.store_memory("The quarterly tax forms are due in April")
    found = manager.recall_memory("grey cat named Pixel", 5, explain=True, min_score=0.5)
    left = found["left_out"]
    assert [h["id"] for h in found["results"]] == [kept]
    assert left["duplicate"]["count"] == 1 and left["duplicate"]["examples"][0] == {
        **left["duplicate"]["examples"][0], "id": twin, "repeats": kept,
        "content": "I adopted a grey cat named Pixel!"}
    assert left["below_min_score"]["count"] >= 1
    assert all(e["score"] < 0.5 for e in left["below_min_score"]["examples"])
    assert left["expired"] == {"count": 1, "examples": [{"id": expired}]}
    quiet = manager.recall_memory("grey cat named Pixel", 5, explain=True, min_score=0)["left_out"]
    assert "below_min_score" not in quiet


def test_recency_is_explained_as_the_factor_it_applied(manager):
    """With recency_days, why.recency is the factor the score was multiplied by (one half-life: 0.5)."""
    manager.store_memory("The team moved the standup to 9:30", occurred_at="2023-05-01")
    found = manager.recall_memory("when is the standup?", 1, recency_days=100000, explain=True)["results"][0]
    assert 0.9 < found["why"]["recency"] < 1.0


def test_a_time_window_is_listed_newest_first_with_no_query(manager):
    """recall_memory with since/until and no query lists the window's memories newest first (score None),
    both bounds included, with n_results and kind as for a search."""
    for day in ("2023-04-30", "2023-05-01", "2023-05-03", "2023-05-31", "2023-06-01"):
        manager.store_memory(f"Standup notes of {day}", occurred_at=day)
    listed = manager.recall_memory(since="2023-05-01", until="2023-05-31")
    assert [h["content"] for h in listed] == ["Standup notes of 2023-05-31", "Standup notes of 2023-05-03",
                                              "Standup notes of 2023-05-01"]
    assert {h["score"] for h in listed} == {None} and listed[0]["kind"] == "note"
    assert [h["content"] for h in manager.recall_memory(None, 1,
                                                        since="May 2023")] == ["Standup notes of 2023-06-01"]
    assert manager.recall_memory(since="2023-05-01", kind="fact") == []


@pytest.mark.parametrize("arguments, message", [
    ({"since": "the day after never"}, "is not a date"),
    ({"since": "2023-06-01", "until": "2023-05-01"}, "is before since"),
    ({}, "give a query, or a time window"),
    ({"since": "2023-05-01", "explain": True}, "only a recall with a query"),
    ({"since": "2023-05-01", "min_score": 0.5}, "only a recall with a query"),
    ({"since": "1000000 years ago"}, "outside the calendar"),
])
def test_a_bad_time_window_is_refused_with_a_clear_error(manager, arguments, message):
    """An unreadable date, until before since, no query and no window, or ranking arguments without a
    query."""
    with pytest.raises(ValidationError, match=message):
        manager.recall_memory(**arguments)


def test_until_before_since_is_refused_for_a_search_too(manager):
    """A search with until before since is an error, not an empty result."""
    with pytest.raises(ValidationError, match="is before since"):
        manager.recall_memory("standup", since="8 May 2023", until="1 May 2023")


def test_relative_periods_name_their_first_and_last_moment():
    """since='last week' is the Monday it began, until='last week' the end of its Sunday; a day, a month
    too."""
    now = datetime(2023, 5, 10, 15, 30, tzinfo=timezone.utc)  # a Wednesday
    assert time_window("last week", "since", "start", now) == datetime(2023, 5, 1, tzinfo=timezone.utc)
    assert (time_window("last week", "until", "end", now)
            == datetime(2023, 5, 7, 23, 59, 59, 999999, timezone.utc))
    assert time_window("yesterday", "since", "start", now) == datetime(2023, 5, 9, tzinfo=timezone.utc)
    assert time_window("3 days ago", "until", "end", now).date().isoformat() == "2023-05-07"
    assert time_window("this month", "until", "end", now).date().isoformat() == "2023-05-31"
    assert time_window("8 May 2023", "since", "start", now) == datetime(2023, 5, 8, tzinfo=timezone.utc)


def test_a_window_given_as_a_relative_period_lists_it(manager):
    """since/until 'last year' lists what happened last year and nothing of the year before or this one."""
    year = datetime.now(timezone.utc).year
    for y in (year - 2, year - 1):
        manager.store_memory(f"The summer trip of {y}", occurred_at=f"{y}-07-01")
    listed = manager.recall_memory(since="last year", until="last year")
    assert [h["content"] for h in listed] == [f"The summer trip of {year - 1}"]


def test_a_later_version_of_a_note_ranks_first_and_the_earlier_stays_as_history(ada):
    """Notes with the same metadata key: the later one ranks above, the earlier is still recalled, marked with
    what superseded it and when, counted as superseded when left out, and all of it survives a rebuild."""
    old = ada.store_memory("Ada lives in Paris near the Canal Saint-Martin", {"key": "home"},
                           occurred_at="2023-01-05")
    new = ada.store_memory("Ada moved to Lyon", {"key": "home"}, occurred_at="2023-06-01")
    other = ada.store_memory("Ada's sister lives in Paris", occurred_at="2023-02-01")

    def check():
        hits = ada.recall_memory("where does Ada live? Paris", 5, min_score=0)
        ids = [h["id"] for h in hits]
        assert ids.index(new) < ids.index(old)
        earlier = hits[ids.index(old)]
        assert earlier["superseded_by"] == {"id": new, "occurred_at": "2023-06-01T00:00:00.000Z"}
        assert "superseded_by" not in hits[ids.index(new)] and "superseded_by" not in hits[ids.index(other)]
        explained = ada.recall_memory("Canal Saint-Martin", 5, explain=True, min_score=0)["results"]
        assert next(h for h in explained if h["id"] == old)["why"]["superseded_by"]["id"] == new
        left = ada.recall_memory("Ada lives in Paris", 1, explain=True, min_score=0)["left_out"]
        assert left["superseded"]["examples"][0]["superseded_by"] == new
        listed = ada.recall_memory(since="2023-01-01", until="2023-12-31")
        assert [h["id"] for h in listed] == [new, other, old] and listed[2]["superseded_by"]["id"] == new

    check()
    rebuild_all(ada.tiers)
    check()
    ada.forget_memory(new)  # the earlier version is current again
    assert ada.recall_memory("Canal Saint-Martin", 1)[0] == {**ada.recall_memory("Canal Saint-Martin", 1)[0],
                                                             "id": old}
    assert "superseded_by" not in ada.recall_memory("Canal Saint-Martin", 1)[0]


def test_only_the_same_key_supersedes(manager):
    """Notes without a key, with another key, or of another kind than note never supersede each other."""
    a = manager.store_memory("Ada works at the bakery", {"key": "job"}, occurred_at="2023-01-01")
    manager.store_memory("Ada works at the bakery on Sundays too", occurred_at="2023-02-01")
    manager.store_memory("Ada works at the library", {"key": "hobby"}, occurred_at="2023-03-01")
    manager.store_memory("Ada works at the bakery", {"key": "job"}, kind="summary", occurred_at="2023-04-01")
    hits = manager.recall_memory("where does Ada work", 10, min_score=0)
    assert a in [h["id"] for h in hits] and not any("superseded_by" in h for h in hits)
