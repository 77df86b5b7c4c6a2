"""The time a query names ("two weeks ago", "last month", "in March") as soft evidence for recall, and the
periods since/until name ("last week", "3 days ago")."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import ValidationError
from core.memory.recall.when import query_times, query_windows, time_fit, time_window, without_counts_back

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
    asked = query_times("which shoes did I clean last month?", NOW)
    inside, near, far = (time_fit(day(d), asked) for d in ("2023-01-18", "2022-12-20", "2022-06-01"))
    assert inside == 1.0 and 0.0 < far < near < 1.0


def test_a_count_back_names_a_day_and_prefers_it_to_the_edges_of_its_window():
    """"two weeks ago" asked on 1 February is 18 January: the days around it fit less the further they are,
    even inside the week around it that the count's window holds."""
    [asked] = query_times("an art exhibit two weeks ago", NOW)
    assert asked.day == day("2023-01-18") and asked.start < day("2023-01-15") < asked.end
    on, near, edge, out = (time_fit(day(d), [asked]) for d in ("2023-01-18T21:00", "2023-01-17", "2023-01-15",
                                                                 "2023-01-08"))
    assert on == 1.0 and 1.0 > near > edge > out > 0.0
    periods = query_times("what did I do last month, in March, and yesterday", NOW)
    assert [a.day for a in periods] == [None] * 3


def test_the_words_of_a_count_back_are_left_out_of_the_query_by_meaning():
    assert without_counts_back("What did I buy four weeks ago?") == "What did I buy ?"
    assert without_counts_back("what did I do with Rachel on the Wednesday two months ago") == \
        "what did I do with Rachel on"
    assert without_counts_back("which shoes did I clean last month, in March?") == \
        "which shoes did I clean last month, in March?"
    assert without_counts_back("two weeks ago") == "two weeks ago"  # nothing else would be left


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["0", "9", "99999999999", " ", "days ago", "weeks ago", "years ago",
                                 "in March",
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


def test_recall_prefers_the_day_a_count_back_names_to_another_day_of_its_week(manager):
    on_the_day, three_days_later = manager.store_memories([
        {"content": "I visited the pottery exhibit downtown", "metadata": {"date": "2023/01/18 (Wed) 10:00"}},
        {"content": "I visited the pottery exhibit downtown", "metadata": {"date": "2023/01/21 (Sat) 10:00"}},
    ])
    first, second = manager.recall_memory("which exhibit did I visit two weeks ago?", n_results=2,
                                           min_score=0, now="2023/02/01 (Wed) 08:41")
    assert (first["id"], second["id"]) == (on_the_day, three_days_later)
    assert first["score"] > second["score"]


def test_a_memory_that_counts_back_itself_is_not_closer_in_meaning_for_it(manager):
    """A memory that says "three weeks ago" speaks of another day than a question's "four weeks ago": the
    vectors are searched without the count, so its words bring it no closer."""
    repotted = manager.store_memory("I repotted my spider plant three weeks ago and it is doing much better")

    def similarity(query: str) -> float:
        found = manager.recall_memory(query, n_results=5, min_score=0, now="2023/03/28 (Tue) 20:35",
                                      explain=True)["results"]
        return next(r["why"]["vector"] for r in found if r["id"] == repotted)

    assert similarity("what plant did I repot four weeks ago?") == similarity("what plant did I repot?")


def test_an_unreadable_now_is_refused(manager):
    with pytest.raises(ValidationError, match="now"):
        manager.recall_memory("pottery", now="the day after")


# -- every phrase at five moments, as since/until and as the time a query names ---------------------------
# The two readings differ on purpose ("this Friday" is the one gone by for since/until, today for a query
# asked on a Friday; "the past month" is a calendar month there, the 31 days up to today here; counted units
# are approximate for a query). A cell is the window's first day (T12: from noon) and its length in days, or
# ~now when it ends at the moment asked; "-" is no window. Columns: the moments of MOMENTS.

MOMENTS = (
    datetime(2023, 5, 8, 14, 30, tzinfo=timezone.utc),  # a Monday
    datetime(2023, 5, 14, 9, 15, tzinfo=timezone.utc),  # a Sunday
    datetime(2022, 1, 1, 10, 0, tzinfo=timezone.utc),  # New Year's Day, a Saturday
    datetime(2024, 2, 29, 23, 59, tzinfo=timezone.utc),  # a leap day, a Thursday
    datetime(2023, 3, 31, 6, 0, tzinfo=timezone.utc),  # the 31st of a month after a short one, a Friday
)
FIRST_DAY = datetime(1, 1, 1, tzinfo=timezone.utc)  # a Monday
LAST_MINUTE = datetime(9999, 12, 31, 23, 59, tzinfo=timezone.utc)  # a Friday

SINCE_UNTIL = """
yesterday    | 2023-05-07+1 2023-05-13+1 2021-12-31+1 2024-02-28+1 2023-03-30+1
today        | 2023-05-08+1 2023-05-14+1 2022-01-01+1 2024-02-29+1 2023-03-31+1
tonight      | 2023-05-08+1 2023-05-14+1 2022-01-01+1 2024-02-29+1 2023-03-31+1
tomorrow     | 2023-05-09+1 2023-05-15+1 2022-01-02+1 2024-03-01+1 2023-04-01+1
this morning | 2023-05-08+1 2023-05-14+1 2022-01-01+1 2024-02-29+1 2023-03-31+1
last night   | 2023-05-07+1 2023-05-13+1 2021-12-31+1 2024-02-28+1 2023-03-30+1

last week     | 2023-05-01+7   2023-05-01+7   2021-12-20+7   2024-02-19+7   2023-03-20+7
last weekend  | 2023-05-06+2   2023-05-13+2   2021-12-25+2   2024-02-24+2   2023-03-25+2
last month    | 2023-04-01+30  2023-04-01+30  2021-12-01+31  2024-01-01+31  2023-02-01+28
last year     | 2022-01-01+365 2022-01-01+365 2021-01-01+365 2023-01-01+365 2022-01-01+365
last monday   | 2023-05-01+1   2023-05-08+1   2021-12-27+1   2024-02-26+1   2023-03-27+1
last thursday | 2023-05-04+1   2023-05-11+1   2021-12-30+1   2024-02-22+1   2023-03-30+1
last friday   | 2023-05-05+1   2023-05-12+1   2021-12-31+1   2024-02-23+1   2023-03-24+1
last saturday | 2023-05-06+1   2023-05-13+1   2021-12-25+1   2024-02-24+1   2023-03-25+1
last sunday   | 2023-05-07+1   2023-05-07+1   2021-12-26+1   2024-02-25+1   2023-03-26+1

this week     | 2023-05-08+7   2023-05-08+7   2021-12-27+7   2024-02-26+7   2023-03-27+7
this weekend  | 2023-05-06+2   2023-05-13+2   2021-12-25+2   2024-02-24+2   2023-03-25+2
this month    | 2023-05-01+31  2023-05-01+31  2022-01-01+31  2024-02-01+29  2023-03-01+31
this year     | 2023-01-01+365 2023-01-01+365 2022-01-01+365 2024-01-01+366 2023-01-01+365
this monday   | 2023-05-01+1   2023-05-08+1   2021-12-27+1   2024-02-26+1   2023-03-27+1
this thursday | 2023-05-04+1   2023-05-11+1   2021-12-30+1   2024-02-22+1   2023-03-30+1
this friday   | 2023-05-05+1   2023-05-12+1   2021-12-31+1   2024-02-23+1   2023-03-24+1
this saturday | 2023-05-06+1   2023-05-13+1   2021-12-25+1   2024-02-24+1   2023-03-25+1
this sunday   | 2023-05-07+1   2023-05-07+1   2021-12-26+1   2024-02-25+1   2023-03-26+1

next week     | 2023-05-15+7   2023-05-15+7   2022-01-03+7   2024-03-04+7   2023-04-03+7
next weekend  | 2023-05-13+2   2023-05-20+2   2022-01-08+2   2024-03-02+2   2023-04-01+2
next month    | 2023-06-01+30  2023-06-01+30  2022-02-01+28  2024-03-01+31  2023-04-01+30
next year     | 2024-01-01+366 2024-01-01+366 2023-01-01+365 2025-01-01+365 2024-01-01+366
next monday   | 2023-05-15+1   2023-05-15+1   2022-01-03+1   2024-03-04+1   2023-04-03+1
next thursday | 2023-05-11+1   2023-05-18+1   2022-01-06+1   2024-03-07+1   2023-04-06+1
next friday   | 2023-05-12+1   2023-05-19+1   2022-01-07+1   2024-03-01+1   2023-04-07+1
next saturday | 2023-05-13+1   2023-05-20+1   2022-01-08+1   2024-03-02+1   2023-04-01+1
next sunday   | 2023-05-14+1   2023-05-21+1   2022-01-02+1   2024-03-03+1   2023-04-02+1

past week     | 2023-05-01+7   2023-05-01+7   2021-12-20+7   2024-02-19+7   2023-03-20+7
past weekend  | 2023-05-06+2   2023-05-13+2   2021-12-25+2   2024-02-24+2   2023-03-25+2
past month    | 2023-04-01+30  2023-04-01+30  2021-12-01+31  2024-01-01+31  2023-02-01+28
past year     | 2022-01-01+365 2022-01-01+365 2021-01-01+365 2023-01-01+365 2022-01-01+365
past monday   | 2023-05-01+1   2023-05-08+1   2021-12-27+1   2024-02-26+1   2023-03-27+1
past thursday | 2023-05-04+1   2023-05-11+1   2021-12-30+1   2024-02-22+1   2023-03-30+1
past friday   | 2023-05-05+1   2023-05-12+1   2021-12-31+1   2024-02-23+1   2023-03-24+1
past saturday | 2023-05-06+1   2023-05-13+1   2021-12-25+1   2024-02-24+1   2023-03-25+1
past sunday   | 2023-05-07+1   2023-05-07+1   2021-12-26+1   2024-02-25+1   2023-03-26+1

3 days ago            | 2023-05-05+1   2023-05-11+1   2021-12-29+1   2024-02-26+1   2023-03-28+1
1 day ago             | 2023-05-07+1   2023-05-13+1   2021-12-31+1   2024-02-28+1   2023-03-30+1
two weeks ago         | 2023-04-24+7   2023-04-24+7   2021-12-13+7   2024-02-12+7   2023-03-13+7
a few weeks ago       | 2023-04-17+7   2023-04-17+7   2021-12-06+7   2024-02-05+7   2023-03-06+7
a month ago           | 2023-04-01+30  2023-04-01+30  2021-12-01+31  2024-01-01+31  2023-03-01+31
10 months ago         | 2022-07-01+31  2022-07-01+31  2021-03-01+31  2023-05-01+31  2022-06-01+30
a couple of years ago | 2021-01-01+365 2021-01-01+365 2020-01-01+366 2022-01-01+365 2021-01-01+365
Last Friday           | 2023-05-05+1   2023-05-12+1   2021-12-31+1   2024-02-23+1   2023-03-24+1
LAST WEEK             | 2023-05-01+7   2023-05-01+7   2021-12-20+7   2024-02-19+7   2023-03-20+7
"""
# "=": the same period as a since/until bound reads (both take calendar periods from one function).
QUERY_WINDOWS = """
yesterday    | =
today        | =
tonight      | =
this morning | =
last night   | =

last week     | =
last weekend  | =
last month    | =
last year     | =
last monday   | =
last thursday | =
last friday   | =
last saturday | =
last sunday   | =

this week     | =
this weekend  | 2023-05-06+2   2023-05-13+2   2022-01-01+2   2024-02-24+2   2023-03-25+2
this month    | =
this year     | =
this monday   | 2023-05-08+1   2023-05-08+1   2021-12-27+1   2024-02-26+1   2023-03-27+1
this thursday | 2023-05-04+1   2023-05-11+1   2021-12-30+1   2024-02-29+1   2023-03-30+1
this friday   | 2023-05-05+1   2023-05-12+1   2021-12-31+1   2024-02-23+1   2023-03-31+1
this saturday | 2023-05-06+1   2023-05-13+1   2022-01-01+1   2024-02-24+1   2023-03-25+1
this sunday   | 2023-05-07+1   2023-05-14+1   2021-12-26+1   2024-02-25+1   2023-03-26+1

past week     | 2023-05-01+8   2023-05-07+8   2021-12-25+8   2024-02-22+8   2023-03-24+8
past weekend  | 2023-05-01+8   2023-05-07+8   2021-12-25+8   2024-02-22+8   2023-03-24+8
past month    | 2023-04-08+31  2023-04-14+31  2021-12-02+31  2024-01-30+31  2023-03-01+31
past year     | 2022-05-08+366 2022-05-14+366 2021-01-01+366 2023-03-01+366 2022-03-31+366
past monday   | 2023-05-08+1   2023-05-08+1   2021-12-27+1   2024-02-26+1   2023-03-27+1
past thursday | 2023-05-04+1   2023-05-11+1   2021-12-30+1   2024-02-29+1   2023-03-30+1
past friday   | 2023-05-05+1   2023-05-12+1   2021-12-31+1   2024-02-23+1   2023-03-31+1
past saturday | 2023-05-06+1   2023-05-13+1   2022-01-01+1   2024-02-24+1   2023-03-25+1
past sunday   | 2023-05-07+1   2023-05-14+1   2021-12-26+1   2024-02-25+1   2023-03-26+1

3 days ago         | 2023-05-03T12+4   2023-05-09T12+4   2021-12-27T12+4   2024-02-24T12+4   2023-03-26T12+4
a few days ago     | 2023-05-03T12+4   2023-05-09T12+4   2021-12-27T12+4   2024-02-24T12+4   2023-03-26T12+4
two weeks ago      | 2023-04-19T12+10  2023-04-25T12+10  2021-12-13T12+10  2024-02-10T12+10  2023-03-12T12+10
Fridays a week ago | 2023-04-26T12+10  2023-05-02T12+10  2021-12-20T12+10  2024-02-17T12+10  2023-03-19T12+10
several years ago  | 2019-11-06T12+368 2019-11-12T12+368 2018-07-02T12+368 2020-08-29T12+368 2019-09-29T12+368

a month ago                  | 2023-03-23+33 2023-03-29+33 2021-11-16+33 2024-01-14+33 2023-02-13+33
the Wednesday two months ago | 2023-02-21+33 2023-02-27+33 2021-10-17+33 2023-12-15+33 2023-01-14+33
Last Friday                  | =

in March            | 2023-03-01+31  2023-03-01+31  2021-03-01+31  2023-03-01+31  2023-03-01+31
in February         | 2023-02-01+28  2023-02-01+28  2021-02-01+28  2024-02-01+29  2023-02-01+28
during December     | 2022-12-01+31  2022-12-01+31  2021-12-01+31  2023-12-01+31  2022-12-01+31
in May 2023         | 2023-05-01+31  2023-05-01+31  2023-05-01+31  2023-05-01+31  2023-05-01+31
since March         | 2023-03-01~now 2023-03-01~now 2021-03-01~now 2023-03-01~now 2023-03-01~now
since February 2024 | 2024-02-01~now 2024-02-01~now 2024-02-01~now 2024-02-01~now 2024-02-01~now

next week   | - - - - -
last 3 days | - - - - -
on Monday   | - - - - -
"""


def rows(table: str) -> dict[str, list[str]]:
    lines = (line.split("|") for line in table.strip().splitlines() if line.strip())
    return {phrase.strip(): cells.split() for phrase, cells in lines}


def query_rows() -> dict[str, list[str]]:
    """QUERY_WINDOWS' rows, "=" replaced by the since/until row of the same phrase."""
    since = rows(SINCE_UNTIL)
    return {phrase: since[phrase] if cells == ["="] else cells for phrase,
            cells in rows(QUERY_WINDOWS).items()}


def cell(start: datetime, end: datetime, now: datetime) -> str:
    assert start.minute == start.second == start.microsecond == 0, start  # the cell would not show them
    day = f"{start:%Y-%m-%d}" + (f"T{start:%H}" if start.hour else "")
    if end == now:
        return f"{day}~now"
    days = (end - start) / timedelta(days=1)
    return f"{day}+{days:.0f}" if days.is_integer() else f"{day}~{end.isoformat()}"


def since_until(phrase: str, now: datetime) -> str:
    try:
        start = time_window(phrase, "since", "start", now)
        last = time_window(phrase, "until", "end", now)
    except ValidationError:
        return "refused"
    return cell(start, last + timedelta(microseconds=1), now)


def windows(phrase: str, now: datetime) -> str:
    return ",".join(cell(start, end, now) for start, end in query_windows(phrase, now)) or "-"


@pytest.mark.parametrize("phrase", rows(SINCE_UNTIL))
def test_since_and_until_read_a_relative_phrase_as_one_calendar_period(phrase):
    assert [since_until(phrase, now) for now in MOMENTS] == rows(SINCE_UNTIL)[phrase]


@pytest.mark.parametrize("phrase", query_rows())
def test_a_query_reads_the_time_it_names_from_the_moment_it_is_asked(phrase):
    assert [windows(phrase, now) for now in MOMENTS] == query_rows()[phrase]


def test_a_weekday_alone_as_since_or_until_is_the_last_one():
    """"Monday" or "on Friday" is read as "last Monday" (the one before today), not as a Monday of January."""
    for phrase, weekday in (("Monday", "monday"), ("on Friday", "friday"), ("  on   sunday ", "sunday")):
        assert [since_until(phrase, now) for now in MOMENTS] == rows(SINCE_UNTIL)[f"last {weekday}"]


def test_repeated_and_several_times_in_a_query_give_each_window_once():
    now = MOMENTS[0]
    assert windows("yesterday or last week, I think last week", now) == "2023-05-07+1,2023-05-01+7"


def test_at_the_ends_of_the_calendar_only_periods_inside_it_are_read():
    """A period that starts before year 1 or ends in year 10000 is refused as since/until, no query window."""
    from_today_on = ["today", "tonight", "tomorrow", "this morning", "this week", "this month", "this year",
                     "next week", "next weekend", "next month", "next year", "next monday", "next thursday",
                     "next friday", "next saturday", "next sunday"]
    assert [p for p in rows(SINCE_UNTIL) if since_until(p, FIRST_DAY) != "refused"] == from_today_on
    # "a month ago" on 31 December 9999 is all of December, which ends in year 10000
    assert [p for p in rows(SINCE_UNTIL) if since_until(p, LAST_MINUTE) == "refused"] == from_today_on + [
        "a month ago"]
    assert [p for p in rows(QUERY_WINDOWS) if windows(p, FIRST_DAY) != "-"] == [
        "today", "tonight", "this morning", "this week", "this month", "this year", "this monday",
        "past monday", "in May 2023", "since February 2024"]
    assert [p for p in rows(QUERY_WINDOWS) if windows(p, LAST_MINUTE) == "-"] == [
        "today", "tonight", "this morning", "this week", "this month", "this year", "this friday",
        "past week", "past weekend", "past month", "past year", "past friday", "during December",
        "next week", "last 3 days", "on Monday"]
