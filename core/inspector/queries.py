"""Every read the inspector makes of memory.db, on read-only connections.

A connection is opened with ``mode=ro``, so SQLite itself refuses any write, and
each request reads inside one read transaction: a page sees one consistent state
of the database while an engine goes on writing (in WAL mode readers and the
writer never wait for each other). This module is the only place where the
inspector knows the schema; a table that is missing (an older database, or none
yet) reads as empty.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from core.errors import StorageError
from core.memory.facts import MIN_REDACTED_CHARS, REDACTED

BUSY_TIMEOUT_S = 5.0
MAX_FACTS = 2000


@contextmanager
def reading(db_file: Path) -> Iterator["Reader"]:
    """A :class:`Reader` over one read transaction of ``db_file`` (an empty one if it does not exist)."""
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


class Reader:
    """The queries of one request, inside its read transaction."""

    def __init__(self, conn: sqlite3.Connection | None) -> None:
        self.conn = conn
        self.tables: set[str] = set()
        if conn is not None:
            self.tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _rows(self, table: str, sql: str, params: tuple | list = ()) -> list[dict[str, Any]]:
        if table not in self.tables:
            return []
        return [dict(row) for row in self.conn.execute(sql, params)]

    def _value(self, table: str, sql: str, params: tuple | list = (), default: Any = 0) -> Any:
        if table not in self.tables:
            return default
        row = self.conn.execute(sql, params).fetchone()
        return default if row is None or row[0] is None else row[0]

    # -- facts ----------------------------------------------------------------------

    def secret_values(self) -> list[str]:
        """Values of the secret facts long enough to be looked for in text, longest first."""
        rows = self._rows("user_facts", "SELECT value FROM user_facts WHERE category = 'secret' AND length(value) >= ?",
                          (MIN_REDACTED_CHARS,))
        return sorted((r["value"] for r in rows), key=len, reverse=True)

    def facts(self) -> list[dict[str, Any]]:
        """Facts by category and key; a secret's value is replaced by ``[REDACTED]`` whatever its length."""
        rows = self._rows("user_facts", "SELECT key, value, category, created_at, updated_at FROM user_facts"
                          " ORDER BY category, key LIMIT ?", (MAX_FACTS,))
        for row in rows:
            if row["category"] == "secret":
                row["value"] = REDACTED
        return rows

    def fact_count(self) -> int:
        return self._value("user_facts", "SELECT count(*) FROM user_facts")

    def profiles(self, agent: str) -> list[dict[str, Any]]:
        """Profile, soul and constraints stored for ``agent``, one row a user."""
        rows = self._rows("ctx_agent_memory", "SELECT user_id, profile, soul, constraints, version, updated_at"
                          " FROM ctx_agent_memory WHERE agent_id = ? ORDER BY user_id", (agent,))
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
        if before is not None:
            where.append("id < ?")
            params.append(before)
        if after is not None:
            where.append("id > ?")
            params.append(after)
        order = "ASC" if after is not None and before is None else "DESC"
        rows = self._rows("log_metadata", "SELECT id AS seq, timestamp AS ts, entry_type AS type, run_id,"
                          f" archive_id FROM log_metadata {_where(where)} ORDER BY id {order} LIMIT ?",
                          [*params, limit])
        return rows if order == "DESC" else rows[::-1]

    def log_any(self, *, types: list[str], run: str | None, seq_range: tuple[int, int] | None,
                low: int | None = None, high: int | None = None) -> bool:
        """Whether an indexed entry matching the filters has a seq in ``[low, high]``."""
        where, params = _log_filter(types, run, seq_range)
        for clause, bound in (("id >= ?", low), ("id <= ?", high)):
            if bound is not None:
                where.append(clause)
                params.append(bound)
        return bool(self._value("log_metadata", f"SELECT 1 FROM log_metadata {_where(where)} LIMIT 1", params))

    def log_count(self, *, types: list[str], run: str | None, seq_range: tuple[int, int] | None) -> int:
        where, params = _log_filter(types, run, seq_range)
        return self._value("log_metadata", f"SELECT count(*) FROM log_metadata {_where(where)}", params)

    def last_indexed_seq(self) -> int:
        return self._value("log_metadata", "SELECT max(id) FROM log_metadata")

    def type_counts(self) -> dict[str, int]:
        rows = self._rows("log_metadata", "SELECT entry_type AS type, count(*) AS n FROM log_metadata"
                          " GROUP BY entry_type")
        return {r["type"]: r["n"] for r in rows}

    def runs(self, limit: int, run: str | None = None) -> list[dict[str, Any]]:
        """The newest runs (or one run): where each started and ended, and how many entries it logged.

        ``end_seq`` is the RUN_END's seq, ``interrupted_seq`` that of an INTERRUPTED entry
        logged when a later start found the run never ended.
        """
        where = "WHERE run_id = ?" if run is not None else "WHERE run_id IS NOT NULL"
        return self._rows(
            "log_metadata",
            "SELECT run_id, min(CASE WHEN entry_type = 'RUN_START' THEN id END) AS start_seq,"
            " max(CASE WHEN entry_type = 'RUN_END' THEN id END) AS end_seq,"
            " max(CASE WHEN entry_type = 'INTERRUPTED' THEN id END) AS interrupted_seq,"
            " sum(entry_type = 'ERROR') AS errors, count(*) AS entries,"
            f" min(timestamp) AS started_at, max(timestamp) AS last_at FROM log_metadata {where}"
            " GROUP BY run_id ORDER BY min(id) DESC LIMIT ?",
            (run, limit) if run is not None else (limit,))

    def open_runs(self) -> list[dict[str, Any]]:
        """Runs with a RUN_START but neither a RUN_END nor an INTERRUPTED entry, oldest first."""
        return self._rows(
            "log_metadata",
            "SELECT s.run_id, s.id AS start_seq, s.timestamp AS started_at FROM log_metadata s"
            " WHERE s.entry_type = 'RUN_START' AND s.run_id IS NOT NULL AND NOT EXISTS ("
            " SELECT 1 FROM log_metadata e WHERE e.run_id = s.run_id AND e.entry_type IN ('RUN_END', 'INTERRUPTED'))"
            " ORDER BY s.id")

    # -- compactions and the cold tier ----------------------------------------------

    def compactions(self, before: int | None, limit: int) -> list[dict[str, Any]]:
        """``compaction_history`` rows, newest first (``indexed_at`` is empty until the archive is in the cold store)."""
        where = "WHERE id < ?" if before is not None else ""
        return self._rows(
            "compaction_history",
            "SELECT id, compacted_at, entries_count, summary, archive_id, original_size_kb, new_size_kb,"
            f" first_seq, last_seq, indexed_at FROM compaction_history {where} ORDER BY id DESC LIMIT ?",
            (before, limit) if before is not None else (limit,))

    def compaction_count(self) -> int:
        return self._value("compaction_history", "SELECT count(*) FROM compaction_history")

    def unindexed_archives(self) -> int:
        return self._value("compaction_history", "SELECT count(*) FROM compaction_history WHERE indexed_at IS NULL")

    def pending_cold_items(self) -> int:
        """Facts and notes changed since the cold store last indexed them."""
        return self._value("cold_pending", "SELECT count(*) FROM cold_pending")

    def notes(self, before: int | None, limit: int) -> list[dict[str, Any]]:
        """Notes stored with ``store_memory``, newest first; ``cursor`` pages to older ones."""
        where = "WHERE rowid < ?" if before is not None else ""
        rows = self._rows("cold_notes", f"SELECT rowid AS cursor, id, kind, text, metadata, created_at FROM cold_notes"
                          f" {where} ORDER BY rowid DESC LIMIT ?", (before, limit) if before is not None else (limit,))
        for row in rows:
            row["metadata"] = _json_object(row["metadata"])
        return rows

    def note_count(self) -> int:
        return self._value("cold_notes", "SELECT count(*) FROM cold_notes")

    # -- conversations ----------------------------------------------------------------

    def conversations(self) -> list[dict[str, Any]]:
        """Every conversation with its counts, most recently active first."""
        return self._rows(
            "ctx_conversations",
            "SELECT c.id, c.session_id, c.user_id, c.channel, c.title, c.archived, c.created_at, c.last_active,"
            " (SELECT count(*) FROM ctx_messages m WHERE m.conversation_id = c.id) AS messages,"
            " (SELECT count(*) FROM ctx_summaries s WHERE s.conversation_id = c.id) AS summaries,"
            " (SELECT count(*) FROM ctx_items i WHERE i.conversation_id = c.id) AS context_items,"
            " (SELECT coalesce(sum(token_count), 0) FROM ctx_items i WHERE i.conversation_id = c.id) AS context_tokens"
            " FROM ctx_conversations c ORDER BY c.last_active DESC, c.id DESC")

    def conversation(self, conv: int) -> dict[str, Any] | None:
        return next((c for c in self.conversations() if c["id"] == conv), None)

    def messages(self, conv: int, before: int | None, limit: int) -> list[dict[str, Any]]:
        """Messages of a conversation, newest first, each with the leaf summary that covers it (if any)."""
        where = "AND m.seq < ?" if before is not None else ""
        params = (conv, before, limit) if before is not None else (conv, limit)
        rows = self._rows(
            "ctx_messages",
            "SELECT m.id, m.seq, m.role, m.content, m.tool_calls, m.tool_name, m.token_count, m.created_at,"
            " sm.summary_id FROM ctx_messages m LEFT JOIN ctx_summary_messages sm ON sm.message_id = m.id"
            f" WHERE m.conversation_id = ? {where} ORDER BY m.seq DESC LIMIT ?", params)
        return [_message(r) for r in rows]

    def summary_roots(self, conv: int) -> list[dict[str, Any]]:
        """Summaries no other summary was built from (the tops of the DAG), oldest first."""
        return self._rows(
            "ctx_summaries",
            f"SELECT {_SUMMARY_COLUMNS} FROM ctx_summaries s WHERE s.conversation_id = ? AND NOT EXISTS"
            " (SELECT 1 FROM ctx_summary_parents p WHERE p.child_id = s.id) ORDER BY s.earliest_at, s.created_at",
            (conv,))

    def summary(self, summary_id: str) -> dict[str, Any] | None:
        rows = self._rows("ctx_summaries", f"SELECT {_SUMMARY_COLUMNS}, s.conversation_id FROM ctx_summaries s"
                          " WHERE s.id = ?", (summary_id,))
        if not rows:
            return None
        row = rows[0]
        row["parents"] = [r["parent_id"] for r in self._rows(
            "ctx_summary_parents", "SELECT parent_id FROM ctx_summary_parents WHERE child_id = ?", (summary_id,))]
        return row

    def summary_children(self, summary_id: str, limit: int) -> list[dict[str, Any]]:
        """The summaries a condensed summary was built from, in order."""
        return self._rows(
            "ctx_summary_parents",
            f"SELECT {_SUMMARY_COLUMNS} FROM ctx_summary_parents p JOIN ctx_summaries s ON s.id = p.child_id"
            " WHERE p.parent_id = ? ORDER BY p.ordinal LIMIT ?", (summary_id, limit))

    def summary_messages(self, summary_id: str, limit: int) -> list[dict[str, Any]]:
        """The original messages a leaf summary was built from, in order."""
        rows = self._rows(
            "ctx_summary_messages",
            "SELECT m.id, m.seq, m.role, m.content, m.tool_calls, m.tool_name, m.token_count, m.created_at,"
            " sm.summary_id FROM ctx_summary_messages sm JOIN ctx_messages m ON m.id = sm.message_id"
            " WHERE sm.summary_id = ? ORDER BY sm.ordinal LIMIT ?", (summary_id, limit))
        return [_message(r) for r in rows]

    def message_count(self) -> int:
        return self._value("ctx_messages", "SELECT count(*) FROM ctx_messages")


_SUMMARY_COLUMNS = ("s.id, s.kind, s.depth, s.content, s.token_count, s.source_token_count, s.descendant_count,"
                    " s.earliest_at, s.latest_at, s.created_at")


def _log_filter(types: list[str], run: str | None, seq_range: tuple[int, int] | None) -> tuple[list[str], list]:
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
