"""The inspector's reads of an agent's activity over time and of its runs, inside one read transaction.

A part of :class:`core.memory.storage.read_only.Reader` (which inherits it): what was written when, counted
by the hour or the day in SQL (``substr`` of the ISO-8601 UTC times every table keeps), so that a history of
100,000 entries is a few hundred rows by the time it leaves the database.
"""

from __future__ import annotations

from typing import Any, Callable

from core.errors import ValidationError

_FIRST_LAST = """SELECT (SELECT timestamp FROM log_metadata ORDER BY id ASC LIMIT 1) AS first_ts,
                        (SELECT timestamp FROM log_metadata ORDER BY id DESC LIMIT 1) AS last_ts"""
_LOG_BINS = """SELECT substr(timestamp, 1, {length}) AS bin, entry_type, count(*) AS n, min(id) AS first_seq,
                      max(id) AS last_seq
               FROM log_metadata WHERE {where} GROUP BY 1, 2 ORDER BY 1"""
CHANGING_TYPES = ("SYSTEM", "SUMMARY")
"""The entry types whose rows can change in place: a compaction's reservation (a SYSTEM entry) is replaced
by its SUMMARY under the same seq, with its own time."""
_CHANGING = "entry_type IN ('SYSTEM', 'SUMMARY')"
_LOG_STAMP = """SELECT (SELECT timestamp FROM log_metadata ORDER BY id LIMIT 1) AS first_ts,
                       (SELECT timestamp FROM log_metadata WHERE id = ?) AS ts"""
_CREATED_BINS = (
    "SELECT substr({column}, 1, {length}) AS bin, count(*) AS n FROM {table} GROUP BY 1 ORDER BY 1"
)
_GROWTH_TABLES = {"facts": ("user_facts", "created_at"), "notes": ("cold_notes", "created_at"),
                  "messages": ("ctx_messages", "created_at")}
"""What memory growth counts beside LOG.md's entries: each table and the column that says when a row came."""
_COMPACTION_TIMES = """SELECT compacted_at, archive_id, entries_count, first_seq, last_seq
                       FROM compaction_history ORDER BY id"""
_RUNS_OF = """SELECT r.run_id, min(r.id) AS first_seq, max(r.id) AS last_seq, count(*) AS entries,
                     min(CASE WHEN r.entry_type = 'RUN_START' THEN r.id END) AS start_seq,
                     max(CASE WHEN r.entry_type = 'RUN_END' THEN r.id END) AS end_seq,
                     max(CASE WHEN r.entry_type = 'INTERRUPTED' THEN r.id END) AS interrupted_seq,
                     sum(CASE WHEN r.entry_type = 'ERROR' THEN 1 ELSE 0 END) AS errors
              FROM log_metadata r WHERE r.run_id IN ({marks}) GROUP BY r.run_id"""


class ActivityReads:
    """Counts of what an agent wrote over time, and the runs of a timeline page (a mixin of ``Reader``)."""

    tables: set[str]
    _rows: Callable[..., list[dict[str, Any]]]
    """``_rows(table, sql, params)``: Reader's query (no rows when ``table`` does not exist)."""

    def log_time_span(self) -> tuple[str | None, str | None]:
        """The times of the first and the last indexed LOG.md entry (LOG.md and its archives)."""
        rows = self._rows("log_metadata", _FIRST_LAST)
        return (rows[0]["first_ts"], rows[0]["last_ts"]) if rows else (None, None)

    def log_bins(self, length: int, after: int = 0) -> list[dict[str, Any]]:
        """Indexed entries after seq ``after`` counted by type in each period named by the first ``length``
        characters of their time (13: the hour, 10: the day): ``{bin, entry_type, n, first_seq, last_seq}``,
        oldest first; the types of :data:`CHANGING_TYPES` left out (see :meth:`changing_log_bins`): these
        counts stay true once made."""
        sql = _LOG_BINS.format(length=_length(length), where=f"id > ? AND NOT ({_CHANGING})")
        return self._rows("log_metadata", sql, (after,))

    def changing_log_bins(self, length: int) -> list[dict[str, Any]]:
        """As :meth:`log_bins`, for the entries of :data:`CHANGING_TYPES` only (a few: found by the type
        index)."""
        return self._rows("log_metadata", _LOG_BINS.format(length=_length(length), where=_CHANGING))

    def log_stamp(self, upto: int) -> tuple[str | None, str | None]:
        """The times of the first indexed entry and of entry ``upto``: what changes if the rows a count up to
        ``upto`` was made of changed (a replaced memory.db; the index only ever grows at its end, and a
        rebuilt one holds the same rows). Two lookups by seq."""
        rows = self._rows("log_metadata", _LOG_STAMP, (upto,))
        return (rows[0]["first_ts"], rows[0]["ts"]) if rows else (None, None)

    def created_bins(self, length: int) -> dict[str, list[dict[str, Any]]]:
        """Facts, notes and conversation messages counted by when they were stored (as :meth:`log_bins`):
        ``{"facts": [{bin, n}, ...], "notes": [...], "messages": [...]}``."""
        return {name: self._rows(table,
                                 _CREATED_BINS.format(column=column, table=table, length=_length(length)))
                for name, (table, column) in _GROWTH_TABLES.items()}

    def compaction_times(self) -> list[dict[str, Any]]:
        """Every LOG.md compaction, oldest first: when, its archive, how many entries it archived."""
        return self._rows("compaction_history", _COMPACTION_TIMES)

    def runs_of(self, runs: list[str]) -> dict[str, dict[str, Any]]:
        """For each of ``runs`` (by id): its first and last seq, entries, errors, and the seqs of its
        RUN_START, RUN_END and INTERRUPTED entries (None when it has none)."""
        if not runs:
            return {}
        sql = _RUNS_OF.format(marks=", ".join("?" * len(runs)))
        return {row["run_id"]: row for row in self._rows("log_metadata", sql, runs)}


def _length(length: int) -> int:
    """A prefix length of an ISO-8601 time, checked (it is written into the SQL)."""
    if length not in (10, 13):
        raise ValidationError(f"a time is counted by its day (10) or hour (13), not {length!r}")
    return length
