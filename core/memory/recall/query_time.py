"""The time a query speaks of, as soft evidence for recall.

"What did I cook a couple of days ago?", "which shoes did I clean last month?",
"the concert in March": a memory from that time is more likely the answer.
:func:`query_windows` reads such phrases against the moment the query is asked
(``now``), and :func:`time_fit` says how well a memory's time matches them: 1
inside a window, falling off with the distance outside it. It is one more piece
of evidence in the score, never a filter: people misremember dates, and a
question that names a time may still be answered by a memory from another.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from core.memory.recall.search import Candidate, logit, sigmoid
from core.memory.recall.when import parse_time

Window = tuple[datetime, datetime]

NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3, "several": 3}
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_COUNT = r"\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True))
_PHRASE = re.compile(
    r"\b(?:(?P<simple>yesterday|today|tonight|this morning|last night)"
    r"|(?P<dir>last|this|past) (?P<unit>weekend|week|month|year|" + "|".join(WEEKDAYS) + r")"
    r"|(?:the )?(?P<weekday>" + "|".join(WEEKDAYS) + r")s? (?P<count2>" + _COUNT + r") (?P<unit3>week|month)s? ago"
    r"|(?P<count>" + _COUNT + r") (?P<unit2>day|week|month|year)s? ago"
    r"|(?P<month_in>in|during|since) (?P<month>" + "|".join(_MONTHS) + r")(?: (?P<year>\d{4}))?)\b",
    re.IGNORECASE,
)


def query_windows(text: str, now: datetime | None = None) -> list[Window]:
    """The time windows ``text`` speaks of, read from ``now`` (default: the current time), oldest phrase first.

    "two weeks ago" asked on 1 February 2023 is the week around 18 January (a count of units is
    approximate: half a unit either side), "last month" is January 2023, "in March" is the latest
    March up to ``now``. A phrase whose date falls outside the calendar gives nothing.
    """
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    found: list[Window] = []
    for match in _PHRASE.finditer(text):
        try:
            window = _window(match, moment)
        except (OverflowError, ValueError):  # before year 1 or after 9999
            continue
        if window and window not in found:
            found.append(window)
    return found


def time_fit(occurred_at: datetime, windows: list[Window]) -> float:
    """How well ``occurred_at`` matches the best of ``windows``: 1 inside, halving outside for every half
    of the window's length (a day at least: "yesterday" may be the day before); 0 with no window."""
    best = 0.0
    for start, end in windows:
        if start <= occurred_at < end:
            return 1.0
        gap = (start - occurred_at if occurred_at < start else occurred_at - end).total_seconds() / 86400
        spread = max(1.0, (end - start).total_seconds() / 86400 / 2)
        best = max(best, 0.5 ** (gap / spread))
    return best


def rescore(cands: list[Candidate], query: str, now: datetime | None, weight: float) -> list[Candidate]:
    """``cands`` with the fit of their time to the query's (feature ``time``) added to their evidence,
    best first; unchanged when the query names no time."""
    windows = query_windows(query, now)
    if not windows:
        return cands
    for cand in cands:
        fit = time_fit(parse_time(cand.doc.occurred_at), windows)
        cand.features["time"] = round(fit, 4)
        cand.score = sigmoid(logit(cand.score) + weight * fit)
    return sorted(cands, key=lambda c: c.score, reverse=True)


def _window(match: re.Match, now: datetime) -> Window | None:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if simple := (match.group("simple") or "").casefold():
        day = today - timedelta(days=1 if simple in ("yesterday", "last night") else 0)
        return day, day + timedelta(days=1)
    if match.group("count"):
        days = _count(match.group("count")) * _UNIT_DAYS[match.group("unit2").casefold()]
        half = _UNIT_DAYS[match.group("unit2").casefold()] / 2 + 1
        return today - timedelta(days=days + half), today - timedelta(days=days - half - 1)
    if match.group("weekday"):  # "the Wednesday two months ago"
        days = _count(match.group("count2")) * _UNIT_DAYS[match.group("unit3").casefold()]
        half = _UNIT_DAYS[match.group("unit3").casefold()] / 2 + 1
        return today - timedelta(days=days + half), today - timedelta(days=days - half - 1)
    if match.group("month"):
        return _month(match, now)
    return _named_period(match.group("dir").casefold(), match.group("unit").casefold(), today)


def _named_period(direction: str, unit: str, today: datetime) -> Window:
    if unit in WEEKDAYS:
        back = (today.weekday() - WEEKDAYS.index(unit)) % 7 or (7 if direction == "last" else 0)
        day = today - timedelta(days=back)
        return day, day + timedelta(days=1)
    if direction == "past":  # "the past month": the month up to today
        return today - timedelta(days=_UNIT_DAYS.get(unit, 7)), today + timedelta(days=1)
    step = -1 if direction == "last" else 0
    if unit == "weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7 or (7 if step else 0))
        return saturday, saturday + timedelta(days=2)
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(days=7 * step)
        return monday, monday + timedelta(days=7)
    if unit == "month":
        first = today.replace(day=1)
        start = (first - timedelta(days=1)).replace(day=1) if step else first
        return start, _next_month(start)
    start = today.replace(year=today.year + step, month=1, day=1)
    return start, start.replace(year=start.year + 1)


def _month(match: re.Match, now: datetime) -> Window:
    month = _MONTHS.index(match.group("month").casefold()) + 1
    if match.group("year"):
        year = int(match.group("year"))
    else:  # the latest such month up to now
        year = now.year if month <= now.month else now.year - 1
    start = datetime(year, month, 1, tzinfo=timezone.utc)
    end = _next_month(start)
    if match.group("month_in").casefold() == "since":
        end = now
    return start, end


def _next_month(start: datetime) -> datetime:
    return (start.replace(day=28) + timedelta(days=4)).replace(day=1)


def _count(text: str) -> int:
    text = text.casefold()
    return int(text) if text.isdecimal() else NUMBERS[text]
