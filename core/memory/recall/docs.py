"""``recall_docs``: one row a memory of any tier, searchable by words the moment it is written.

Rows are derived from their sources (see :mod:`core.memory.recall.sources`) and
can be rebuilt at any time. Each row's ``text`` and ``context`` (speaker,
dates, relative dates resolved) are indexed for words (SQLite FTS5 with the
Porter stemmer, or a PostgreSQL tsvector: :mod:`core.memory.storage.words`); its vector is computed later, in
the background (:mod:`core.memory.recall.vector_indexer`), and ``vector_state`` says whether it is
in LanceDB yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from core.memory.storage import Database
from core.memory.storage.extracted import keys_of
from core.memory.files.log_format import utc_timestamp
from core.memory.storage.words import idf
from core.memory.storage.protocol import Connection

KINDS = ("note", "summary", "fact", "log", "log_archive", "message", "item", "event")
"""What a memory can be: a stored note or summary, a fact, a LOG.md entry (``log`` while in
LOG.md, ``log_archive`` once compacted), a conversation message, a passage of a LangGraph store
item (``AgentOSStore``), an event reflection learned (:mod:`core.memory.reflection`)."""
LEARNED = " ;; learned: "
"""Separates a doc's own context from what reflection learned from it (:func:`with_keys`)."""
TIERS = ("warm", "cold", "conversation")
COMMON_SHARE = 0.25
"""Query words found in more than this share of memories are left out of the word search: they
weigh almost nothing in BM25 and would make the search scan most of the index."""
_COLUMNS = ("id, kind, tier, source, text, context, metadata, speaker, thread, occurred_at, created_at, "
            "expires_at, subject, rowid")


@dataclass(frozen=True)
class Doc:
    """One memory as recall indexes it."""

    id: str
    """``note:<hex>``, ``fact:<key>``, ``fact_version:<id>``, ``log:<seq>``, ``summary:<archive>``,
    ``msg:<id>``, ``sum:<id>``, ``item:<id>:<n>``."""
    kind: str
    tier: str
    source: str
    """Where the original is: ``LOG.md#seq=12``, ``archive/LOG-1-40.md#seq=12``, ``note:<hex>``, ..."""
    text: str
    occurred_at: str
    """When it happened (UTC ISO-8601)."""
    created_at: str
    context: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    speaker: str = ""
    thread: str = ""
    """The session or conversation it belongs to: its neighbours share it."""
    expires_at: str | None = None
    subject: str = ""
    """What this memory is a version of (``note:<key>`` for a note stored with a metadata ``key``,
    ``fact:<key>`` for a fact and its earlier values; '' none):
    a later version supersedes it (:mod:`core.memory.recall.views.supersession`)."""
    rowid: int = 0


@dataclass(frozen=True)
class Filters:
    """What a search may return."""

    kinds: tuple[str, ...] | None = None
    since: str | None = None
    until: str | None = None
    source_prefix: str | None = None
    """Only memories whose ``source`` starts with this (``store:<namespace>`` for a store's items)."""

    def sql(self, alias: str = "d") -> tuple[str, list[Any]]:
        """A WHERE clause (without ``WHERE``) and its parameters; expired memories are always left out."""
        clauses = [f"({alias}.expires_at IS NULL OR {alias}.expires_at > ?)"]
        params: list[Any] = [utc_timestamp()]
        if self.kinds:
            clauses.append(f"{alias}.kind IN ({', '.join('?' * len(self.kinds))})")
            params.extend(self.kinds)
        if self.since:
            clauses.append(f"{alias}.occurred_at >= ?")
            params.append(self.since)
        if self.until:
            clauses.append(f"{alias}.occurred_at <= ?")
            params.append(self.until)
        if self.source_prefix:
            clauses.append(f"substr({alias}.source, 1, ?) = ?")
            params.extend((len(self.source_prefix), self.source_prefix))
        return " AND ".join(clauses), params


class DocIndex:
    """The ``recall_docs`` table and its full-text index."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._words = db.dialect.recall_words

    # -- writing (inside the caller's transaction) ---------------------------------------------

    def upsert(self, conn: Connection, docs: Iterable[Doc]) -> int:
        """Insert or update ``docs`` (forgotten ids are skipped); a changed text needs a new vector.

        What reflection learned from a doc's source is indexed beside it, in its context (:func:`with_keys`).
        """
        written = 0
        for doc in docs:
            if conn.execute("SELECT 1 FROM recall_forgotten WHERE id = ?", (doc.id,)).fetchone():
                continue
            doc = with_keys(conn, doc)
            conn.execute(
                """INSERT INTO recall_docs (id, kind, tier, source, text, context, metadata, speaker, thread,
                       occurred_at, created_at, expires_at, subject, vector_state)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
                   ON CONFLICT (id) DO UPDATE SET
                       vector_state = CASE WHEN recall_docs.text = excluded.text
                                           AND recall_docs.speaker = excluded.speaker
                                           AND recall_docs.kind = excluded.kind
                                           AND recall_docs.occurred_at = excluded.occurred_at
                                           THEN recall_docs.vector_state ELSE 0 END,
                       kind = excluded.kind, tier = excluded.tier, source = excluded.source,
                       text = excluded.text, context = excluded.context, metadata = excluded.metadata,
                       speaker = excluded.speaker, thread = excluded.thread, occurred_at =
                           excluded.occurred_at,
                       created_at = excluded.created_at, expires_at = excluded.expires_at,
                       subject = excluded.subject""",
                (doc.id, doc.kind, doc.tier, doc.source, doc.text, doc.context,
                 json.dumps(doc.metadata, ensure_ascii=False, sort_keys=True), doc.speaker, doc.thread,
                 doc.occurred_at, doc.created_at, doc.expires_at, doc.subject),
            )
            written += 1
        return written

    @staticmethod
    def refresh_keys(conn: Connection, ids: Sequence[str]) -> int:
        """Index again beside each of ``ids`` (the entries reflection just learned from, or forgot) what was
        learned from it; return how many docs changed. An id with no doc yet gets its keys when it is
        indexed."""
        changed = 0
        for doc_id in dict.fromkeys(ids):
            row = conn.execute("SELECT context FROM recall_docs WHERE id = ?", (doc_id,)).fetchone()
            if row is None:
                continue
            context = _keyed(row[0].split(LEARNED)[0], keys_of(conn, doc_id))
            if context != row[0]:
                changed += conn.execute("UPDATE recall_docs SET context = ? WHERE id = ?",
                                        (context, doc_id)).rowcount
        return changed

    @classmethod
    def delete(cls, conn: Connection, ids: Sequence[str]) -> int:
        """Remove ``ids`` and queue their vectors for deletion (``recall_purge``); return how many existed.

        The memory that followed each one in its thread gets a new vector: its old one may have quoted it.
        """
        removed = 0
        for doc_id in ids:
            cls.reembed_next(conn, [doc_id])
            removed += conn.execute("DELETE FROM recall_docs WHERE id = ?", (doc_id,)).rowcount
            conn.execute("INSERT OR IGNORE INTO recall_purge (id) VALUES (?)", (doc_id,))
        return removed

    @staticmethod
    def reembed_next(conn: Connection, ids: Sequence[str]) -> None:
        """Queue for a new vector the memory that follows each of ``ids`` in its thread (a short one's vector
        is computed with the start of the memory before it, see
        :func:`core.memory.recall.vector_indexer.embedding_text`)."""
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            conn.execute(
                f"""UPDATE recall_docs SET vector_state = 0 WHERE rowid IN (
                        SELECT (SELECT min(n.rowid) FROM recall_docs n WHERE n.thread = d.thread AND n.rowid >
                        d.rowid)
                        FROM recall_docs d WHERE d.thread != '' AND d.id IN
                        ({', '.join('?' * len(part))}))""",
                part)

    # -- reading ----------------------------------------------------------------------------------

    def count(self, filters: Filters | None = None) -> int:
        """How many memories are indexed (that pass ``filters``)."""
        where, params = filters.sql("recall_docs") if filters else ("true", [])
        return self.db.conn.execute(f"SELECT count(*) FROM recall_docs WHERE {where}", params).fetchone()[0]

    def ids(self) -> list[str]:
        """Every indexed id."""
        return [row[0] for row in self.db.conn.execute("SELECT id FROM recall_docs ORDER BY rowid")]

    def get(self, ids: Iterable[str], filters: Filters | None = None) -> dict[str, Doc]:
        """The docs of ``ids`` that exist (and pass ``filters``)."""
        wanted = list(dict.fromkeys(ids))
        where, params = filters.sql("recall_docs") if filters else ("true", [])
        found: dict[str, Doc] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            rows = self.db.conn.execute(
                f"SELECT {_COLUMNS} FROM recall_docs WHERE id IN ({', '.join('?' * len(part))}) AND {where}",
                [*part, *params],
            ).fetchall()
            found.update((row["id"], _doc(row)) for row in rows)
        return found

    def window(self, filters: Filters, limit: int) -> list[Doc]:
        """The ``limit`` newest memories that pass ``filters`` (by when they happened, then stored), newest
        first."""
        where, params = filters.sql("recall_docs")
        rows = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM recall_docs WHERE {where} ORDER BY occurred_at DESC, rowid DESC LIMIT ?",
            [*params, limit]).fetchall()
        return [_doc(row) for row in rows]

    def previous(self, doc: Doc) -> Doc | None:
        """The memory stored just before ``doc`` in the same thread, if any."""
        if not doc.thread:
            return None
        row = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM recall_docs WHERE thread = ? AND rowid < ? ORDER BY rowid DESC LIMIT 1",
            (doc.thread, doc.rowid),
        ).fetchone()
        return _doc(row) if row else None

    def pending_vectors(self, limit: int) -> list[Doc]:
        """Docs whose vector is still to be computed, oldest first."""
        rows = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM recall_docs WHERE vector_state = 0 ORDER BY rowid LIMIT ?", (limit,)
        ).fetchall()
        return [_doc(row) for row in rows]

    def pending_count(self) -> int:
        """How many docs wait for their vector."""
        return self.db.conn.execute("SELECT count(*) FROM recall_docs WHERE vector_state = 0").fetchone()[0]

    def last_pending_rowid(self) -> int:
        """The newest doc still waiting for its vector (0: none)."""
        return self.db.conn.execute(
            "SELECT coalesce(max(rowid), 0) FROM recall_docs WHERE vector_state = 0").fetchone()[0]

    def first_pending_rowid(self) -> int:
        """The oldest doc still waiting for its vector (0: none)."""
        return self.db.conn.execute(
            "SELECT coalesce(min(rowid), 0) FROM recall_docs WHERE vector_state = 0").fetchone()[0]

    def mark_embedded(self, written: Mapping[str, Any], row_of: Callable[[Doc, Doc | None], Any]) -> None:
        """Record which docs have the vector row just ``written`` for them (by id).

        ``row_of(doc, previous)`` is the row a doc needs now; a doc whose row is another (its text,
        kind, time, or the memory before it in its thread changed meanwhile: forgotten, redacted) is
        pending again, even if another batch had embedded its new version: the row just written
        may have replaced that newer one.
        """
        with self.db.transaction() as conn:
            for doc in self.get(written).values():
                fresh = row_of(doc, self.previous(doc)) == written[doc.id]
                conn.execute("UPDATE recall_docs SET vector_state = ? WHERE id = ?", (int(fresh), doc.id))

    def words(self, query: str, depth: int, filters: Filters) -> list[tuple[str, float]]:
        """The ``depth`` best word matches of ``query`` as ``(id, strength)``, best first.

        ``strength`` is the BM25 score divided by the most a single match of every
        query word could score, so it is in [0, 1] whatever the query's length.
        """
        weights, total = self.weights(query)
        if not weights:
            return []
        ceiling = sum(weights.values()) or 1.0
        where, params = filters.sql()
        return [(doc_id, min(1.0, score / ceiling))
                for doc_id, score in self._words.ranked(self.db.conn, weights, total, where, params, depth)]

    def weights(self, query: str) -> tuple[dict[str, float], int]:
        """The words of ``query`` the word search weighs, with their IDF (words in more than
        :data:`COMMON_SHARE` of the memories are left out), and the index's size."""
        conn = self.db.conn
        terms = self.terms(query)
        if not terms:
            return {}, 0
        total = max(1, conn.execute("SELECT coalesce(max(rowid), 0) FROM recall_docs").fetchone()[0])
        counts = self._words.doc_counts(conn, terms, int(COMMON_SHARE * total) + 1)
        present = {t: counts[t] for t in terms if counts.get(t)}
        if not present:
            return {}, total
        rare = [t for t, n in present.items() if n <= COMMON_SHARE * total] or [min(present, key=present.get)]
        return {t: idf(present[t], total) for t in rare}, total

    def terms(self, text: str) -> list[str]:
        """``text``'s words as the index stores them (lower case, stemmed), stop words left out."""
        return [t for t in self._words.terms(self.db.conn, text) if t not in STOP_WORDS]


def with_keys(conn: Any, doc: Doc) -> Doc:
    """``doc`` with what reflection learned from its source in its context: a question about a fact said in
    passing then finds the entry where it was said (see :mod:`core.memory.storage.extracted`)."""
    keys = keys_of(conn, doc.id)
    base = doc.context.split(LEARNED)[0]
    context = _keyed(base, keys)
    return doc if context == doc.context else replace(doc, context=context)


def learned_keys(context: str) -> list[str]:
    """What a doc's context holds of what reflection learned from it."""
    _, found, keys = context.partition(LEARNED)
    return [k for k in keys.split(" ; ") if k] if found else []


def _keyed(base: str, keys: list[str]) -> str:
    return f"{base}{LEARNED}{' ; '.join(keys)}" if keys else base


def _doc(row: Any) -> Doc:
    return Doc(id=row["id"], kind=row["kind"], tier=row["tier"], source=row["source"], text=row["text"],
               occurred_at=row["occurred_at"], created_at=row["created_at"], context=row["context"],
               metadata=json.loads(row["metadata"] or "{}"), speaker=row["speaker"], thread=row["thread"],
               expires_at=row["expires_at"], subject=row["subject"], rowid=row["rowid"])


STOP_WORDS = frozenset(
    "a about after again all also am an and any are as at be because been before being between both but by "
    "can could did do does doing down during each few for from had has have having he her here hers herself "
    "him himself his how i if in into is it its itself just me might more most my myself no nor not now of "
    "off on once only or other our ours out over own same she should so some such than that the their "
    "theirs them themselves then there these they this those through to too under until up very was we were "
    "what when where which while who whom why will with would you your yours yourself yourselves "
    "did ha wa thi whi becaus veri onli ani".split()
)
"""Words that say nothing about a memory (with their Porter stems: ``was`` is stored as ``wa``)."""
