"""Reading memory.db's tables on read-only connections: every read the inspector makes.

With SQLite a connection is opened with ``mode=ro``, so SQLite itself refuses any
write, and each request reads inside one read transaction: a page sees one
consistent state of the database while an engine goes on writing (in WAL mode
readers and the writer never wait for each other). With PostgreSQL each request
is one ``REPEATABLE READ READ ONLY`` transaction on the agent's schema, which
gives the same. The inspector knows the schema through this module (and ``read_activity``) only; a table that
is missing (an older database, or none yet) reads as empty.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from typing import Any, Iterator

from core.config import StorageConfig
from core.errors import StorageError, ValidationError
from core.memory.storage import residence
from core.memory.storage.backend import schema_name
from core.memory.storage.dialect import POSTGRES, SQLITE, Dialect
from core.memory.storage.titles import shown_title
from core.memory.storage.facts import MIN_REDACTED_CHARS, REDACTED, Fact, lookup_key, versions_of
from core.memory.storage.read_activity import ActivityReads
from core.paths import AgentPaths

BUSY_TIMEOUT_S = 5.0
MAX_FACTS = 2000
MAX_FACT_VERSIONS = 500

_SECRETS = "SELECT value FROM user_facts WHERE category = 'secret' AND length(value) >= ?"
_FACTS = """SELECT key, value, category, created_at, updated_at FROM user_facts
            ORDER BY category, key LIMIT ?"""
_FACT = "SELECT key, value, category, created_at, updated_at FROM user_facts WHERE key = ?"
_FACT_VERSIONS = """SELECT id, value, category, saved_at, replaced_at FROM fact_versions
                    WHERE key = ? ORDER BY id DESC LIMIT ?"""
_VERSION_COUNTS = "SELECT key, count(*) AS n FROM fact_versions GROUP BY key"
_PROFILES = """SELECT user_id, profile, soul, constraints, version, updated_at FROM ctx_agent_memory
               WHERE agent_id = ? ORDER BY user_id"""
_LOG_ROWS = """SELECT id AS seq, timestamp AS ts, entry_type AS type, run_id, archive_id
               FROM log_metadata {where} ORDER BY id {order} LIMIT ?"""
_TYPE_COUNTS = "SELECT entry_type, count(*) AS n FROM log_metadata GROUP BY entry_type"
_RUNS = """WITH recent AS (SELECT run_id, id, timestamp FROM log_metadata
                           WHERE entry_type = 'RUN_START' AND run_id IS NOT NULL ORDER BY id DESC LIMIT ?)
           SELECT r.run_id, r.id AS start_seq, r.timestamp AS started_at,
                  (SELECT max(id) FROM log_metadata e
                   WHERE e.run_id = r.run_id AND e.entry_type = 'RUN_END') AS end_seq,
                  (SELECT max(id) FROM log_metadata e
                   WHERE e.run_id = r.run_id AND e.entry_type = 'INTERRUPTED') AS interrupted_seq,
                  (SELECT count(*) FROM log_metadata e
                   WHERE e.run_id = r.run_id AND e.entry_type = 'ERROR') AS errors,
                  (SELECT count(*) FROM log_metadata e WHERE e.run_id = r.run_id) AS entries
           FROM recent r ORDER BY r.id DESC"""
_ENDED = """SELECT DISTINCT run_id FROM log_metadata
            WHERE run_id IN ({marks}) AND entry_type IN ('RUN_END', 'INTERRUPTED')"""
_OPEN_RUNS = """SELECT s.run_id, s.id AS start_seq, s.timestamp AS started_at FROM log_metadata s
                WHERE s.entry_type = 'RUN_START' AND s.run_id IS NOT NULL AND NOT EXISTS (
                    SELECT 1 FROM log_metadata e
                    WHERE e.run_id = s.run_id AND e.entry_type IN ('RUN_END', 'INTERRUPTED'))
                ORDER BY s.id"""
_COMPACTIONS = """SELECT id, compacted_at, entries_count, summary, archive_id, original_size_kb, new_size_kb,
                         first_seq, last_seq, indexed_at
                  FROM compaction_history WHERE id < ? ORDER BY id DESC LIMIT ?"""
_NOTES = """SELECT rowid AS cursor, id, kind, text, metadata, created_at FROM cold_notes
            WHERE rowid < ? ORDER BY rowid DESC LIMIT ?"""
_CONVERSATIONS = """SELECT c.id, c.session_id, c.user_id, c.channel, c.title, c.archived, c.created_at,
                           c.last_active,
                           (SELECT count(*) FROM ctx_messages m WHERE m.conversation_id = c.id) AS messages,
                           (SELECT count(*) FROM ctx_summaries s WHERE s.conversation_id = c.id) AS summaries,
                           (SELECT count(*) FROM ctx_items i WHERE i.conversation_id = c.id) AS context_items,
                           (SELECT coalesce(sum(token_count), 0) FROM ctx_items i
                            WHERE i.conversation_id = c.id) AS context_tokens
                    FROM ctx_conversations c ORDER BY c.last_active DESC, c.id DESC"""
_FORGOTTEN_MESSAGES = "SELECT id FROM recall_forgotten WHERE id LIKE 'msg:%'"
_MESSAGE_COLUMNS = """m.id, m.seq, m.role, m.content, m.tool_calls, m.tool_name, m.token_count, m.created_at,
                      sm.summary_id"""
_MESSAGES = f"""SELECT {_MESSAGE_COLUMNS} FROM ctx_messages m
                LEFT JOIN ctx_summary_messages sm ON sm.message_id = m.id
                WHERE m.conversation_id = ? AND m.seq < ? ORDER BY m.seq DESC LIMIT ?"""
_SUMMARY_COLUMNS = """s.id, s.kind, s.depth, s.content, s.token_count, s.source_token_count,
                      s.descendant_count, s.earliest_at, s.latest_at, s.created_at"""
_SUMMARY_ROOTS = f"""SELECT {_SUMMARY_COLUMNS} FROM ctx_summaries s
                     WHERE s.conversation_id = ?
                       AND NOT EXISTS (SELECT 1 FROM ctx_summary_parents p WHERE p.child_id = s.id)
                     ORDER BY s.earliest_at, s.created_at"""
_SUMMARY = f"SELECT {_SUMMARY_COLUMNS}, s.conversation_id FROM ctx_summaries s WHERE s.id = ?"
_SUMMARY_PARENTS = "SELECT parent_id FROM ctx_summary_parents WHERE child_id = ?"
_SUMMARY_CHILDREN = f"""SELECT {_SUMMARY_COLUMNS} FROM ctx_summary_parents p
                        JOIN ctx_summaries s ON s.id = p.child_id
                        WHERE p.parent_id = ? ORDER BY p.ordinal LIMIT ?"""
_SUMMARY_MESSAGES = f"""SELECT {_MESSAGE_COLUMNS} FROM ctx_summary_messages sm
                        JOIN ctx_messages m ON m.id = sm.message_id
                        WHERE sm.summary_id = ? ORDER BY sm.ordinal LIMIT ?"""
_SCHEMA_BYTES = """SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
                   WHERE c.relkind IN ('r', 'm')
                     AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())"""
_SCHEMA_WRITES = """SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint
                    FROM pg_stat_user_tables WHERE schemaname = current_schema()"""
_NEWEST = 2**63 - 1
"""A cursor above every id: the first page."""


@contextmanager
def reading(paths: AgentPaths, storage: StorageConfig) -> Iterator["Reader"]:
    """A :class:`Reader` over one read transaction of the agent's memory.db, or of its PostgreSQL schema
    (an empty one if it does not exist).

    Raises:
        StorageError: the agent's memory lives in the other backend (shown nowhere rather than stale or
            empty).
    """
    backend, dsn = storage.resolved()
    if backend == "postgres":
        from core.memory.storage.postgres.database import snapshot

        residence.check_postgres(paths)

        with snapshot(dsn, schema_name(paths.name, storage), storage) as conn:
            yield Reader(conn, POSTGRES)
        return
    residence.check_sqlite(paths)
    db_file = paths.db_file
    if not db_file.is_file():
        yield Reader(None)
        return
    try:
        conn = sqlite3.connect(db_file.absolute().as_uri() + "?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S,
                               isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open {db_file} for reading: {exc}") from exc
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("BEGIN")  # deferred: the snapshot is taken by the first read
        yield Reader(conn)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read {db_file}: {exc}") from exc
    finally:
        conn.close()  # ends the read transaction; nothing was written


class Reader(ActivityReads):
    """The queries of one request, inside its read transaction (those of activity over time:
    ``ActivityReads``)."""

    def __init__(self, conn: Any, dialect: Dialect = SQLITE) -> None:
        self.conn = conn
        self.dialect = dialect
        self.tables: set[str] = set()
        if conn is not None:
            self.tables = {r[0] for r in conn.execute(dialect.tables)}

    def _rows(self, table: str, sql: str, params: tuple | list = ()) -> list[dict[str, Any]]:
        if table not in self.tables:
            return []
        return [dict(row) for row in self.conn.execute(sql, params)]

    def _value(self, table: str, sql: str, params: tuple | list = (), default: Any = 0) -> Any:
        if table not in self.tables:
            return default
        row = self.conn.execute(sql, params).fetchone()
        return default if row is None or row[0] is None else row[0]

    def _count(self, table: str, where: str = "") -> int:
        return self._value(table, f"SELECT count(*) FROM {table} {where}")

    # -- facts ----------------------------------------------------------------------

    def secret_values(self) -> list[str]:
        """Values of the secret facts long enough to be looked for in text, longest first."""
        rows = self._rows("user_facts", _SECRETS, (MIN_REDACTED_CHARS,))
        return sorted((r["value"] for r in rows), key=len, reverse=True)

    def facts(self) -> list[dict[str, Any]]:
        """Facts by category and key, each with how many earlier values it has kept (``versions``); a secret's
        value is replaced by ``[REDACTED]`` whatever its length."""
        rows = self._rows("user_facts", _FACTS, (MAX_FACTS,))
        counts = {r["key"]: r["n"] for r in self._rows("fact_versions", _VERSION_COUNTS)}
        for row in rows:
            row["versions"] = counts.get(row["key"], 0)
            if row["category"] == "secret":
                row["value"] = REDACTED
        return rows

    def fact_history(self, key: str) -> list[dict[str, Any]] | None:
        """The values of the fact ``key`` (None: no such fact), newest first: the current one, then at most
        ``MAX_FACT_VERSIONS`` earlier ones, as ``agentos facts --history`` lists them (a secret's values, and
        the earlier values of a fact while it is secret, as ``[REDACTED]``)."""
        try:
            if lookup_key(key) != key:
                return None
        except ValidationError:  # not a key any fact can have (PostgreSQL would refuse a NUL in it)
            return None
        found = self._rows("user_facts", _FACT, (key,))
        if not found:
            return None
        fact = Fact(**found[0])
        rows = self._rows("fact_versions", _FACT_VERSIONS, (key, MAX_FACT_VERSIONS))
        return [version.as_dict() for version in versions_of(fact, rows)]

    def fact_version_count(self, key: str) -> int:
        """How many earlier values the fact ``key`` has kept."""
        return self._value("fact_versions", "SELECT count(*) FROM fact_versions WHERE key = ?", (key,))

    def fact_count(self) -> int:
        return self._count("user_facts")

    def profiles(self, agent: str) -> list[dict[str, Any]]:
        """Profile, soul and constraints stored for ``agent``, one row a user."""
        rows = self._rows("ctx_agent_memory", _PROFILES, (agent,))
        for row in rows:
            row["constraints"] = [c.get("text", "") if isinstance(c, dict) else str(c)
                                  for c in _json_list(row["constraints"])]
        return rows

    # -- the LOG.md index ---------------------------------------------------------

    def log_rows(
        self, *, types: list[str], run: str | None, before: int | None, after: int | None,
        seq_range: tuple[int, int] | None, limit: int,
    ) -> list[dict[str, Any]]:
        """Indexed entries matching the filters: the ``limit`` newest before ``before``, or, with
        ``after``, the ``limit`` oldest after it; always returned newest first."""
        where, params = _log_filter(types, run, seq_range)
        for clause, bound in (("id < ?", before), ("id > ?", after)):
            if bound is not None:
                where.append(clause)
                params.append(bound)
        order = "ASC" if after is not None and before is None else "DESC"
        sql = _LOG_ROWS.format(where=_where(where), order=order)
        rows = self._rows("log_metadata", sql, [*params, limit])
        return rows if order == "DESC" else rows[::-1]

    def log_any(self, *, types: list[str], run: str | None, seq_range: tuple[int, int] | None,
                low: int | None = None, high: int | None = None) -> bool:
        """Whether an indexed entry matching the filters has a seq in ``[low, high]``."""
        where, params = _log_filter(types, run, seq_range)
        for clause, bound in (("id >= ?", low), ("id <= ?", high)):
            if bound is not None:
                where.append(clause)
                params.append(bound)
        sql = f"SELECT 1 FROM log_metadata {_where(where)} LIMIT 1"
        return bool(self._value("log_metadata", sql, params))

    def log_count(self, *, types: list[str], run: str | None, seq_range: tuple[int, int] | None) -> int:
        where, params = _log_filter(types, run, seq_range)
        return self._value("log_metadata", f"SELECT count(*) FROM log_metadata {_where(where)}", params)

    def last_indexed_seq(self) -> int:
        return self._value("log_metadata", "SELECT max(id) FROM log_metadata")

    def type_counts(self) -> dict[str, int]:
        rows = self._rows("log_metadata", _TYPE_COUNTS)
        return {r["entry_type"]: r["n"] for r in rows}

    def runs(self, limit: int) -> list[dict[str, Any]]:
        """The newest runs (by their RUN_START): where each started and ended, its errors and entries.

        ``end_seq`` is the RUN_END's seq, ``interrupted_seq`` that of an INTERRUPTED entry
        logged when a later start found the run never ended.
        """
        return self._rows("log_metadata", _RUNS, (limit,))

    def ended(self, runs: list[str]) -> set[str]:
        """Those of ``runs`` that have a RUN_END or INTERRUPTED entry."""
        if not runs:
            return set()
        sql = _ENDED.format(marks=", ".join("?" * len(runs)))
        return {r["run_id"] for r in self._rows("log_metadata", sql, runs)}

    def open_runs(self) -> list[dict[str, Any]]:
        """Runs with a RUN_START but neither a RUN_END nor an INTERRUPTED entry, oldest first."""
        return self._rows("log_metadata", _OPEN_RUNS)

    # -- compactions and the cold tier ----------------------------------------------

    def compactions(self, before: int | None, limit: int) -> list[dict[str, Any]]:
        """``compaction_history`` rows, newest first; ``indexed_at`` is empty until the archive is indexed."""
        return self._rows("compaction_history", _COMPACTIONS, (_cursor(before), limit))

    def compaction_count(self) -> int:
        return self._count("compaction_history")

    def unindexed_archives(self) -> int:
        return self._count("compaction_history", "WHERE indexed_at IS NULL")

    def pending_cold_items(self) -> int:
        """Sources (facts, notes, messages, store items) changed since recall last indexed them."""
        return self._count("cold_pending")

    def pending_vectors(self) -> int:
        """Memories searchable by words whose vector is not computed yet."""
        return self._count("recall_docs", "WHERE vector_state = 0")

    def notes(self, before: int | None, limit: int) -> list[dict[str, Any]]:
        """Notes stored with ``store_memory``, newest first; ``cursor`` pages to older ones."""
        rows = self._rows("cold_notes", _NOTES, (_cursor(before), limit))
        for row in rows:
            row["metadata"] = _json_object(row["metadata"])
        return rows

    def note_count(self) -> int:
        return self._count("cold_notes")

    # -- conversations ----------------------------------------------------------------

    def conversations(self) -> list[dict[str, Any]]:
        """Every conversation with its counts, most recently active first. A title taken from a message that
        was forgotten since is the next user message's that was not (or empty), as the prompt shows it."""
        rows = self._rows("ctx_conversations", _CONVERSATIONS)
        forgotten = {r["id"] for r in self._rows("recall_forgotten", _FORGOTTEN_MESSAGES)}
        for row in rows if forgotten else []:
            row["title"] = shown_title(self.conn, row["id"], row["title"] or "", forgotten)
        return rows

    def conversation(self, conv: int) -> dict[str, Any] | None:
        return next((c for c in self.conversations() if c["id"] == conv), None)

    def messages(self, conv: int, before: int | None, limit: int) -> list[dict[str, Any]]:
        """Messages of a conversation, newest first, each with the leaf summary that covers it (if any)."""
        return [_message(r) for r in self._rows("ctx_messages", _MESSAGES, (conv, _cursor(before), limit))]

    def message_count(self) -> int:
        return self._count("ctx_messages")

    def summary_roots(self, conv: int) -> list[dict[str, Any]]:
        """Summaries no other summary was built from (the tops of the DAG), oldest first."""
        return self._rows("ctx_summaries", _SUMMARY_ROOTS, (conv,))

    def summary(self, summary_id: str) -> dict[str, Any] | None:
        """One summary, with the ids of the summaries built from it."""
        rows = self._rows("ctx_summaries", _SUMMARY, (summary_id,))
        if not rows:
            return None
        rows[0]["parents"] = [r["parent_id"] for r in self._rows("ctx_summary_parents", _SUMMARY_PARENTS,
                                                                 (summary_id,))]
        return rows[0]

    def summary_children(self, summary_id: str, limit: int) -> list[dict[str, Any]]:
        """The summaries a condensed summary was built from, in order."""
        return self._rows("ctx_summary_parents", _SUMMARY_CHILDREN, (summary_id, limit))

    def summary_messages(self, summary_id: str, limit: int) -> list[dict[str, Any]]:
        """The original messages a leaf summary was built from, in order."""
        rows = self._rows("ctx_summary_messages", _SUMMARY_MESSAGES, (summary_id, limit))
        return [_message(r) for r in rows]


    # -- the PostgreSQL schema --------------------------------------------------------

    def schema_bytes(self) -> int:
        """Bytes the agent's PostgreSQL schema takes on the server (tables, indexes, TOAST); 0 on SQLite."""
        return self.conn.execute(_SCHEMA_BYTES).fetchone()[0] if self.dialect is POSTGRES else 0

    def schema_writes(self) -> int:
        """Rows written to the schema's tables since the server's statistics began, as they report it
        (within about a second of a commit); 0 on SQLite, whose file stamps say as much."""
        return self.conn.execute(_SCHEMA_WRITES).fetchone()[0] if self.dialect is POSTGRES else 0


def _cursor(before: int | None) -> int:
    return _NEWEST if before is None else before


def _log_filter(types: list[str], run: str | None, seq_range: tuple[int, int] | None) -> tuple[list, list]:
    where: list[str] = []
    params: list = []
    if types:
        where.append(f"entry_type IN ({', '.join('?' * len(types))})")
        params += types
    if run is not None:
        where.append("run_id = ?")
        params.append(run)
    if seq_range is not None:
        where.append("id BETWEEN ? AND ?")
        params += list(seq_range)
    return where, params


def _where(clauses: list[str]) -> str:
    return "WHERE " + " AND ".join(clauses) if clauses else ""


def _message(row: dict[str, Any]) -> dict[str, Any]:
    row["tool_calls"] = _json_list(row["tool_calls"])
    return row


def _json_list(text: str | None) -> list:
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _json_object(text: str | None) -> dict:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
