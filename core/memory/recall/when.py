"""Times of memories: when something happened, as people write it.

- :func:`parse_time` reads a datetime, ISO-8601 text, or a human-written date
  ("1:56 pm on 8 May, 2023", "8 May 2023", "May 2023", "2023/05/20 (Sat) 02:21",
  "20 May 2023, 14:05") with python-dateutil, and returns it in UTC (a time
  without a zone is taken as UTC).
- :func:`relative_dates` finds "yesterday", "last week", "two days ago", "last
  Friday" ... in a text and resolves them against the moment it was said, so
  an item stored on 8 May that says "yesterday" is also found as 7 May.
- :func:`day_words` writes a moment the ways people ask about it
  ("8 May 2023", "May 2023", "Monday").
- :func:`query_times` reads the time a query speaks of ("two weeks ago", "last
  month", "in March", "the Wednesday two months ago") from the moment it is asked,
  and :func:`time_fit` says how well a memory's time matches it: 1 inside (or on the
  day a count back names), falling off outside. Recall uses it as one more piece of
  evidence, never as a filter: people misremember dates, and a question that names a
  time may still be answered by a memory from another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from core.errors import ValidationError, shown

Window = tuple[datetime, datetime]  # [start, end) in UTC

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
_QUERY_NUMBERS = {**_NUMBERS, "several": 3}  # only a query's approximate window reads "several"
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_DAY_OFFSETS = {"yesterday": -1, "last night": -1, "tomorrow": 1}  # "today", "tonight": the day itself
_RELATIVE = re.compile(
    r"\b(?:(?P<simple>yesterday|today|tonight|tomorrow|this morning|last night)"
    r"|(?P<dir>last|this|next|past) (?P<unit>weekend|week|month|year|" + "|".join(_WEEKDAYS) + r")"
    r"|(?P<count>\d+|" + "|".join(sorted(_NUMBERS, key=len, reverse=True))
    + r") (?P<unit2>day|week|month|year)s? ago)\b",
    re.IGNORECASE,
)
_BARE_WEEKDAY = re.compile(r"(?:on\s+)?(?P<unit>" + "|".join(_WEEKDAYS) + r")", re.IGNORECASE)
"""A since/until of a weekday alone ("Monday", "on Friday"): the last one, as "last Monday" (dateutil would
read it as a Monday of January)."""
_EPOCH = datetime(2000, 1, 1)
# A weekday in parentheses ("2023/05/20 (Sat) 02:21", as chat exports write it) says nothing the date
# does not, and dateutil refuses the parentheses.
_WEEKDAY_IN_PARENS = re.compile(
    r"\(\s*(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|urday)?\.?\s*\)", re.IGNORECASE)


def parse_time(value: Any, what: str = "time") -> datetime:
    """``value`` (datetime, ISO-8601 or human-written text) as an aware UTC datetime.

    Raises:
        ValidationError: the value is not a time (the message shows an accepted form).
    """
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            moment = _parse_human(text, what)
    else:
        raise ValidationError(f"{what} must be a datetime or a date such as '2023-05-08' or "
                              f"'1:56 pm on 8 May, 2023', got {shown(value)}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError as exc:  # 0001-01-01 east of UTC, 9999-12-31 west of it
        raise ValidationError(f"{what} {value!r} is out of range: use a date from year 1 to 9999") from exc


def _parse_human(text: str, what: str) -> datetime:
    from dateutil import parser

    cleaned = re.sub(r"\s+on\s+", " ", _WEEKDAY_IN_PARENS.sub(" ", text))  # "1:56 pm on 8 May, 2023"
    try:
        # Missing fields default to the start of the period ("May 2023" is 1 May), never to today.
        moment = parser.parse(cleaned, default=_EPOCH.replace(year=datetime.now().year))
        # Read again with other defaults: a field that changes with them is one the text does not give.
        other = parser.parse(cleaned, default=_OTHER_DEFAULT)
    except (ValueError, OverflowError) as exc:
        raise ValidationError(_not_a_date(what, text)) from exc
    if _STRAY_SIGN.search(_ZONE_OFFSET.sub(r"\1", cleaned)):
        raise ValidationError(_not_a_date(what, text, "a number with a sign is no part of a date"))
    if cleaned.strip().isdecimal() and len(cleaned.strip()) != 4:
        raise ValidationError(_not_a_date(what, text, "a number alone must be a year of four digits"))
    if moment.year != other.year and moment.month != other.month:
        raise ValidationError(_not_a_date(what, text, "it names neither a year nor a month"))
    return moment


_OTHER_DEFAULT = datetime(4, 12, 1)
"""Defaults unlike ``_EPOCH``'s in year and month (both months of 31 days, so a day the text gives fits)."""
_ZONE_OFFSET = re.compile(r"(\d:\d\d(?::\d\d(?:\.\d+)?)?(?:\s*[ap]\.?m\.?)?)\s*[-+]\d\d:?\d\d\b",
                          re.IGNORECASE)
"""A zone offset after a clock time (``13:56:00 -0500``): the one place a signed number belongs in a date."""
_STRAY_SIGN = re.compile(r"(?:^|[\s,(])[-+]+\d|\d[-+]+(?:[\s,)]|$)")
"""A signed number (``-1``, ``+3``, ``May -1``) or a number with a trailing sign (``1-``): dateutil skips the
sign and reads the number as a day or a year, so ``-1`` was 1 January of this year."""


def _not_a_date(what: str, text: str, why: str = "") -> str:
    because = f" ({why})" if why else ""
    return (f"{what} {shown(text)} is not a date{because}; use ISO-8601 ('2023-05-08T13:56:00Z') or a "
            "written date such as '8 May 2023' or '1:56 pm on 8 May, 2023'")


def day_words(moment: datetime) -> str:
    """``moment``'s day as people name it: ``8 May 2023, May 2023, Monday``."""
    return f"{moment.day} {moment:%B} {moment.year}, {moment:%B} {moment.year}, {moment:%A}"


def relative_dates(text: str, anchor: datetime) -> list[str]:
    """Absolute dates for the relative time words in ``text``, said at ``anchor``.

    ``"I ran a 5K yesterday"`` said on 8 May 2023 gives ``["7 May 2023"]``; "last
    week" gives the week ("the week of 1 May 2023"), "last month" the month. A phrase whose date
    falls outside the calendar (year 1 to 9999), such as "10000000 years ago", gives nothing.
    """
    found = []
    for match in _RELATIVE.finditer(text):
        try:
            phrase = _resolve(match, anchor)
        except (OverflowError, ValueError):  # before year 1 or after 9999: no date to index
            continue
        if phrase and phrase not in found:
            found.append(phrase)
    return found


def _resolve(match: re.Match, anchor: datetime) -> str | None:
    # casefold, not lower: the case-blind pattern also matches "ſix" or "laſt" (long s), which lower() keeps.
    simple = (match.group("simple") or "").casefold()
    if simple:
        offset = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(simple, 0)
        return _date(anchor + timedelta(days=offset))
    if match.group("count"):
        count_text = match.group("count").casefold()
        count = int(count_text) if count_text.isdecimal() else _NUMBERS[count_text]
        unit = match.group("unit2").casefold()
        return _period(anchor - timedelta(days=count * _UNIT_DAYS[unit]), unit)
    direction, unit = match.group("dir").casefold(), match.group("unit").casefold()
    step = {"last": -1, "past": -1, "this": 0, "next": 1}[direction]
    if unit in _WEEKDAYS:
        delta = (anchor.weekday() - _WEEKDAYS.index(unit)) % 7 or 7
        return _date(anchor - timedelta(days=delta) if step <= 0 else anchor + timedelta(days=7 - delta or 7))
    if unit == "weekend":
        saturday = anchor - timedelta(days=(anchor.weekday() - 5) % 7 or 7) if step <= 0 else \
            anchor + timedelta(days=(5 - anchor.weekday()) % 7 or 7)
        return f"the weekend of {_date(saturday)}"
    if unit == "week":
        return _period(anchor + timedelta(days=7 * step), "week")
    if unit == "month":
        month = (anchor.month - 1 + step) % 12 + 1
        year = anchor.year + (anchor.month - 1 + step) // 12
        return f"{datetime(year, month, 1):%B} {year}"
    return str(datetime(anchor.year + step, 1, 1).year)  # ValueError past year 9999


def _date(moment: datetime) -> str:
    return f"{moment.day} {moment:%B} {moment.year}"


def _period(moment: datetime, unit: str) -> str:
    if unit == "day":
        return _date(moment)
    if unit == "week":
        return f"the week of {_date(moment - timedelta(days=moment.weekday()))}"
    if unit == "month":
        return f"{moment:%B} {moment.year}"
    return str(moment.year)


def time_window(value: Any, what: str, edge: str, now: datetime | None = None) -> datetime:
    """A ``since`` (``edge="start"``) or ``until`` (``edge="end"``) bound: what :func:`parse_time` reads, or a
    relative phrase such as "last week", "yesterday" or "3 days ago", which names a period: ``since`` is its
    first moment and ``until`` its last, so ``since="last week", until="last week"`` is that whole week.

    Raises:
        ValidationError: the value is neither a time nor a relative phrase.
    """
    text = value.strip() if isinstance(value, str) else ""
    if bare := _BARE_WEEKDAY.fullmatch(text):
        text = f"last {bare['unit']}"
    match = _RELATIVE.fullmatch(text) if text else None
    if match is None:
        try:
            return parse_time(value, what)
        except ValidationError as exc:
            raise ValidationError(f"{exc}, or a period such as 'last week', 'yesterday' or "
                                  "'3 days ago'") from exc
    anchor = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    try:
        start, end = _relative_period(match, anchor)
    except (OverflowError, ValueError) as exc:
        raise ValidationError(f"{what} {value!r} falls outside the calendar (year 1 to 9999)") from exc
    return start if edge == "start" else end - timedelta(microseconds=1)


def _relative_period(match: re.Match, anchor: datetime) -> Window:
    """The period a relative phrase names, as ``[start, end)`` in UTC: whole calendar days, weeks, months or
    years, since a since/until bound is a filter and must say exactly what it keeps."""
    day = anchor.replace(hour=0, minute=0, second=0, microsecond=0)
    if simple := (match.group("simple") or "").casefold():
        return _period_of(day + timedelta(days=_DAY_OFFSETS.get(simple, 0)), "day")
    if match.group("count"):
        unit = match.group("unit2").casefold()
        return _period_of(day - timedelta(days=_count(match.group("count")) * _UNIT_DAYS[unit]), unit)
    step = {"last": -1, "past": -1, "this": 0, "next": 1}[match.group("dir").casefold()]
    unit = match.group("unit").casefold()
    if unit in _WEEKDAYS or unit == "weekend":
        step = step or -1  # "this Friday" is the one gone by, the day relative_dates gives for it
    return _calendar_period(unit, step, day)


# -- calendar periods, shared by since/until and the time a query names -----------------------------


def _calendar_period(unit: str, step: int, day: datetime) -> Window:
    """The weekday, weekend, week (Monday on), month or year ``step`` from ``day``'s, as ``[start, end)``.

    Both readings of a relative phrase take their calendar periods from here, so that "last week" or "last
    month" names the same days as a since/until bound and in a query. ``step`` is -1 for the last, 0 for
    this and 1 for the next; a weekday or weekend is the one before ``day`` (-1), on or before it (0), or
    after it (1).
    """
    if unit in _WEEKDAYS:
        start = _nearest_weekday(day, _WEEKDAYS.index(unit), step)
        return start, start + timedelta(days=1)
    if unit == "weekend":
        saturday = _nearest_weekday(day, _WEEKDAYS.index("saturday"), step)
        return saturday, saturday + timedelta(days=2)
    if unit == "week":
        return _period_of(day + timedelta(days=7 * step), "week")
    if unit == "month":
        month0 = day.month - 1 + step
        return _period_of(day.replace(year=day.year + month0 // 12, month=month0 % 12 + 1, day=1), "month")
    return _period_of(day.replace(year=day.year + step, month=1, day=1), "year")


def _nearest_weekday(day: datetime, weekday: int, step: int) -> datetime:
    """The ``weekday`` (0 is Monday) after ``day`` (``step`` 1), before it (-1) or on or before it (0)."""
    if step > 0:
        return day + timedelta(days=(weekday - day.weekday()) % 7 or 7)
    return day - timedelta(days=(day.weekday() - weekday) % 7 or (7 if step else 0))


def _period_of(day: datetime, unit: str) -> Window:
    """The day, week (Monday on), month or year holding ``day``, as ``[start, end)``."""
    if unit == "day":
        return day, day + timedelta(days=1)
    if unit == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    if unit == "month":
        start = day.replace(day=1)
        return start, _next_month(start)
    start = day.replace(month=1, day=1)
    return start, start.replace(year=start.year + 1)


def _next_month(start: datetime) -> datetime:
    return (start.replace(day=28) + timedelta(days=4)).replace(day=1)


def _count(text: str) -> int:
    """A count as written: digits (in any script) or a word such as "a couple of" or "several"."""
    text = text.casefold()
    return int(text) if text.isdecimal() else _QUERY_NUMBERS[text]


# -- the time a query speaks of ---------------------------------------------------------------------

_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]
_COUNT = r"\d+|" + "|".join(sorted(_QUERY_NUMBERS, key=len, reverse=True))
_PHRASE = re.compile(
    r"\b(?:(?P<simple>yesterday|today|tonight|this morning|last night)"
    r"|(?P<dir>last|this|past) (?P<unit>weekend|week|month|year|" + "|".join(_WEEKDAYS) + r")"
    r"|(?:the )?(?P<weekday>" + "|".join(_WEEKDAYS) + r")s? (?P<count2>" + _COUNT
    + r") (?P<unit3>week|month)s? ago"
    r"|(?P<count>" + _COUNT + r") (?P<unit2>day|week|month|year)s? ago"
    r"|(?P<month_in>in|during|since) (?P<month>" + "|".join(_MONTHS) + r")(?: (?P<year>\d{4}))?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class AskedTime:
    """A time a query speaks of: its window ``[start, end)`` in UTC and, for a count back from the moment
    of the question ("two weeks ago", "the Wednesday two months ago"), the day it counts back to."""

    start: datetime
    end: datetime
    day: datetime | None = None
    """The first moment of the day counted back to, None for a named period ("last month", "in March")."""

    def fit(self, occurred_at: datetime) -> float:
        """How well ``occurred_at`` matches: for a period, 1 inside and halving outside for every half of its
        length (a day at least: "yesterday" may be the day before); for a day counted back to, 1 on that day
        and halving for every quarter of the window's length (a day at least) from it, so that "two weeks
        ago" prefers the day two weeks back to the edges of the week around it."""
        length = (self.end - self.start).total_seconds() / 86400
        if self.day is not None:
            start, end, spread = self.day, self.day + timedelta(days=1), max(1.0, length / 4)
        else:
            start, end, spread = self.start, self.end, max(1.0, length / 2)
        if start <= occurred_at < end:
            return 1.0
        gap = (start - occurred_at if occurred_at < start else occurred_at - end).total_seconds() / 86400
        return 0.5 ** (gap / spread)


def query_times(text: str, now: datetime | None = None) -> list[AskedTime]:
    """The times ``text`` speaks of, read from ``now`` (default: the current time), oldest phrase first.

    "two weeks ago" asked on 1 February 2023 is 18 January, within the week around it (a count of units is
    approximate: half a unit either side), "last month" is January 2023, "in March" is the latest
    March up to ``now``. A phrase whose date falls outside the calendar gives nothing.
    """
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    found: list[AskedTime] = []
    for match in _PHRASE.finditer(text):
        try:
            asked = _asked(match, moment)
        except (OverflowError, ValueError):  # before year 1 or after 9999
            continue
        if asked and asked not in found:
            found.append(asked)
    return found


def query_windows(text: str, now: datetime | None = None) -> list[Window]:
    """The windows of :func:`query_times`."""
    return [(asked.start, asked.end) for asked in query_times(text, now)]


def without_counts_back(text: str) -> str:
    """``text`` without the phrases that count back from the moment it is asked ("two weeks ago", "the
    Wednesday two months ago"): they say when, which :func:`query_times` reads, not what; a memory that
    says "three weeks ago" speaks of another day. ``text`` as it is when nothing else would be left."""
    kept = _PHRASE.sub(lambda m: " " if m.group("count") or m.group("weekday") else m.group(0), text)
    kept = " ".join(kept.split())
    return kept if any(ch.isalnum() for ch in kept) else text


def time_fit(occurred_at: datetime, asked: list[AskedTime]) -> float:
    """How well ``occurred_at`` matches the best of ``asked`` (:meth:`AskedTime.fit`); 0 with none."""
    return max((a.fit(occurred_at) for a in asked), default=0.0)


def _asked(match: re.Match, now: datetime) -> AskedTime | None:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if simple := (match.group("simple") or "").casefold():
        return AskedTime(*_period_of(today + timedelta(days=_DAY_OFFSETS.get(simple, 0)), "day"))
    if match.group("count"):
        return _around(today, match.group("count"), match.group("unit2"))
    if match.group("weekday"):  # "the Wednesday two months ago": the weekday is too fine to trust
        return _around(today, match.group("count2"), match.group("unit3"))
    if match.group("month"):
        return AskedTime(*_month(match, now))
    return AskedTime(*_named_period(match.group("dir").casefold(), match.group("unit").casefold(), today))


def _around(today: datetime, count: str, unit: str) -> AskedTime:
    """``count`` ``unit``s before ``today``, give or take half a unit and a day."""
    size = _UNIT_DAYS[unit.casefold()]
    days, half = _count(count) * size, size / 2 + 1
    return AskedTime(today - timedelta(days=days + half), today - timedelta(days=days - half - 1),
                     today - timedelta(days=days))


def _named_period(direction: str, unit: str, today: datetime) -> Window:
    """"last", "this" or "past" with a weekday or a unit, as a calendar period; but "the past month" (or week,
    year) means the days up to and including today, not a calendar month."""
    if direction == "past" and unit not in _WEEKDAYS:
        return today - timedelta(days=_UNIT_DAYS.get(unit, 7)), today + timedelta(days=1)
    return _calendar_period(unit, -1 if direction == "last" else 0, today)


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
