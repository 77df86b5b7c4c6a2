"""The time a query names ("two weeks ago", "last month", "in March") as soft evidence for recall."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import ValidationError
from core.memory.recall.when import query_windows, time_fit

NOW = datetime(2023, 2, 1, 8, 41, tzinfo=timezone.utc)


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def spans(text: str) -> list[tuple[str, str]]:
    return [(a.date().isoformat(), b.date().isoformat()) for a, b in query_windows(text, NOW)]


def test_relative_phrases_are_read_from_the_moment_of_the_question():
    assert spans("which shoes did I clean last month?") == [("2023-01-01", "2023-02-01")]
    assert spans("what did I cook yesterday") == [("2023-01-31", "2023-02-01")]
    assert spans("the book I finished a week ago") == [("2023-01-20", "2023-01-30")]
    assert spans("what did I do last Tuesday") == [("2023-01-31", "2023-02-01")]
    assert spans("the races of the past month") == [("2023-01-02", "2023-02-02")]


def test_a_month_without_a_year_is_the_latest_one_up_to_now():
    assert spans("the sports events I watched in January") == [("2023-01-01", "2023-02-01")]
    assert spans("the trip in March") == [("2022-03-01", "2022-04-01")]
    assert spans("the trip in March 2021") == [("2021-03-01", "2021-04-01")]


def test_a_query_without_time_has_no_window_and_every_memory_fits_zero():
    assert query_windows("where do I keep my sneakers", NOW) == []
    assert time_fit(day("2023-01-20"), []) == 0.0


def test_the_fit_is_one_inside_and_falls_off_outside():
    [window] = query_windows("an art exhibit two weeks ago", NOW)
    inside, near, far = (time_fit(day(d), [window]) for d in ("2023-01-18", "2023-01-08", "2022-06-01"))
    assert inside == 1.0 and 0.0 < far < near < 1.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["0", "9", "99999999999", " ", "days ago", "weeks ago", "years ago", "in March",
                                  "last month", "ſix", "a few", "the Wednesday", "since December"]),
                max_size=12).map(" ".join))
def test_no_phrase_breaks_the_reading(text):
    """Counts beyond the calendar ("99999999999 years ago") give no window, never an error."""
    for start, end in query_windows(text, NOW):
        assert start < end


def test_recall_ranks_the_memory_from_the_time_the_question_names_first(manager):
    """The same words said twice: "two weeks ago", asked on 1 February, is the one of mid-January; asked
    without a time, or from another moment, the dates decide nothing."""
    january, december = manager.store_memories([
        {"content": "I visited the pottery exhibit downtown", "metadata": {"date": "2023/01/18 (Wed) 10:00"}},
        {"content": "I visited the pottery exhibit downtown", "metadata": {"date": "2022/12/05 (Mon) 10:00"}},
    ])

    def order(query: str, now: str) -> list[str]:
        return [r["id"] for r in manager.recall_memory(query, n_results=2, min_score=0, now=now)]

    assert order("which exhibit did I visit two weeks ago?", "2023/02/01 (Wed) 08:41") == [january, december]
    assert order("which exhibit did I visit two weeks ago?", "2022/12/19 (Mon) 08:41") == [december, january]
    [first, second] = manager.recall_memory("which exhibit did I visit?", n_results=2, min_score=0,
                                            now="2023/02/01 (Wed) 08:41")
    assert first["score"] == second["score"]


def test_an_unreadable_now_is_refused(manager):
    with pytest.raises(ValidationError, match="now"):
        manager.recall_memory("pottery", now="the day after")
