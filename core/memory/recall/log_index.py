"""``log_metadata``: an index of LOG.md entries in memory.db, rebuildable from the files.

LOG.md is the truth: an entry is written (and flushed) first and indexed after,
so the index may lag LOG.md but never leads it. It lags when a process died
between the two writes or memory.db refused the second; it catches up at the
next open (:func:`reconcile`) or the next append (:func:`index_appended`), and
:func:`rebuild` recreates it from LOG.md and the archives.

A system record that changes memory.db (a FACT or FORGET entry) is applied in the same
transaction that indexes it, so "indexed" means "applied": one that was logged
but never applied is applied when the index catches up.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Iterable

from core.memory.storage import facts
from core.memory.recall import forget_records
from core.memory.storage.protocol import Connection, Database
from core.memory.files.log_file import LogFile
from core.memory.files.log_format import LogEntry
from core.llm import estimate_tokens

_INSERT = """INSERT OR IGNORE INTO log_metadata
    (id, timestamp, entry_type, content_hash, compacted, token_count, run_id, archive_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)"""

APPLY: dict[str, Callable[[Connection, LogEntry], object]] = {
    "FACT": facts.apply_entry, "FORGET": forget_records.apply_entry,
}
"""System records that change memory.db, by entry type: applied when first indexed."""


def _row(entry: LogEntry, archive_id: str | None = None) -> tuple:
    run_id = entry.metadata.get("run_id")
    return (
        entry.seq,
        entry.ts,
        entry.type,
        hashlib.sha256(entry.content.encode("utf-8")).hexdigest(),
        archive_id is not None,
        estimate_tokens(entry.content),
        run_id if isinstance(run_id, str) else None,
        archive_id,
    )


def insert(conn: Connection, entries: Iterable[LogEntry], archive_id: str | None = None,
           apply: bool = True) -> int:
    """Index ``entries`` in the caller's transaction, applying the system records not indexed before.

    Returns how many rows were added (already indexed seqs are skipped). Entries with nothing to apply
    go in batches (one round trip each on PostgreSQL); a system record alone, in seq order.
    """
    added = 0
    batch: list[tuple] = []
    for entry in entries:
        applier = APPLY.get(entry.type) if apply else None
        if applier is None:
            batch.append(_row(entry, archive_id))
            continue
        added += _insert_rows(conn, batch)
        batch = []
        if conn.execute(_INSERT, _row(entry, archive_id)).rowcount:
            added += 1
            applier(conn, entry)
    return added + _insert_rows(conn, batch)


def _insert_rows(conn: Connection, rows: list[tuple]) -> int:
    return conn.executemany(_INSERT, rows).rowcount if rows else 0


def record(db: Database, entries: Iterable[LogEntry], archive_id: str | None = None,
           apply: bool = True) -> int:
    """Index ``entries`` in one transaction (see :func:`insert`); return how many rows were added."""
    entries = list(entries)
    with db.transaction() as conn:
        return insert(conn, entries, archive_id, apply)


def last_indexed_seq(db: Database) -> int:
    """The highest seq in the index (0 when empty)."""
    return db.conn.execute("SELECT coalesce(max(id), 0) FROM log_metadata").fetchone()[0]


def catch_up(conn: Connection, log_file: LogFile, before: int | None = None) -> int:
    """In the caller's transaction, index (and apply) the LOG.md entries after the index's newest, those
    before seq ``before`` only if given; cheap when it lacks none (one query), and reading LOG.md from its
    end as far as the index's newest entry otherwise. Return how many were added."""
    last = conn.execute("SELECT coalesce(max(id), 0) FROM log_metadata").fetchone()[0]
    if last >= (log_file.last_seq() if before is None else before - 1):
        return 0
    missing = []
    for entry in log_file.newest_first():
        if entry.seq <= last:
            break
        if before is None or entry.seq < before:
            missing.append(entry)
    return insert(conn, missing[::-1])


def index_appended(db: Database, log_file: LogFile, entry: LogEntry, wait: bool = True) -> int:
    """Index an entry just appended, after any the index lacks before it (an earlier failed or deferred
    indexing). ``wait=False``: raise LockTimeoutError at once, indexing nothing, while another thread of
    this process writes memory.db (the entry is indexed with the next one, or by the background indexer)."""
    with db.transaction(wait=wait) as conn:
        return catch_up(conn, log_file, entry.seq) + insert(conn, [entry])


def reconcile(db: Database, log_file: LogFile) -> int:
    """Index the LOG.md entries the index lacks; return how many were added."""
    if log_file.last_seq() <= last_indexed_seq(db):
        return 0
    return record(db, log_file.scan().entries)


def rebuild(db: Database, log_file: LogFile, archives: Iterable[tuple[str, Path]] = (),
            apply: bool = False) -> int:
    """Recreate the whole index from the archives ``(archive_id, path)`` and LOG.md.

    ``apply`` replays the system records too (facts), in seq order: for a memory.db
    rebuilt from nothing. With the database intact they are already applied.
    """
    with db.transaction() as conn:
        conn.execute("DELETE FROM log_metadata")
    total = 0
    for archive_id, path in archives:
        archived = LogFile(path, log_file.lock, log_file.quarantine_dir)
        total += record(db, archived.scan().entries, archive_id, apply)
    return total + record(db, log_file.scan().entries, None, apply)


def interrupted_runs(db: Database) -> list[dict]:
    """Runs with a RUN_START but neither a RUN_END nor an INTERRUPTED entry, oldest first."""
    rows = db.conn.execute(
        """SELECT s.run_id, s.id AS seq, s.timestamp FROM log_metadata s
           WHERE s.entry_type = 'RUN_START' AND s.run_id IS NOT NULL
             AND NOT EXISTS (SELECT 1 FROM log_metadata e
                             WHERE e.run_id = s.run_id AND e.entry_type IN ('RUN_END', 'INTERRUPTED'))
           ORDER BY s.id"""
    ).fetchall()
    return [{"run_id": r["run_id"], "seq": r["seq"], "started_at": r["timestamp"]} for r in rows]


def newer_now_update(db: Database, seq: int) -> int | None:
    """The seq of the newest NOW_UPDATE indexed after ``seq``, if any (NOW.md was not replaced after it)."""
    row = db.conn.execute(
        "SELECT max(id) FROM log_metadata WHERE entry_type = 'NOW_UPDATE' AND id > ?", (seq,)
    ).fetchone()
    return row[0]


def mark_compacted(db: Database, archived: Iterable[LogEntry], archive_id: str, summary: LogEntry) -> None:
    """Index a compaction: ``archived`` entries now live in ``archive_id``; ``summary`` took its seq."""
    archived = list(archived)
    with db.transaction() as conn:
        insert(conn, archived, archive_id)
        if archived:
            conn.execute(
                "UPDATE log_metadata SET compacted = TRUE, archive_id = ? WHERE id BETWEEN ? AND ?",
                (archive_id, archived[0].seq, archived[-1].seq),
            )
        # The summary reuses the seq of the reservation entry it replaces.
        conn.execute("DELETE FROM log_metadata WHERE id = ?", (summary.seq,))
        conn.execute(_INSERT, _row(summary))
