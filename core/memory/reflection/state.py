"""Reflection's own tables: the marks, the queue, the quarantine and the counts per model
(``m012_reflection``).

Every write here runs in the caller's transaction, the one that keeps what a batch taught (see
:mod:`core.memory.reflection.commit`), so a mark never moves without what was learned before it.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from core.memory.files.log_format import utc_timestamp
from core.memory.reflection.extract import Tally
from core.memory.reflection.inputs import READ_TYPES

MAX_BACKOFF_S = 86_400.0
"""The longest wait before a quarantined entry is tried again."""


def set_log_mark(conn: Any, seq: int) -> None:
    """LOG.md's mark moves to ``seq`` (never back)."""
    conn.execute("INSERT INTO reflect_marks (source, mark, updated_at) VALUES ('log', ?, ?) ON CONFLICT "
                 "(source) DO UPDATE SET mark = CASE WHEN excluded.mark > reflect_marks.mark THEN "
                 "excluded.mark ELSE reflect_marks.mark END, updated_at = excluded.updated_at",
                 (seq, utc_timestamp()))


def dequeue(conn: Any, items: Sequence[str]) -> None:
    """The queued messages and notes ``items`` are read (or skipped)."""
    conn.executemany("DELETE FROM reflect_pending WHERE item = ?", [(item,) for item in dict.fromkeys(items)])


def quarantine(conn: Any, item: str, reason: str, model: str, retry_after_s: float) -> None:
    """Set ``item`` aside (again): tried anew after ``retry_after_s``, twice that after each further
    failure."""
    now = datetime.now(timezone.utc)
    row = conn.execute("SELECT attempts FROM reflect_quarantine WHERE item = ?", (item,)).fetchone()
    attempts = (row[0] if row else 0) + 1
    wait = min(MAX_BACKOFF_S, retry_after_s * 2 ** (attempts - 1))
    stamp, next_try = utc_timestamp(now), utc_timestamp(now + timedelta(seconds=wait))
    conn.execute("INSERT INTO reflect_quarantine (item, reason, attempts, model, first_failed_at, "
                 "last_failed_at, next_try) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (item) DO UPDATE SET "
                 "reason = excluded.reason, attempts = excluded.attempts, model = excluded.model, "
                 "last_failed_at = excluded.last_failed_at, next_try = excluded.next_try",
                 (item, reason[:1000], attempts, model, stamp, stamp, next_try))


def release(conn: Any, items: Sequence[str]) -> None:
    """``items`` were read after all: out of the quarantine."""
    conn.executemany("DELETE FROM reflect_quarantine WHERE item = ?",
                     [(item,) for item in dict.fromkeys(items)])


def due(conn: Any, everything: bool = False) -> list[str]:
    """The quarantined entries to try again now (``everything``: all of them), oldest first."""
    if everything:
        return [r[0]
                for r in conn.execute("SELECT item FROM reflect_quarantine ORDER BY first_failed_at, item")]
    return [r[0] for r in conn.execute("SELECT item FROM reflect_quarantine WHERE next_try <= ? "
                                       "ORDER BY first_failed_at, item", (utc_timestamp(),))]


def count(conn: Any, model: str, tally: Tally, entries: int, learned: int) -> None:
    """Add one batch's counts to ``model``'s."""
    conn.execute(
        "INSERT INTO reflect_stats (model, calls, failed, repaired, split, quarantined, rejected, entries, "
        "learned, last_at, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (model) DO UPDATE SET calls = reflect_stats.calls + excluded.calls, "
        "failed = reflect_stats.failed + excluded.failed, "
        "repaired = reflect_stats.repaired + excluded.repaired, "
        "split = reflect_stats.split + excluded.split, "
        "quarantined = reflect_stats.quarantined + excluded.quarantined, "
        "rejected = reflect_stats.rejected + excluded.rejected, "
        "entries = reflect_stats.entries + excluded.entries, "
        "learned = reflect_stats.learned + excluded.learned, "
        "last_at = excluded.last_at, last_error = coalesce(excluded.last_error, reflect_stats.last_error)",
        (model, tally.calls, tally.failed, tally.repaired, tally.split, tally.quarantined, tally.rejected,
         entries, learned, utc_timestamp(), tally.errors[-1][:500] if tally.errors else None))


def reset(conn: Any) -> None:
    """Back to the start: LOG.md read from its first entry, every message and note queued, nothing
    quarantined."""
    conn.execute("DELETE FROM reflect_marks")
    conn.execute("DELETE FROM reflect_quarantine")
    conn.execute("DELETE FROM reflect_pending")
    now = utc_timestamp()
    conn.execute("INSERT INTO reflect_pending (item, queued_at) SELECT 'msg:' || id, ? FROM ctx_messages "
                 "WHERE role IN ('user', 'assistant')", (now,))
    conn.execute("INSERT INTO reflect_pending (item, queued_at) SELECT 'note:' || id, ? FROM cold_notes "
                 "WHERE kind = 'note'", (now,))


def status(conn: Any, last_seq: int) -> dict[str, Any]:
    """How far reflection is: the lag by source (LOG.md's entries of the types it reads, after its mark), what
    is quarantined, the counts and failure rate per model, and what was learned."""
    row = conn.execute("SELECT mark FROM reflect_marks WHERE source = 'log'").fetchone()
    mark = int(row[0]) if row else 0
    queued = {kind: _count(conn, "reflect_pending", "item", kind) for kind in ("msg", "note")}
    quarantined = [dict(r) for r in conn.execute(
        "SELECT item, reason, attempts, model, first_failed_at, last_failed_at, next_try FROM "
        "reflect_quarantine ORDER BY first_failed_at, item")]
    models = {}
    for r in conn.execute("SELECT * FROM reflect_stats ORDER BY model"):
        data = dict(r)
        model = data.pop("model")
        data["failure_rate"] = round(data["failed"] / data["calls"], 4) if data["calls"] else 0.0
        models[model] = data
    learned = {kind: _count(conn, "extracted", "memory_id", kind) for kind in ("fact", "event",
                                                                               "contradiction")}
    types = list(READ_TYPES)
    unread = conn.execute("SELECT count(*) FROM log_metadata WHERE id > ? AND entry_type IN "
                          f"({', '.join('?' * len(types))})", (mark, *types)).fetchone()[0]
    lag = {"log": unread, "messages": queued.get("msg", 0), "notes": queued.get("note", 0)}
    return {"log_mark": mark, "last_seq": last_seq, "lag": {**lag, "total": sum(lag.values())},
            "quarantined": quarantined, "models": models,
            "learned": {"facts": learned.get("fact", 0), "events": learned.get("event", 0),
                        "contradictions": learned.get("contradiction", 0)}}


def _count(conn: Any, table: str, column: str, kind: str) -> int:
    return conn.execute(f"SELECT count(*) FROM {table} WHERE {column} LIKE ?", (f"{kind}:%",)).fetchone()[0]
