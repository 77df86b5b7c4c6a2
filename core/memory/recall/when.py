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
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

from core.errors import ValidationError

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3}
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_RELATIVE = re.compile(
    r"\b(?:(?P<simple>yesterday|today|tonight|tomorrow|this morning|last night)"
    r"|(?P<dir>last|this|next|past) (?P<unit>weekend|week|month|year|" + "|".join(_WEEKDAYS) + r")"
    r"|(?P<count>\d+|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r") (?P<unit2>day|week|month|year)s? ago)\b",
    re.IGNORECASE,
)
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
                              f"'1:56 pm on 8 May, 2023', got {value!r}")
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
        return parser.parse(cleaned, default=_EPOCH.replace(year=datetime.now().year))
    except (ValueError, OverflowError) as exc:
        raise ValidationError(
            f"{what} {text!r} is not a date; use ISO-8601 ('2023-05-08T13:56:00Z') or a written date "
            "such as '8 May 2023' or '1:56 pm on 8 May, 2023'"
        ) from exc


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
        return _period(anchor - timedelta(days=count * _UNITS[unit]), unit)
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
    match = _RELATIVE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        try:
            return parse_time(value, what)
        except ValidationError as exc:
            raise ValidationError(f"{exc}, or a period such as 'last week', 'yesterday' or '3 days ago'") from exc
    anchor = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    try:
        start, end = _relative_period(match, anchor)
    except (OverflowError, ValueError) as exc:
        raise ValidationError(f"{what} {value!r} falls outside the calendar (year 1 to 9999)") from exc
    return start if edge == "start" else end - timedelta(microseconds=1)


def _relative_period(match: re.Match, anchor: datetime) -> tuple[datetime, datetime]:
    """The period a relative phrase names, as ``[start, end)`` in UTC."""
    day = anchor.replace(hour=0, minute=0, second=0, microsecond=0)
    simple = (match.group("simple") or "").casefold()
    if simple:
        start = day + timedelta(days={"yesterday": -1, "last night": -1, "tomorrow": 1}.get(simple, 0))
        return start, start + timedelta(days=1)
    if match.group("count"):
        count_text = match.group("count").casefold()
        count = int(count_text) if count_text.isdecimal() else _NUMBERS[count_text]
        unit = match.group("unit2").casefold()
        return _period_of(day - timedelta(days=count * _UNITS[unit]), unit)
    direction, unit = match.group("dir").casefold(), match.group("unit").casefold()
    step = {"last": -1, "past": -1, "this": 0, "next": 1}[direction]
    if unit in _WEEKDAYS:
        delta = (day.weekday() - _WEEKDAYS.index(unit)) % 7 or 7
        start = day - timedelta(days=delta) if step <= 0 else day + timedelta(days=7 - delta or 7)
        return start, start + timedelta(days=1)
    if unit == "weekend":
        saturday = day - timedelta(days=(day.weekday() - 5) % 7 or 7) if step <= 0 else \
            day + timedelta(days=(5 - day.weekday()) % 7 or 7)
        return saturday, saturday + timedelta(days=2)
    if unit == "week":
        return _period_of(day + timedelta(days=7 * step), "week")
    if unit == "month":
        month0 = day.month - 1 + step
        return _period_of(day.replace(year=day.year + month0 // 12, month=month0 % 12 + 1, day=1), "month")
    return _period_of(day.replace(year=day.year + step, month=1, day=1), "year")


def _period_of(day: datetime, unit: str) -> tuple[datetime, datetime]:
    """The day, week (Monday on), month or year holding ``day``, as ``[start, end)``."""
    if unit == "day":
        return day, day + timedelta(days=1)
    if unit == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    if unit == "month":
        start = day.replace(day=1)
        return start, (start + timedelta(days=32)).replace(day=1)
    start = day.replace(month=1, day=1)
    return start, start.replace(year=start.year + 1)
