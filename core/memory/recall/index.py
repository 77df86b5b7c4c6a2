"""Keeping recall's docs in step with their sources.

The sources of truth are files and memory.db: LOG.md and its archives, facts
(never ``secret`` ones), notes stored with ``store_memory``, the conversation
messages and summaries of the providers, and the items of the LangGraph store
(``AgentOSStore``). Work still to do is recorded next to the source, so a crash
or a failing embedder only delays indexing:

- ``recall_state['log_seq']``: LOG.md entries after it have no doc yet;
- ``compaction_history.indexed_at IS NULL``: an archive whose entries are not marked archived yet
  (an archive that fails its sha256 is moved to ``memory/quarantine/`` and recorded in
  ``index_error``: its summary is indexed, indexing goes on with the rest);
- ``cold_pending``: facts, notes, messages, summaries and store items changed since they were
  indexed (queued by triggers in the same transaction as the change).

:meth:`ColdIndexer.sync` turns all of that into docs (SQLite only: it is
cheap, and a recall runs it first so that what was just written is found);
vectors follow in the background (:mod:`core.memory.recall.vector_indexer`). Every
doc id is derived from its source, so syncing twice changes nothing; a doc
whose source is gone is deleted and its vector queued for deletion
(``recall_purge``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from dataclasses import replace
from pathlib import Path
from typing import Callable

from core.errors import ColdStoreError
from core.durable import foreground
from core.memory.storage import Database, extracted
from core.memory.storage.facts import redact
from core.memory.files.log_file import LogFile, scan_bytes
from core.memory.files.log_format import utc_timestamp
from core.memory.recall.docs import Doc, DocIndex, Filters
from core.memory.recall.sources import (
    archive_summary_doc,
    conversation_summary_doc,
    event_doc,
    fact_doc,
    fact_version_docs,
    log_doc,
    message_doc,
    note_doc,
    store_item_docs,
)

log = logging.getLogger(__name__)

Progress = Callable[[int], None]
"""Called with the number of items just indexed."""

_BATCH = 256
_WRITE_CHUNK = 32
"""Docs written in one transaction: an append indexes its entry in memory.db too, and waits for the write
transaction in progress (~1 ms for this many docs with their full-text index)."""
_ARCHIVE_ID = re.compile(r"LOG-\d{1,19}-\d{1,19}")
"""How compaction names an archive (``memory/archive/<id>.md``)."""


class ColdIndexer:
    """Brings ``recall_docs`` in line with LOG.md, archives, facts, notes, conversations and store items."""

    def __init__(self, db: Database, archive_dir: Path, log_file: LogFile, secrets: Callable[[], list[str]],
                 quarantine_dir: Path | None = None, cancel: threading.Event | None = None) -> None:
        self.db = db
        self.archive_dir = archive_dir
        self.log = log_file
        self.docs = DocIndex(db)
        self._secrets = secrets
        self.quarantine_dir = quarantine_dir or archive_dir.parent / "quarantine"
        self.cancel = cancel or threading.Event()
        """Set when the process is closing: :meth:`sync` stops before its next step (the rest stays
        pending)."""
        self._archives = threading.Lock()
        """One archive indexed at a time in a process (a recall's sync, the recall indexer's, a
        compaction's)."""

    def pending(self) -> int:
        """How many archives, items and LOG.md entries wait for their docs (cheap: no file read)."""
        queued = self.db.conn.execute(
            "SELECT (SELECT count(*) FROM cold_pending)"
            " + (SELECT count(*) FROM compaction_history WHERE indexed_at IS NULL)"
        ).fetchone()[0]
        return queued + max(0, self.log.last_seq() - self.log_seq())

    def damaged(self) -> list[dict]:
        """Archives that could not be indexed: ``{archive_id, first_seq, last_seq, problem}``."""
        rows = self.db.conn.execute(
            "SELECT archive_id, first_seq, last_seq, index_error FROM compaction_history"
            " WHERE index_error IS NOT NULL ORDER BY first_seq").fetchall()
        return [{"archive_id": r["archive_id"], "first_seq": r["first_seq"], "last_seq": r["last_seq"],
                 "problem": r["index_error"]} for r in rows]

    def sync(self, progress: Progress | None = None) -> int:
        """Write the docs of every pending archive, item and LOG.md entry; return how many.

        A damaged archive is set aside (see :meth:`index_archive`) and the rest indexed.

        Raises:
            ColdStoreError: an archive cannot be read; the work stays pending.
        """
        written = 0
        archives = self.db.conn.execute(
            "SELECT archive_id FROM compaction_history WHERE indexed_at IS NULL ORDER BY first_seq"
        ).fetchall()
        for row in archives:
            if self.cancel.is_set():
                return written
            written += self._report(self._index_pending_archive(row["archive_id"]), progress)
        written += self._report(self.sync_log(), progress)
        while not self.cancel.is_set():
            batch = self.db.conn.execute(
                "SELECT item, queued_at FROM cold_pending ORDER BY queued_at LIMIT ?", (_BATCH,)
            ).fetchall()
            if not batch:
                return written
            written += self._report(self._sync_items([(r["item"], r["queued_at"]) for r in batch]), progress)
        return written

    @staticmethod
    def _report(count: int, progress: Progress | None) -> int:
        if progress and count:
            progress(count)
        return count

    # -- LOG.md and archives ------------------------------------------------------------------------

    def _redacted_now(self, docs: list[Doc], secrets: list[str]) -> list[Doc]:
        """``docs``, built outside the transaction with ``secrets``, redacted again if a secret was saved
        meanwhile (called inside the transaction that writes them: no save can slip in after it)."""
        now = self._secrets()
        if set(now) <= set(secrets):
            return docs
        return [replace(d, text=redact(d.text, now), context=redact(d.context, now),
                        speaker=redact(d.speaker, now),
                        metadata=redact(d.metadata, now)) for d in docs]

    def log_seq(self) -> int:
        """The last LOG.md seq that has been turned into docs."""
        row = self.db.conn.execute("SELECT value FROM recall_state WHERE key = 'log_seq'").fetchone()
        return int(row[0]) if row else 0

    def sync_log(self) -> int:
        """Write the docs of LOG.md entries appended since the last sync; return how many."""
        done = self.log_seq()
        if self.log.last_seq() <= done:
            return 0
        entries = self._entries_after(done)
        secrets = self._secrets()
        written = 0
        for start in range(0, len(entries), _WRITE_CHUNK):
            chunk = entries[start : start + _WRITE_CHUNK]
            docs = [d for d in (log_doc(e, secrets) for e in foreground.paced(chunk)) if d is not None]
            with self.db.transaction() as conn:
                # An entry already archived keeps its archived doc.
                archived = {r[0] for r in conn.execute(
                    "SELECT id FROM recall_docs WHERE kind = 'log_archive' AND id IN "
                    f"({', '.join('?' * len(docs))})", [d.id for d in docs])} if docs else set()
                written += self.docs.upsert(conn,
                                            self._redacted_now([d for d in docs if d.id not in archived],
                                                                     secrets))
                self._set_log_seq(conn, max(done, chunk[-1].seq))
        return written

    def _entries_after(self, seq: int) -> list:
        """The LOG.md entries after ``seq``, oldest first, read from the file's end (not the whole log each
        time)."""
        entries = []
        for entry in self.log.newest_first():
            if entry.seq <= seq:
                break
            entries.append(entry)
        return entries[::-1]

    @staticmethod
    def _set_log_seq(conn, seq: int) -> None:
        conn.execute("INSERT INTO recall_state (key, value) VALUES ('log_seq', ?) "
                     "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(seq),))

    def _index_pending_archive(self, archive_id: str) -> int:
        """:meth:`index_archive`, unless another thread of this process indexed it meanwhile (then its docs
        count as indexed: a compaction reports them whichever thread wrote them). Two at once would both read
        a damaged archive, and the one that found it already moved to quarantine would record it as missing
        over the other's report of its sha256."""
        with self._archives:
            row = self.db.conn.execute(
                "SELECT indexed_at FROM compaction_history WHERE archive_id = ?", (archive_id,)).fetchone()
            if row is None:
                return 0
            if row["indexed_at"] is not None:
                return self.docs.count(Filters(source_prefix=f"archive/{archive_id}.md#"))
            return self.index_archive(archive_id)

    def index_archive(self, archive_id: str) -> int:
        """(Re)write the docs of one compacted archive's entries and of its summary; return how many.

        An archive that fails its recorded sha256 is moved to the quarantine folder, and one
        that is missing is recorded so: either way only its summary is indexed, the problem is
        kept in ``index_error`` (see :meth:`damaged`) and reported, and indexing goes on.
        """
        row = self.db.conn.execute(
            "SELECT * FROM compaction_history WHERE archive_id = ?", (archive_id,)
        ).fetchone()
        path = self.archive_dir / f"{archive_id}.md"
        # The id comes from memory.db (an imported one too): only an archive's own name names a file to read.
        problem = None if _ARCHIVE_ID.fullmatch(archive_id) else \
            f"{archive_id[:100]!r} is not the name of an archive (LOG-<first>-<last>)"
        data = b""
        try:
            if problem is None:
                data = path.read_bytes()
        except FileNotFoundError:
            problem = f"{path} is missing"
        except OSError as exc:
            raise ColdStoreError(f"cannot read archive {path}: {exc}") from exc
        if (
            problem is None
            and row["archive_sha256"]
            and hashlib.sha256(data).hexdigest() != row["archive_sha256"]
        ):
            problem = self._quarantine(path)
        entries = [] if problem else scan_bytes(data, path).entries
        secrets = self._secrets()
        docs = [d for d in (log_doc(e, secrets,
                                    archive_id) for e in foreground.paced(entries)) if d is not None]
        if row["summary"].strip():
            created = entries[-1].ts if entries else row["compacted_at"]
            docs.append(archive_summary_doc(archive_id, row["summary"], row["first_seq"], row["last_seq"],
                                            created, secrets))
        # In short transactions (appends wait for each); the archive counts as indexed with the last one.
        written = 0
        for start in range(0, max(len(docs), 1), _WRITE_CHUNK):
            with self.db.transaction() as conn:
                written += self.docs.upsert(conn,
                                            self._redacted_now(docs[start : start + _WRITE_CHUNK], secrets))
                if start + _WRITE_CHUNK >= len(docs):
                    if entries and entries[-1].seq > self.log_seq():
                        self._set_log_seq(conn, entries[-1].seq)
                    conn.execute("UPDATE compaction_history SET indexed_at = ?, index_error = ? WHERE "
                                 "archive_id = ?",
                                 (utc_timestamp(), problem, archive_id))
        if problem:
            log.error("archive %s (entries %s-%s) cannot be indexed: %s; its summary is searchable, its "
                      "entries are not: put the original back (sha256 %s) and run agentos rebuild-index "
                      "--agent %s",
                      archive_id, row["first_seq"], row["last_seq"], problem, row["archive_sha256"],
                      self.archive_dir.parent.parent.name)
        else:
            log.info("indexed archive %s: %d docs", archive_id, written)
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

    # -- facts, notes, messages, summaries ---------------------------------------------------------------

    def _sync_items(self, batch: list[tuple[str, str]]) -> int:
        secrets = self._secrets()
        fresh = {item: self._item_docs(item, secrets) for item, _ in foreground.paced(batch)}
        with self.db.transaction() as conn:
            # The docs were read before this transaction. An item whose queue row is no longer the one read
            # changed since (or another thread indexed it): what was read may be older than what is indexed
            # now, so it is left to the pass that reads the newer row.
            current = [(item, queued) for item, queued in batch if conn.execute(
                "SELECT 1 FROM cold_pending WHERE item = ? AND queued_at = ?", (item, queued)).fetchone()]
            docs = [doc for item, _ in current for doc in fresh[item]]
            gone = [doc_id for item, _ in current for doc_id in self._indexed_ids(item)
                    if doc_id not in {doc.id for doc in fresh[item]}]
            written = self.docs.upsert(conn, self._redacted_now(docs, secrets))
            self.docs.delete(conn, gone)
            conn.executemany("DELETE FROM cold_pending WHERE item = ? AND queued_at = ?", current)
        return written + len(gone)

    def _item_docs(self, item: str, secrets: list[str]) -> list[Doc]:
        """The docs of one queued source as it is now (none once it is deleted)."""
        kind, _, key = item.partition(":")
        conn = self.db.conn
        if kind == "fact":
            fact = conn.execute("SELECT * FROM user_facts WHERE key = ?", (key,)).fetchone()
            if fact is None:
                return []
            versions = conn.execute("SELECT * FROM fact_versions WHERE key = ? ORDER BY id",
                                    (key,)).fetchall()
            learned = extracted.of(conn, [item]).get(item)
            return fact_version_docs(fact, versions, secrets) + _listed(fact_doc(fact, learned))
        if kind == "event":
            row = extracted.event_row(conn, item)
            return [] if row is None else [event_doc(row, extracted.of(conn, [item]).get(item), secrets)]
        if kind == "note":
            note = conn.execute("SELECT * FROM cold_notes WHERE id = ?", (key,)).fetchone()
            return _listed(note_doc(note, secrets) if note is not None else None)
        if kind == "msg":
            row = conn.execute(
                "SELECT m.*, c.session_id FROM ctx_messages m JOIN ctx_conversations c ON c.id = "
                "m.conversation_id WHERE m.id = ?", (key,)).fetchone()
            return _listed(message_doc(row, secrets) if row is not None else None)
        if kind == "sum":
            row = conn.execute(
                "SELECT s.*, c.session_id FROM ctx_summaries s JOIN ctx_conversations c ON c.id = "
                "s.conversation_id WHERE s.id = ?", (key,)).fetchone()
            return _listed(conversation_summary_doc(row, secrets) if row is not None else None)
        if kind == "item":
            row = conn.execute("SELECT * FROM store_items WHERE id = ?", (key,)).fetchone()
            return store_item_docs(row, secrets) if row is not None else []
        return []

    def _indexed_ids(self, item: str) -> list[str]:
        """The ids of the docs a source has now: the source's own id, one per passage of a store item, a
        fact's with its earlier values'."""
        conn = self.db.conn
        if item.startswith("item:"):
            # A range on the unique index: item:<id>:<n> for every n ("item:<id>;" sorts just after them).
            rows = conn.execute("SELECT id FROM recall_docs WHERE id > ? AND id < ?",
                                (f"{item}:", f"{item};"))
        # the fact and its earlier values (fact_version:<id>) share its subject
        elif item.startswith("fact:"):
            rows = conn.execute("SELECT id FROM recall_docs WHERE id = ? OR subject = ?", (item, item))
        else:
            rows = conn.execute("SELECT id FROM recall_docs WHERE id = ?", (item,))
        return [row[0] for row in rows]

    def mark_all_pending(self) -> None:
        """Drop every doc and queue every source again (the first step of a full re-index)."""
        now = utc_timestamp()
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM recall_docs")
            conn.execute("DELETE FROM recall_state WHERE key = 'log_seq'")
            conn.execute("UPDATE compaction_history SET indexed_at = NULL")
            for item, table in (("'fact:' || key", "user_facts"), ("'note:' || id", "cold_notes"),
                                ("'msg:' || id", "ctx_messages"), ("'sum:' || id", "ctx_summaries"),
                                ("'item:' || id", "store_items"), ("'event:' || id", "extracted_events")):
                conn.execute(f"INSERT INTO cold_pending (item, queued_at) SELECT {item}, ? FROM {table} "
                             f"{_REQUEUE}", (now,))


_REQUEUE = (
    "WHERE true ON CONFLICT (item) DO UPDATE SET queued_at = excluded.queued_at, attempts = 0, last_error = "
    "NULL"
)
"""Queued anew, as on a first insert (``WHERE true``: SQLite's upsert after a SELECT needs a WHERE)."""


def _listed(doc: Doc | None) -> list[Doc]:
    return [] if doc is None else [doc]
