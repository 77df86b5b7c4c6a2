"""memory.db as a file staged for an export or an import: a consistent copy of an agent's database
and the few changes an archive's copy needs (secrets out, a new agent name).

These work on a copy only, never on an agent's own database, which its :class:`Database` writes.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Callable

from core.memory.storage.facts import REDACTED

TABLES = {"facts": "user_facts", "notes": "cold_notes", "conversations": "ctx_conversations",
          "messages": "ctx_messages", "summaries": "ctx_summaries", "store_items": "store_items"}
"""What an archive's manifest counts, and the table that holds each."""


def copy_database(source: sqlite3.Connection, target: Path) -> None:
    """A consistent copy of an open memory.db (SQLite's backup API), as one self-contained file."""
    with closing(sqlite3.connect(target)) as copy:
        source.backup(copy)
        copy.execute("PRAGMA journal_mode = DELETE")  # no -wal beside it


def connect(db_file: Path, *, autocommit: bool = False) -> sqlite3.Connection:
    """A connection to a staged copy (``autocommit`` for VACUUM and statements outside a transaction)."""
    return sqlite3.connect(db_file, isolation_level=None) if autocommit else sqlite3.connect(db_file)


def secret_values(db_file: Path) -> list[str]:
    """The values of the copy's secret facts, longest first (those redaction replaces)."""
    with closing(connect(db_file)) as conn:
        rows = conn.execute("SELECT value FROM user_facts WHERE category = 'secret' AND length(value) >= "
                            "3").fetchall()
    return sorted({row[0] for row in rows}, key=len, reverse=True)


def secret_fact_count(db_file: Path) -> int:
    """How many secret facts the copy holds."""
    with closing(connect(db_file)) as conn:
        return conn.execute("SELECT count(*) FROM user_facts WHERE category = 'secret'").fetchone()[0]


def delete_secret_facts(conn: sqlite3.Connection) -> None:
    """Delete the secret facts, their earlier values (never shown while the fact is secret) and, for one
    reflection learned, its provenance."""
    conn.execute("DELETE FROM fact_versions WHERE key IN (SELECT key FROM user_facts WHERE category = "
                 "'secret')")
    for table in ("extracted_sources", "extracted"):
        # an older copy has none
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
            conn.execute(f"DELETE FROM {table} WHERE memory_id IN "
                         "(SELECT 'fact:' || key FROM user_facts WHERE category = 'secret')")
    conn.execute("DELETE FROM user_facts WHERE category = 'secret'")


def redact_identifiers(conn: sqlite3.Connection, redact: Callable[[str], str]) -> int:
    """Redact the text of every column, keys and ids included (a fact's key, a memory's id, a conversation's),
    in every table but the full-text indexes' own and ``_migrations``; return the rows changed.

    The agent's own scrub leaves identifiers alone (they name what the user asked for); a copy that leaves
    may not keep a secret in them. The same redaction of the same key gives the same text in every table
    (``fact:<key>`` in recall's docs follows ``user_facts.key``); a row whose redacted key collides with
    another's is deleted.
    """
    conn.create_function("agentos_redact_id", 1, lambda v: redact(v) if isinstance(v, str) else v,
                         deterministic=True)
    changed = 0
    for table, columns in _columns(conn).items():
        if table == "_migrations":
            continue
        for column in sorted(columns):
            held = f'typeof("{column}") = \'text\' AND agentos_redact_id("{column}") IS NOT "{column}"'
            changed += conn.execute(f'UPDATE OR IGNORE "{table}" '
                                    f'SET "{column}" = agentos_redact_id("{column}") WHERE {held}').rowcount
            changed += conn.execute(f'DELETE FROM "{table}" WHERE {held}').rowcount
    return changed


def hide_forgotten_values(conn: sqlite3.Connection, values: list[str]) -> None:
    """Replace what the forgotten facts held (``forgotten_values.value``) by the redaction mark: the rows
    stay, so the copy still hides those facts' records, and the values do not leave."""
    conn.executemany("UPDATE forgotten_values SET value = ? WHERE value = ?", [(REDACTED, v) for v in values])


def set_archive_sha256(db_file: Path, digests: list[tuple[str, str]]) -> None:
    """Record each rewritten archive's new ``(sha256, archive_id)`` in the copy's compaction history."""
    with closing(connect(db_file)) as conn, conn:
        conn.executemany("UPDATE compaction_history SET archive_sha256 = ? WHERE archive_id = ?", digests)


def row_counts(db_file: Path) -> dict[str, int]:
    """The copy's rows in each table of :data:`TABLES` (0 for a table it does not have)."""
    with closing(connect(db_file)) as conn:
        present = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {name: conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] if table in present else 0
                for name, table in TABLES.items()}


def rename_agent(db_file: Path, old: str, new: str) -> None:
    """Give the copy's rows the agent's new name: agent ids, session ids, and recall's docs queued again."""
    with closing(connect(db_file)) as conn, conn:
        for table, columns in _columns(conn).items():
            if "agent_id" in columns:
                conn.execute(f'UPDATE "{table}" SET agent_id = ? WHERE agent_id = ?', (new, old))
            if "session_id" in columns:
                conn.execute(f'UPDATE "{table}" SET session_id = ? || substr(session_id, ?) '
                             "WHERE substr(session_id, 1, ?) = ?",
                             (new, len(old) + 1, len(old) + 1, f"{old}:"))
        # Recall's docs of messages and summaries name their conversation: rewrite them at the next sync.
        for source, table in (("msg", "ctx_messages"), ("sum", "ctx_summaries")):
            conn.execute(f"INSERT OR REPLACE INTO cold_pending (item, queued_at) SELECT '{source}:' || id, "
                         f"strftime('%Y-%m-%dT%H:%M:%fZ', 'now') FROM {table}")


def _columns(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """The columns of each ordinary table (neither a virtual table nor one a full-text index keeps itself)."""
    virtual = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")]
    tables = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' "
        "AND name NOT LIKE 'sqlite_%'") if not row[0].startswith(tuple(f"{v}_" for v in virtual))]
    return {table: {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')} for table in tables}
