"""``log_metadata``: an index of LOG.md entries in memory.db, rebuildable from the files.

The index lags LOG.md only if a process died between the two writes; every
open reconciles it, and :func:`rebuild` recreates it from LOG.md and the
archives.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable

from core.memory.db import Database
from core.memory.log_file import LogFile
from core.memory.log_format import LogEntry
from core.memory.tokens import estimate_tokens

_INSERT = """INSERT OR IGNORE INTO log_metadata
    (id, timestamp, entry_type, content_hash, compacted, token_count, run_id, archive_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)"""


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


def record(db: Database, entries: Iterable[LogEntry], archive_id: str | None = None) -> int:
    """Index ``entries`` (already indexed seqs are skipped); return how many rows were added."""
    rows = [_row(e, archive_id) for e in entries]
    with db.transaction() as conn:
        return conn.executemany(_INSERT, rows).rowcount if rows else 0


def last_indexed_seq(db: Database) -> int:
    """The highest seq in the index (0 when empty)."""
    return db.conn.execute("SELECT coalesce(max(id), 0) FROM log_metadata").fetchone()[0]


def reconcile(db: Database, log_file: LogFile) -> int:
    """Index the LOG.md entries the index lacks; return how many were added."""
    if log_file.last_seq() <= last_indexed_seq(db):
        return 0
    return record(db, log_file.scan().entries)


def rebuild(db: Database, log_file: LogFile, archives: Iterable[tuple[str, Path]] = ()) -> int:
    """Recreate the whole index from the archives ``(archive_id, path)`` and LOG.md."""
    with db.transaction() as conn:
        conn.execute("DELETE FROM log_metadata")
    total = 0
    for archive_id, path in archives:
        archived = LogFile(path, log_file.lock, log_file.quarantine_dir)
        total += record(db, archived.scan().entries, archive_id)
    return total + record(db, log_file.scan().entries)


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


def mark_compacted(db: Database, archived: Iterable[LogEntry], archive_id: str, summary: LogEntry) -> None:
    """Index a compaction: ``archived`` entries now live in ``archive_id``; ``summary`` took its seq."""
    archived = list(archived)
    with db.transaction() as conn:
        conn.executemany(_INSERT, [_row(e, archive_id) for e in archived])
        if archived:
            conn.execute(
                "UPDATE log_metadata SET compacted = TRUE, archive_id = ? WHERE id BETWEEN ? AND ?",
                (archive_id, archived[0].seq, archived[-1].seq),
            )
        # The summary reuses the seq of the reservation entry it replaces.
        conn.execute("DELETE FROM log_metadata WHERE id = ?", (summary.seq,))
        conn.execute(_INSERT, _row(summary))
