"""An agent's activity over time, as the page draws it: entries by type in each hour or day, its
compactions, and how its memory grew.

A history shorter than :data:`HOURLY_SPAN_H` hours is counted by the hour (a new agent's first session
would otherwise be one bar), a longer one by the UTC day; the page shows the newest :data:`MAX_BINS`
periods, and what came before them is summed up in ``earlier``. Counts come from memory.db's index of
LOG.md (archived entries included), the facts, notes and conversation messages tables.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime, timedelta, timezone
from typing import Any

from core.memory.storage import Reader

HOURLY_SPAN_H = 48
"""A history whose first and last entries are at most this many hours apart is counted by the hour."""
MAX_BINS = 120
"""Periods (hours or days) drawn at most: the newest ones."""
MIN_BINS = 12
"""Periods drawn at least (those before the first entry are empty), so that a new agent's bar has a scale."""
GROWTH = ("log", "facts", "notes", "messages")
"""What memory growth counts: LOG.md entries (with the archived ones), facts held, notes, messages."""

_UNITS = {"hour": (13, re.compile(r"\d{4}-\d\d-\d\dT\d\d"), "%Y-%m-%dT%H", timedelta(hours=1)),
          "day": (10, re.compile(r"\d{4}-\d\d-\d\d"), "%Y-%m-%d", timedelta(days=1))}


class LogCounts:
    """LOG.md's indexed entries counted by period and type, kept between requests (by the view of an agent):
    a request counts only the entries indexed since the last one. A history of 100,000 entries takes a few
    hundred milliseconds to count; its rows do not change, and a live page asks every few seconds. The rows
    that can change (a compaction's reservation becomes its SUMMARY) are few and counted at every request.

    The counts are made again from nothing when the unit changes or the rows they were made of did (the
    time of the first row, or of the last one counted, differs: a replaced memory.db).
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._length = 0
        self._upto = 0
        self._stamp: tuple[str | None, str | None] = (None, None)
        self._counts: dict[tuple[str, str], dict[str, Any]] = {}

    def rows(self, reader: Reader, length: int) -> list[dict[str, Any]]:
        """What :meth:`Reader.log_bins` returns for all entries, read as far as needed."""
        with self._guard:
            if length != self._length or reader.log_stamp(self._upto) != self._stamp:
                self._length, self._upto, self._counts = length, 0, {}
            for row in reader.log_bins(length, after=self._upto):
                known = self._counts.get((row["bin"], row["entry_type"]))
                if known is None:
                    self._counts[(row["bin"], row["entry_type"])] = dict(row)
                else:
                    known["n"] += row["n"]
                    known["first_seq"] = min(known["first_seq"], row["first_seq"])
                    known["last_seq"] = max(known["last_seq"], row["last_seq"])
                self._upto = max(self._upto, row["last_seq"])
            self._stamp = reader.log_stamp(self._upto)
            return [dict(row) for row in self._counts.values()] + reader.changing_log_bins(length)


def activity(reader: Reader, counts: LogCounts | None = None) -> dict[str, Any]:
    """What the page draws: ``unit`` (hour or day), ``bins`` (each period from the first to the last with
    activity, at most ``MAX_BINS``: entries by type, the seqs they span, compactions, memory so far),
    ``earlier`` (what the periods before them held) and ``totals``. ``counts`` keeps LOG.md's counts between
    calls."""
    first, last = reader.log_time_span()
    unit = "hour" if first and last and _hours(first, last) <= HOURLY_SPAN_H else "day"
    length, _, _, _ = _UNITS[unit]
    logged: dict[str, dict[str, Any]] = {}
    for row in (counts or LogCounts()).rows(reader, length):
        key = _key(row["bin"], unit)
        if key is None:
            continue
        period = logged.setdefault(key, {"types": {}, "entries": 0, "first_seq": row["first_seq"],
                                         "last_seq": row["last_seq"]})
        period["types"][row["entry_type"]] = period["types"].get(row["entry_type"], 0) + row["n"]
        period["entries"] += row["n"]
        period["first_seq"] = min(period["first_seq"], row["first_seq"])
        period["last_seq"] = max(period["last_seq"], row["last_seq"])
    added = {name: _counted(rows, unit) for name, rows in reader.created_bins(length).items()}
    added["log"] = {key: period["entries"] for key, period in logged.items()}
    compactions: dict[str, list[dict[str, Any]]] = {}
    for row in reader.compaction_times():
        key = _key(row["compacted_at"], unit)
        if key is not None:
            compactions.setdefault(key, []).append({
                "archive_id": row["archive_id"], "entries": row["entries_count"],
                "compacted_at": row["compacted_at"],
                "first_seq": row["first_seq"], "last_seq": row["last_seq"]})
    # The periods of LOG.md's entries (every write logs one; a conversation alone does not).
    keys = set(logged) or set(compactions) | {k for counts in added.values() for k in counts}
    shown = _axis(min(keys), max(keys), unit) if keys else []
    start, end = (shown[0], shown[-1]) if shown else ("", "")
    memory = dict.fromkeys(GROWTH, 0)
    growth: dict[str, dict[str, int]] = {name: {} for name in GROWTH}
    for name in GROWTH:
        for key, n in added[name].items():
            if key < start:
                memory[name] += n  # before the periods shown
            else:  # what is stamped after the last entry (a clock set back) is counted in its period
                growth[name][min(key, end)] = growth[name].get(min(key, end), 0) + n
    earlier = {"entries": memory["log"],
               "compactions": sum(len(c) for key, c in compactions.items() if key < start)}
    bins = []
    for key in shown:
        for name in GROWTH:
            memory[name] += growth[name].get(key, 0)
        period = logged.get(key, {"types": {}, "entries": 0, "first_seq": None, "last_seq": None})
        bins.append({"at": key, **period, "compactions": compactions.get(key, []), "memory": dict(memory)})
    return {"unit": unit, "bins": bins, "earlier": earlier,
            "totals": {"entries": memory["log"], "compactions": sum(len(c) for c in compactions.values()),
                       "memory": dict(memory)}}


def _hours(first: str, last: str) -> float:
    """Hours between two ISO-8601 times (infinite when one cannot be read: counted by the day then)."""
    try:
        start, end = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (first, last))
    except ValueError:
        return float("inf")
    return abs((end - start).total_seconds()) / 3600


def _key(time: Any, unit: str) -> str | None:
    """The period of ``time`` (``2026-11-20`` or ``2026-11-20T14``), None for a time that is not ISO-8601."""
    if not isinstance(time, str):
        return None
    length, pattern, _, _ = _UNITS[unit]
    key = time[:length].replace(" ", "T")
    return key if pattern.fullmatch(key) else None


def _counted(rows: list[dict[str, Any]], unit: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        key = _key(row["bin"], unit)
        if key is not None:
            counts[key] = counts.get(key, 0) + row["n"]
    return counts


def _axis(first: str, last: str, unit: str) -> list[str]:
    """Every period from ``first`` to ``last``: at most the newest ``MAX_BINS``, at least ``MIN_BINS``."""
    _, _, form, step = _UNITS[unit]
    end = datetime.strptime(last, form).replace(tzinfo=timezone.utc)
    moment = datetime.strptime(first, form).replace(tzinfo=timezone.utc)
    moment = min(max(moment, end - step * (MAX_BINS - 1)), end - step * (MIN_BINS - 1))
    keys = []
    while moment <= end:
        keys.append(moment.strftime(form))
        moment += step
    return keys
