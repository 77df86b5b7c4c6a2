"""Dates of memories as people and chat exports write them, and relative dates that no text can break."""

from __future__ import annotations

import logging
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import ValidationError
from core.memory.recall.when import parse_time, relative_dates

CHAT_EXPORT_DATES = {
    "2023/05/20 (Sat) 02:21": "2023-05-20T02:21:00.000Z",
    "2023/05/20": "2023-05-20T00:00:00.000Z",
    "20 May 2023, 14:05": "2023-05-20T14:05:00.000Z",
    "Saturday 20 May 2023 (Saturday)": "2023-05-20T00:00:00.000Z",
    "2023/05/20 (sat.) 2:21 pm": "2023-05-20T14:21:00.000Z",
}


@pytest.mark.parametrize("written", sorted(CHAT_EXPORT_DATES))
def test_common_written_dates_date_a_memory_as_occurred_at_and_as_metadata_date(manager, written):
    """A chat export's "2023/05/20 (Sat) 02:21" dates the memory, given as occurred_at or as metadata date."""
    first, second = manager.store_memories([
        {"content": "I adopted a cat named Miso", "occurred_at": written},
        {"content": "I repainted the kitchen", "metadata": {"date": written, "speaker": "user"}},
    ])
    found = {r["id"]: r for r in manager.recall_memory("cat Miso kitchen", n_results=5, min_score=0)}
    assert found[first]["occurred_at"] == CHAT_EXPORT_DATES[written]
    assert found[second]["occurred_at"] == CHAT_EXPORT_DATES[written]
    assert found[second]["metadata"]["date"] == written


def test_an_unreadable_occurred_at_refuses_its_item_only(manager):
    stored = manager.store_memories(["kept though its neighbour is refused",
                                     {"content": "x", "occurred_at": "2023/05/20 (Xyz) 99:99"}])
    [refused] = stored.refused
    assert refused.index == 1 and "is not a date; use ISO-8601" in refused.reason
    assert [r["id"] for r in manager.recall_memory("kept though its neighbour", min_score=0)] == list(stored)
    with pytest.raises(ValidationError, match="is not a date; use ISO-8601"):
        manager.store_memory("x", occurred_at="2023/05/20 (Xyz) 99:99")


def test_an_unreadable_metadata_date_is_kept_as_text_with_a_warning(manager, caplog):
    with caplog.at_level(logging.WARNING, logger="core.memory.recall.sources"):
        memory_id = manager.store_memory("the launch party", {"date": "sometime after the launch"})
    assert "memory dated when stored" in caplog.text and "sometime after the launch" in caplog.text
    [found] = [r for r in manager.recall_memory("launch party", min_score=0) if r["id"] == memory_id]
    assert found["metadata"]["date"] == "sometime after the launch"
    assert found["occurred_at"] == found["created_at"]


def test_a_turn_about_a_very_long_time_ago_stores(manager):
    """'10000000 years ago' has no calendar date: the memory stores, dated as said, and is found."""
    text = "the dinosaurs lived 10000000 years ago and 99999999999999999999 days ago, said the guide"
    memory_id = manager.store_memory(text, {"date": "2023/05/20 (Sat) 02:21"})
    assert [r["id"] for r in manager.recall_memory("dinosaurs guide", min_score=0)] == [memory_id]


def test_dates_at_the_ends_of_the_calendar_are_refused_clearly_or_stored():
    with pytest.raises(ValidationError, match="out of range"):
        parse_time("0001-01-01T00:00:00+05:00", "occurred_at")
    assert relative_dates("tomorrow, next month, next year",
                          datetime(9999, 12, 31, tzinfo=timezone.utc)) == []
    assert relative_dates("yesterday, last week", datetime(1, 1, 1, tzinfo=timezone.utc)) == []
    assert relative_dates("yesterday", datetime(5, 3, 2, tzinfo=timezone.utc)) == ["1 March 5"]


ANCHORS = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31),
                       timezones=st.just(timezone.utc))
COUNTS = st.one_of(st.integers(min_value=0, max_value=10**30).map(str),
                   st.sampled_from(["a", "an", "two", "a couple of", "a few", "٣", "१०", "０７", "9" * 5000]))
PHRASES = st.one_of(
    st.builds("{} {}{} ago".format, COUNTS, st.sampled_from(["day", "week", "month", "year", "Year", "YEAR"]),
              st.sampled_from(["", "s"])),
    st.builds("{} {}".format, st.sampled_from(["last", "this", "next", "past", "LAST", "laſt", "Next"]),
              st.sampled_from(["weekend", "week", "month", "year", "monday", "ſunday", "Friday"])),
    st.sampled_from(["yesterday", "today", "tonight", "tomorrow", "this morning", "last night", "yeſterday",
                     "ſix days ago", "A Couple Of years ago"]),
)
TEXTS = st.lists(st.one_of(PHRASES, st.text(max_size=30)), max_size=6).map(" ".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, anchor=ANCHORS)
def test_relative_dates_never_raise_and_give_calendar_dates(text, anchor):
    """Any text said at any moment gives only dates that are on the calendar, never an exception."""
    for phrase in relative_dates(text, anchor):
        last_word = phrase.split()[-1]
        assert last_word.isdigit() and 1 <= int(last_word) <= 9999, phrase
        if phrase.startswith("the weekend of ") or phrase.startswith("the week of ") or phrase[0].isdigit() \
                and len(phrase.split()) == 3:
            day = phrase.removeprefix("the weekend of ").removeprefix("the week of ")
            assert datetime.strptime(day.replace(f" {last_word}", f" {int(last_word):04d}"), "%d %B %Y")


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(max_size=40), PHRASES, st.builds("{} ({})".format, st.text(max_size=12),
                                                                st.text(max_size=6))))
def test_parse_time_reads_or_refuses_with_a_validation_error(text):
    try:
        moment = parse_time(text, "occurred_at")
    except ValidationError:
        return
    assert moment.tzinfo is timezone.utc and 1 <= moment.year <= 9999


def test_until_a_day_takes_in_the_whole_day():
    """``until="2023-05-31"`` (a day without a time) ends with that day; a time or a period is kept as
    given."""
    from core.memory.recall.query import time_bound

    assert time_bound("2023-05-31", "until") == time_bound("2023-05-31T23:59:59.999999", "until")
    assert time_bound("31 May 2023", "until") == time_bound("2023-05-31T23:59:59.999999", "until")
    assert time_bound("2023-05-31 12:00", "until") == time_bound("2023-05-31T12:00:00", "until")
    assert time_bound("2023-05-31", "since") == time_bound("2023-05-31T00:00:00", "since")


NOT_A_TIME = ["-1", "+1", "-5", "1", "31", "32", "99", "1-", "--1", "-1.5", "1.5", "May -1", "2023 -1",
              "10 -1", "5pm", "12:00", "1st"]
"""What a caller may pass by mistake (an offset, a count, a day or a clock time alone): dateutil read most as
a day of January of this year, or as a year ("32" as 2032), so ``expires_at="-1"`` expired a note at
once."""


@pytest.mark.parametrize("text", NOT_A_TIME)
def test_a_value_that_is_not_a_time_is_refused_naming_the_accepted_forms(text):
    with pytest.raises(ValidationError, match=r"is not a date( \(.*\))?; use ISO-8601 .* '8 May 2023'"):
        parse_time(text, "expires_at")


@pytest.mark.parametrize("written, expected", [
    ("2023", "2023-01-01T00:00:00+00:00"), ("May 2023", "2023-05-01T00:00:00+00:00"),
    ("8 May 2023", "2023-05-08T00:00:00+00:00"), ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00+00:00"),
    ("20-May-2023", "2023-05-20T00:00:00+00:00"), ("2023/05/20", "2023-05-20T00:00:00+00:00"),
    ("Mon, 08 May 2023 13:56:00 -0500", "2023-05-08T18:56:00+00:00"),
    ("May 8, 2023 1:56 PM -05:00", "2023-05-08T18:56:00+00:00"),
    ("2023-05-08T13:56:00-05:00", "2023-05-08T18:56:00+00:00"),
])
def test_written_dates_with_a_year_or_a_month_and_zone_offsets_are_read(written, expected):
    assert parse_time(written, "since").isoformat() == expected


def test_a_note_expiring_at_minus_one_or_a_recall_since_minus_one_is_refused_and_nothing_stored(manager):
    """``expires_at="-1"`` was read as 1 January of this year (a note that expired at once) and
    ``since="-1"`` as the same day: both are refused now, and nothing is stored."""
    with pytest.raises(ValidationError, match="expires_at '-1' is not a date"):
        manager.store_memory("the deploy target is fly.io", expires_at="-1")
    with pytest.raises(ValidationError, match="since '-1' is not a date"):
        manager.recall_memory("deploy target", since="-1")
    with pytest.raises(ValidationError, match="since '-1' is not a date"):
        manager.recall_memory(since="-1")
    assert manager.recall_memory("deploy target", min_score=0) == []
