"""What goes into the cold store, and keeping it in step with its sources.

The sources of truth are files and memory.db: LOG.md archives (chunked on
entry boundaries, plus their summary), facts (never ``secret`` ones) and
notes stored with ``store_memory``. Work still to do is recorded next to the
source, so a crash or a failing embedder only delays indexing:

- ``compaction_history.indexed_at IS NULL``: an archive whose chunks are not in yet
  (an archive that fails its sha256 is moved to ``memory/quarantine/`` and recorded in
  ``index_error``: its summary is indexed, indexing goes on with the rest);
- ``cold_pending``: facts, notes and LangGraph store items changed since they
  were indexed (queued by triggers in the same transaction as the change).

:meth:`ColdIndexer.sync` does that work; it is idempotent because every chunk
id is derived from its source.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Callable, Iterable

from core.errors import BackendError, ColdStoreError
from core.memory.cold_store import Chunk, ColdStore
from core.memory.db import Database
from core.memory.log_file import scan_bytes
from core.memory.log_format import LogEntry, utc_timestamp

log = logging.getLogger(__name__)

Progress = Callable[[int], None]
"""Called with the number of chunks just written."""

_BATCH = 256


def render_entry(entry: LogEntry) -> str:
    """One entry as chunk text: ``[seq ts TYPE] content``."""
    return f"[{entry.seq} {entry.ts} {entry.type}] {entry.content}"


def archive_chunks(archive_id: str, entries: Iterable[LogEntry], chunk_tokens: int) -> list[Chunk]:
    """Cut an archive's entries into chunks of about ``chunk_tokens``, never across two entries' middles.

    Whole entries are packed together; an entry longer than a chunk is split
    into pieces of its own. SUMMARY entries are skipped: each is indexed as the
    ``summary`` chunk of its own compaction.
    """
    limit = max(200, chunk_tokens * 4)
    pieces: list[list[tuple[LogEntry, str]]] = [[]]
    size = 0
    for entry in entries:
        if entry.type == "SUMMARY":
            continue
        text = render_entry(entry)
        parts = [text[i : i + limit] for i in range(0, len(text), limit)]
        for part in parts:
            if pieces[-1] and size + len(part) > limit:
                pieces.append([])
                size = 0
            pieces[-1].append((entry, part))
            size += len(part) + 1
    return [_archive_chunk(archive_id, n, group) for n, group in enumerate(p for p in pieces if p)]


def _archive_chunk(archive_id: str, number: int, group: list[tuple[LogEntry, str]]) -> Chunk:
    first, last = group[0][0], group[-1][0]
    return Chunk(
        id=f"log:{archive_id}:{number}",
        origin=f"archive:{archive_id}",
        kind="log_archive",
        text="\n".join(part for _, part in group),
        source=f"archive/{archive_id}.md#seq={first.seq}-{last.seq}",
        created_at=first.ts,
        metadata={"archive_id": archive_id, "chunk_no": number, "first_seq": first.seq,
                  "last_seq": last.seq, "types": sorted({e.type for e, _ in group})},
    )


def summary_chunk(archive_id: str, text: str, first_seq: int, last_seq: int, created_at: str) -> Chunk:
    """The summary of one compaction as a ``summary`` chunk."""
    return Chunk(
        id=f"summary:{archive_id}", origin=f"archive:{archive_id}", kind="summary", text=text,
        source=f"archive/{archive_id}.md#seq={first_seq}-{last_seq}", created_at=created_at,
        metadata={"archive_id": archive_id, "first_seq": first_seq, "last_seq": last_seq},
    )


class ColdIndexer:
    """Brings the cold store in line with archives, facts and notes."""

    def __init__(self, db: Database, archive_dir: Path, store: Callable[[], ColdStore], chunk_tokens: int,
                 quarantine_dir: Path | None = None, cancel: threading.Event | None = None) -> None:
        self.db = db
        self.archive_dir = archive_dir
        self._store = store
        self.chunk_tokens = chunk_tokens
        self.quarantine_dir = quarantine_dir or archive_dir.parent / "quarantine"
        self.cancel = cancel or threading.Event()
        """Set when the process is closing: :meth:`sync` stops before its next step (the rest stays pending)."""

    def pending(self) -> int:
        """How many archives and items wait to be indexed (one cheap query, no LanceDB)."""
        return self.db.conn.execute(
            "SELECT (SELECT count(*) FROM cold_pending)"
            " + (SELECT count(*) FROM compaction_history WHERE indexed_at IS NULL)"
        ).fetchone()[0]

    def damaged(self) -> list[dict]:
        """Archives that could not be indexed: ``{archive_id, first_seq, last_seq, problem}``."""
        rows = self.db.conn.execute(
            "SELECT archive_id, first_seq, last_seq, index_error FROM compaction_history"
            " WHERE index_error IS NOT NULL ORDER BY first_seq").fetchall()
        return [{"archive_id": r["archive_id"], "first_seq": r["first_seq"], "last_seq": r["last_seq"],
                 "problem": r["index_error"]} for r in rows]

    def sync(self, progress: Progress | None = None) -> int:
        """Index every pending archive, fact and note; return the chunks written.

        A damaged archive is set aside (see :meth:`index_archive`) and the rest indexed.

        Raises:
            BackendError, ColdStoreError: indexing failed; the work stays pending.
        """
        written = 0
        archives = self.db.conn.execute(
            "SELECT archive_id FROM compaction_history WHERE indexed_at IS NULL ORDER BY first_seq"
        ).fetchall()
        for row in archives:
            if self.cancel.is_set():
                return written
            count = self.index_archive(row["archive_id"])
            written += count
            if progress:
                progress(count)
        while not self.cancel.is_set():
            batch = self.db.conn.execute(
                "SELECT item, queued_at FROM cold_pending ORDER BY queued_at LIMIT ?", (_BATCH,)
            ).fetchall()
            if not batch:
                return written
            count = self._sync_items([(r["item"], r["queued_at"]) for r in batch])
            written += count
            if progress:
                progress(count)
        return written

    def index_archive(self, archive_id: str) -> int:
        """(Re)index one compacted archive and its summary; return the chunks written.

        An archive that fails its recorded sha256 is moved to the quarantine folder, and one
        that is missing is recorded so: either way only its summary is indexed, the problem is
        kept in ``index_error`` (see :meth:`damaged`) and reported, and indexing goes on.
        """
        row = self.db.conn.execute(
            "SELECT * FROM compaction_history WHERE archive_id = ?", (archive_id,)
        ).fetchone()
        path = self.archive_dir / f"{archive_id}.md"
        problem = None
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data, problem = b"", f"{path} is missing"
        except OSError as exc:
            raise ColdStoreError(f"cannot read archive {path}: {exc}") from exc
        if problem is None and row["archive_sha256"] and hashlib.sha256(data).hexdigest() != row["archive_sha256"]:
            problem = self._quarantine(path)
        entries = [] if problem else scan_bytes(data, path).entries
        chunks = archive_chunks(archive_id, entries, self.chunk_tokens)
        if row["summary"].strip():
            created = entries[-1].ts if entries else row["compacted_at"]
            chunks.append(summary_chunk(archive_id, row["summary"], row["first_seq"], row["last_seq"], created))
        written = self._store().upsert({f"archive:{archive_id}": chunks})
        with self.db.transaction() as conn:
            conn.execute("UPDATE compaction_history SET indexed_at = ?, index_error = ? WHERE archive_id = ?",
                         (utc_timestamp(), problem, archive_id))
        if problem:
            log.error("archive %s (entries %s-%s) cannot be indexed: %s; its summary is searchable, its entries "
                      "are not: put the original back (sha256 %s) and run scripts/rebuild_index.py", archive_id,
                      row["first_seq"], row["last_seq"], problem, row["archive_sha256"])
        else:
            log.info("indexed archive %s: %d chunks", archive_id, written)
        return written

    def _quarantine(self, path: Path) -> str:
        """Move an archive that fails its sha256 aside; return the problem as it is reported."""
        target = self.quarantine_dir / f"{path.stem}-damaged-{utc_timestamp().replace(':', '')}.md"
        try:
            self.quarantine_dir.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
        except OSError as exc:
            return f"{path} does not match its sha256 (and could not be moved aside: {exc})"
        return f"{path} does not match its sha256; moved to {target}"

    def _sync_items(self, batch: list[tuple[str, str]]) -> int:
        groups = {item: self._item_chunks(item) for item, _ in batch}
        try:
            written = self._store().upsert(groups)
        except (BackendError, ColdStoreError) as exc:
            with self.db.transaction() as conn:
                conn.executemany(
                    "UPDATE cold_pending SET attempts = attempts + 1, last_error = ? WHERE item = ?",
                    [(str(exc)[:500], item) for item, _ in batch],
                )
            raise
        with self.db.transaction() as conn:
            # An item changed again while we indexed keeps its newer queue row.
            conn.executemany("DELETE FROM cold_pending WHERE item = ? AND queued_at = ?", batch)
        return written

    def _item_chunks(self, item: str) -> list[Chunk]:
        kind, _, key = item.partition(":")
        conn = self.db.conn
        if kind == "fact":
            fact = conn.execute("SELECT * FROM user_facts WHERE key = ?", (key,)).fetchone()
            if fact is None or fact["category"] == "secret":
                return []
            return [Chunk(
                id=item, origin=item, kind="fact", text=f"{fact['key']}: {fact['value']}", source=item,
                created_at=fact["updated_at"], metadata={"key": fact["key"], "category": fact["category"]},
            )]
        if kind == "item":
            return _store_item_chunks(conn, item, key)
        note = conn.execute("SELECT * FROM cold_notes WHERE id = ?", (key,)).fetchone()
        if kind != "note" or note is None:
            return []
        return [Chunk(
            id=item, origin=item, kind=note["kind"], text=note["text"], source=item,
            created_at=note["created_at"], metadata=json.loads(note["metadata"]),
        )]

    def mark_all_pending(self) -> None:
        """Queue every archive, fact and note again (the first step of a full re-index)."""
        now = utc_timestamp()
        with self.db.transaction() as conn:
            conn.execute("UPDATE compaction_history SET indexed_at = NULL")
            conn.execute(f"INSERT INTO cold_pending (item, queued_at) SELECT 'fact:' || key, ? FROM user_facts {_REQUEUE}", (now,))
            conn.execute(f"INSERT INTO cold_pending (item, queued_at) SELECT 'note:' || id, ? FROM cold_notes {_REQUEUE}", (now,))
            conn.execute(f"INSERT INTO cold_pending (item, queued_at) SELECT 'item:' || id, ? FROM store_items {_REQUEUE}", (now,))


_REQUEUE = "WHERE true ON CONFLICT (item) DO UPDATE SET queued_at = excluded.queued_at, attempts = 0, last_error = NULL"
"""Queued anew, as on a first insert (``WHERE true``: SQLite's upsert after a SELECT needs a WHERE)."""


def _store_item_chunks(conn, item: str, item_id: str) -> list[Chunk]:
    """One chunk per passage of a LangGraph store item (none once it is deleted)."""
    row = conn.execute("SELECT * FROM store_items WHERE id = ?", (item_id,)).fetchone() if item_id.isdigit() else None
    if row is None:
        return []
    namespace = row["namespace"].split(".")
    return [
        Chunk(id=f"{item}:{n}", origin=item, kind="item", text=text, source=f"store:{row['namespace']}/{row['key']}",
              created_at=row["updated_at"], metadata={"namespace": namespace, "key": row["key"], "path": path})
        for n, (path, text) in enumerate(json.loads(row["texts"]))
    ]
