"""``index.db``: a space's published entries searchable by words and meaning, rebuilt from its journal.

The journal (``LOG.md``) is the truth; this index is derived from it and can be deleted at any
time. Opening it checks it (``PRAGMA quick_check``): a damaged file is moved aside and the index is
rebuilt. Every search first indexes the journal's entries after the last one indexed, so a publish
is found at once by any process. Writers of the index serialise on SQLite's own lock (``BEGIN
IMMEDIATE``) and re-read how far the index is inside their transaction, so two processes catching up
at once index every entry once.

Vectors are computed with the agents home's embedder (``cold.embedder``) and stored beside the
entries; a search compares the query with all of them (a space is a notebook, not a corpus). When the
embedder fails the search runs by words only, as an agent's recall does.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any, Sequence

from core.errors import BackendError, StorageError
from core.durable import fault_points, fsync_dir
from core.memory.files.log_file import LogFile
from core.memory.files.log_format import LogEntry, utc_timestamp
from core.memory.recall.docs import STOP_WORDS, Doc
from core.memory.storage.sqlite import truncate_wal
from core.memory.storage.words import CONTEXT_WEIGHT, TEXT_WEIGHT, Fts5Words, idf

log = logging.getLogger(__name__)

BUSY_TIMEOUT_S = 30.0
EMBED_BATCH = 128
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY, author TEXT NOT NULL, ts TEXT NOT NULL, content TEXT NOT NULL,
    metadata TEXT NOT NULL, vector BLOB);
CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5 (text, context, tokenize = 'porter unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS entries_terms USING fts5vocab (entries_fts, 'row');
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_guard = threading.Lock()
_SET_STATE = (
    "INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
_SET_ENTRY = ("INSERT INTO entries (seq, author, ts, content, metadata) VALUES (?, ?, ?, ?, ?) ON CONFLICT "
              "(seq) DO UPDATE SET author = excluded.author, ts = excluded.ts, content = excluded.content, "
              "metadata = excluded.metadata, vector = NULL")


class SpaceIndex:
    """The index of one space, over its journal."""

    def __init__(self, path: Path, journal: LogFile, space: str) -> None:
        self.path, self.journal, self.space = path, journal, space
        self.repairs: list[str] = []
        self.conn = self._open()

    # -- opening and rebuilding ------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        conn = None
        try:
            conn = self._connect()
            if conn.execute("PRAGMA quick_check").fetchone()[0] == "ok":
                conn.executescript(_SCHEMA)
                return conn
            reason = "it failed its integrity check"
        except sqlite3.DatabaseError as exc:
            reason = str(exc)
        if conn is not None:
            conn.close()
        return self._replace_damaged(reason)

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open {self.path}: {exc}") from exc
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            # derived data: the journal is fsynced, this need not be
            conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _replace_damaged(self, reason: str) -> sqlite3.Connection:
        """Move a damaged index aside and start an empty one (the next sync fills it from the journal)."""
        aside = self.path.with_name(f"index.db.damaged-{utc_timestamp().replace(':', '')}")
        with _guard:
            try:
                if self.path.exists():
                    self.path.replace(aside)
                for suffix in ("-wal", "-shm"):
                    self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
                fsync_dir(self.path.parent)
            except OSError as exc:
                raise StorageError(f"cannot move the damaged {self.path} aside ({exc}); delete it: it is "
                                   "rebuilt from the space's journal") from exc
        message = (
            f"{self.path} was damaged ({reason}); moved it to {aside.name} and rebuilt it from the journal"
        )
        log.warning(message)
        self.repairs.append(message)
        conn = self._connect()
        conn.executescript(_SCHEMA)
        return conn

    TABLES = ("entries", "entries_fts", "state")
    """What a rebuild empties."""

    def rebuild(self) -> int:
        """Empty the index and index the whole journal again; return the entries indexed."""
        with self._writing() as conn:
            self._serialize(conn)
            for table in self.TABLES:
                conn.execute(f"DELETE FROM {table}")
        return self.sync()

    def scrub(self) -> bool:
        """Leave no byte of a deleted entry in ``index.db``: the full-text index merged, every page rewritten
        with freed space zeroed, the write-ahead log truncated. False when a reader in another process kept
        the log from being truncated (its frames may still hold deleted words; run it again).
        """
        try:
            self.conn.execute("PRAGMA secure_delete = ON")
            with self._writing() as conn:
                conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('optimize')")
            self.conn.execute("VACUUM")
            truncated = truncate_wal(self.conn)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot rewrite {self.path}: {exc}; run the purge again") from exc
        return truncated

    def close(self) -> None:
        self.conn.close()

    # -- catching up with the journal ----------------------------------------------

    def indexed_seq(self) -> int:
        row = self.conn.execute("SELECT value FROM state WHERE key = 'indexed_seq'").fetchone()
        return int(row[0]) if row else 0

    def sync(self) -> int:
        """Index the journal's entries after the last one indexed; return how many were new."""
        if self.journal.last_seq() <= self.indexed_seq():
            return 0
        entries = self.journal.scan().entries
        with self._writing() as conn:
            self._serialize(conn)
            row = conn.execute("SELECT value FROM state WHERE key = 'indexed_seq'").fetchone()
            # again, inside the transaction: another process may have caught up
            done = int(row[0]) if row else 0
            fresh = [e for e in entries if e.seq > done]
            for entry in fresh:
                self._apply(conn, entry)
            if fresh:
                conn.execute(_SET_STATE, ("indexed_seq", str(fresh[-1].seq)))
        return len(fresh)

    def refresh(self) -> int:
        """Index again every indexed memory whose text or metadata differs from its journal line (a line a
        scrub rewrote; its vector is computed anew); return how many. Call it after :meth:`sync`, under the
        space's lock."""
        published = {e.seq: e for e in self.journal.scan().entries if e.type == "PUBLISH"}
        with self._writing() as conn:
            self._serialize(conn)
            stale = [published[seq] for seq, content, metadata in conn.execute(
                "SELECT seq, content, metadata FROM entries").fetchall()
                if seq in published and (content != published[seq].content
                                         or json.loads(metadata)
                                         != (published[seq].metadata.get("metadata") or {}))]
            for entry in stale:
                self._apply(conn, entry)
        return len(stale)

    def _writing(self):
        return _Transaction(self.conn, self.path)

    def _serialize(self, conn: Any) -> None:
        """Make other writers of the index wait (SQLite: ``BEGIN IMMEDIATE`` did already)."""

    def _apply(self, conn: Any, entry: LogEntry) -> None:
        """Index one journal entry: a PUBLISH adds its memory, a FORGET removes the memories it names."""
        _apply(conn, entry)

    # -- vectors -------------------------------------------------------------------------

    def embed_pending(self, embedder: Any, name: str) -> int:
        """Compute the vectors the entries lack with ``embedder`` (called ``name``); return how many.

        Vectors of another embedder are dropped first: every vector of a space comes from one model.
        """
        if self._state("embedder") != name:
            with self._writing() as conn:
                conn.execute("UPDATE entries SET vector = NULL")
                conn.execute(_SET_STATE, ("embedder", name))
        done = 0
        while rows := self.conn.execute("SELECT seq, author, content FROM entries WHERE vector IS NULL "
                                        "ORDER BY seq LIMIT ?", (EMBED_BATCH,)).fetchall():
            vectors = embedder.embed([f"{author}: {text}" for _, author, text in rows])
            with self._writing() as conn:
                conn.executemany("UPDATE entries SET vector = ? WHERE seq = ?",
                                 [(vector.astype("float32").tobytes(), seq) for (seq, _, _),
                                  vector in zip(rows, vectors)])
            done += len(rows)
        return done

    def _state(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    # -- searching -----------------------------------------------------------------------

    def words(self, query: str, depth: int, since: str | None, until: str | None) -> list[tuple[int, float]]:
        """The best word matches as ``(seq, strength)``, strength in [0, 1] as in an agent's recall."""
        conn = self.conn
        terms = [t for t in Fts5Words.terms(conn, query) if t not in STOP_WORDS]
        total = max(1, conn.execute("SELECT count(*) FROM entries").fetchone()[0])
        if not terms:
            return []
        counts = dict(
            conn.execute(
                f"SELECT term, doc FROM entries_terms WHERE term IN ({', '.join('?' * len(terms))})", terms
            ).fetchall()
        )
        present = {t: counts[t] for t in terms if counts.get(t)}
        if not present:
            return []
        total = max(total, *present.values())  # another process may have indexed more between the two reads
        weights = {t: idf(n, total) for t, n in present.items()}
        ceiling = sum(weights.values()) or 1.0
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in weights)
        bm25 = f"bm25(entries_fts, {TEXT_WEIGHT}, {CONTEXT_WEIGHT})"
        where, params = _window(since, until)
        rows = conn.execute(
            f"SELECT e.seq, -{bm25} FROM entries_fts JOIN entries e ON e.seq = entries_fts.rowid "
            f"WHERE entries_fts MATCH ? AND {where} ORDER BY {bm25} LIMIT ?",
            [match, *params, depth]).fetchall()
        return [(seq, min(1.0, score / ceiling)) for seq, score in rows]

    def nearest(self, query: str, embedder: Any, depth: int, since: str | None,
                until: str | None) -> list[tuple[int, float]] | None:
        """The entries nearest in meaning as ``(seq, cosine)``; None when no vector search can run."""
        import numpy as np

        where, params = _window(since, until)
        rows = self.conn.execute("SELECT e.seq, e.vector FROM entries e WHERE e.vector IS NOT NULL AND "
                                 f"{where}",
                                 params).fetchall()
        if not rows:
            return None
        try:
            query_vector = np.asarray(embedder.embed([query])[0], dtype="float32")
        except BackendError as exc:
            log.warning("space %s searched by words only: the embedder failed: %s", self.space, exc)
            return None
        matrix = np.stack([np.frombuffer(blob, dtype="float32") for _, blob in rows])
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query_vector) or 1.0)
        similarity = matrix @ query_vector / np.where(norms == 0, 1.0, norms)
        best = np.argsort(-similarity)[:depth]
        return [(rows[i][0], float(similarity[i])) for i in best]

    def docs(self, seqs: Sequence[int]) -> dict[int, Doc]:
        """The indexed entries of ``seqs`` as recall's documents."""
        if not seqs:
            return {}
        rows = self.conn.execute("SELECT seq, author, ts, content, metadata FROM entries WHERE seq IN "
                                 f"({', '.join('?' * len(seqs))})", list(seqs)).fetchall()
        return {row[0]: self.doc(*row) for row in rows}

    def doc(self, seq: int, author: str, ts: str, content: str, metadata: str) -> Doc:
        return Doc(id=f"space:{self.space}:{seq}", kind="note", tier="space",
                   source=f"spaces/{self.space}/LOG.md#seq={seq}", text=content, occurred_at=ts,
                   created_at=ts,
                   context=author, metadata=json.loads(metadata), speaker=author,
                   thread=f"space:{self.space}")

    def latest(self, n: int) -> list[dict[str, Any]]:
        """The newest ``n`` live entries, newest first: ``{id, seq, author, ts, content, metadata}``."""
        rows = self.conn.execute("SELECT seq, author, ts, content, metadata FROM entries ORDER BY seq DESC "
                                 "LIMIT ?",
                                 (n,)).fetchall()
        return [{"id": f"space:{self.space}:{r[0]}", "seq": r[0], "author": r[1], "ts": r[2], "content": r[3],
                 "metadata": json.loads(r[4])} for r in rows]

    def count(self) -> int:
        return self.conn.execute("SELECT count(*) FROM entries").fetchone()[0]

    def authors(self, seqs: Sequence[int]) -> dict[int, str]:
        """The author of each live entry among ``seqs``."""
        return {seq: doc.speaker for seq, doc in self.docs(seqs).items()}


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on error), SQLite errors as StorageError."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn, self.path = conn, path

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StorageError(f"cannot write {self.path}: {exc}") from exc
        return self.conn

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            try:
                fault_points.reach("db.commit")
                self.conn.execute("COMMIT")
                return
            except sqlite3.Error as error:
                self.conn.execute("ROLLBACK")
                raise StorageError(f"cannot write {self.path}: {error}") from error
        self.conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise StorageError(f"cannot write {self.path}: {exc}") from exc


def _apply(conn: Any, entry: LogEntry, fts: bool = True) -> None:
    """Index one journal entry: a PUBLISH adds its memory, a FORGET removes the memories it names (``fts``:
    in SQLite's FTS5 table too; PostgreSQL's words are a generated column of the row)."""
    meta = entry.metadata
    if entry.type == "PUBLISH":
        author = str(meta.get("author", ""))
        conn.execute(_SET_ENTRY,
                     (entry.seq, author, entry.ts, entry.content, json.dumps(meta.get("metadata") or {})))
        if fts:
            conn.execute("DELETE FROM entries_fts WHERE rowid = ?", (entry.seq,))
            conn.execute("INSERT INTO entries_fts (rowid, text, context) VALUES (?, ?, ?)",
                         (entry.seq, entry.content, author))
    elif entry.type == "FORGET":
        seqs = [s for s in meta.get("forget", []) if isinstance(s, int)]
        for seq in seqs:
            conn.execute("DELETE FROM entries WHERE seq = ?", (seq,))
            if fts:
                conn.execute("DELETE FROM entries_fts WHERE rowid = ?", (seq,))


def _window(since: str | None, until: str | None) -> tuple[str, list[str]]:
    clauses, params = ["TRUE"], []
    if since:
        clauses.append("e.ts >= ?")
        params.append(since)
    if until:
        clauses.append("e.ts <= ?")
        params.append(until)
    return " AND ".join(clauses), params
