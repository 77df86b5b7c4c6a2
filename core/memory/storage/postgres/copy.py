"""Copy an agent's memory.db into its PostgreSQL schema: the move of an existing agent to a server.

Every table of memory.db is copied row for row (COPY) in one transaction, into
a schema whose tables are still empty, parents before children; the identity
columns then go on after the copied ids. FTS5 tables are not copied: the GIN
indexes cover the copied rows. The facts' triggers queue them for the cold
store again, which re-indexes them idempotently, and queue the secrets' scrub
again, which finds nothing left to change.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable

import psycopg
from psycopg import sql

from core.errors import NotFoundError, StorageError, ValidationError
from core.memory.storage.postgres.database import PostgresDatabase
from core.memory.storage.residence import data_tables

FIRST = ("cold_pending", "secret_scrubs")
"""Copied before the rest: the facts' triggers then update their rows instead of colliding with them."""

LAST = ("reflect_pending",)
"""Copied after the rest, over what the messages' and notes' triggers queued meanwhile: the queue is then the
source's, and what was already reflected is not queued again."""


def copy_memory_db(db_file: Path, db: PostgresDatabase, progress: Callable[[str, int], None] | None = None,
                   replace: bool = False) -> dict[str, int]:
    """Copy ``db_file`` into ``db``'s schema; return the rows copied per table.

    With ``replace`` the schema's rows (an older copy of this agent's memory) are deleted first, in the
    same transaction: the schema then holds memory.db's rows, or, after a failure, what it held before.

    Raises:
        NotFoundError: there is no memory.db.
        ValidationError: the schema already holds rows and ``replace`` is off (nothing is copied twice).
        StorageError: memory.db has a table the schema lacks, or either database failed; nothing was written.
    """
    if not db_file.is_file():
        raise NotFoundError(f"no memory.db at {db_file}: there is nothing to copy")
    source = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)
    try:
        with db.connection() as raw:
            target = schema_tables(raw, db.schema)
            tables = _source_tables(source, target)
            busy = [] if replace else busy_tables(raw, tables)
            if busy:
                raise ValidationError(f"schema {db.schema} already holds rows ({', '.join(busy)}): a copy "
                                      "goes only into an agent's empty schema, before its first run on "
                                      "PostgreSQL")
            counts = {}
            with raw.transaction():
                if replace:
                    _empty(raw, target)
                for name in _in_order(raw, db.schema, tables):
                    if name in LAST:
                        raw.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(name)))
                    counts[name] = _copy(source, raw, name, target[name])
                    if progress:
                        progress(name, counts[name])
                _continue_identities(raw, db.schema)
            return counts
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read {db_file}: {exc}") from exc
    except psycopg.Error as exc:
        raise db.error(exc) from exc
    finally:
        source.close()


BOOKKEEPING = ("_migrations", "_agent_folder", "checkpoint_migrations")
"""Tables of a schema that describe it rather than hold the agent's memory."""


def busy_tables(raw: psycopg.Connection, tables: list[str]) -> list[str]:
    """Which of ``tables`` hold rows."""
    return [name for name in tables if raw.execute(
        sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(sql.Identifier(name))).fetchone()[0]]


def schema_rows(db: PostgresDatabase) -> list[str]:
    """The tables of ``db``'s schema that hold the agent's rows (its bookkeeping left out)."""
    with db.connection() as raw, db.converting():
        return busy_tables(raw, [name for name in sorted(schema_tables(raw, db.schema))
                                 if name not in BOOKKEEPING])


def _empty(raw: psycopg.Connection, target: dict[str, list[str]]) -> None:
    """Delete every row of the agent's memory from the schema, LangGraph's checkpoints included."""
    names = [name for name in sorted(target) if name not in BOOKKEEPING]
    raw.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY").format(
        sql.SQL(", ").join(map(sql.Identifier, names))))


def schema_tables(raw: psycopg.Connection, schema: str) -> dict[str, list[str]]:
    """The schema's tables and their columns."""
    tables: dict[str, list[str]] = {}
    for table, column in raw.execute("SELECT table_name, column_name FROM information_schema.columns"
                                     " WHERE table_schema = %s ORDER BY ordinal_position", (schema,)):
        tables.setdefault(table, []).append(column)
    return tables


def _source_tables(source: sqlite3.Connection, target: dict[str, list[str]]) -> list[str]:
    """memory.db's tables to copy: all but its bookkeeping and its FTS5 tables (and their shadows)."""
    names = data_tables(source)
    missing = [name for name in names if name not in target]
    if missing:
        raise StorageError(f"memory.db has a table {missing[0]} that the PostgreSQL schema lacks: update "
                           "AgentOS")
    return names


def _in_order(raw: psycopg.Connection, schema: str, tables: list[str]) -> list[str]:
    """``tables`` with every referenced table before the tables that reference it (FIRST first, LAST last)."""
    parents: dict[str, set[str]] = {name: set() for name in tables}
    for child, parent in raw.execute(
            "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c"
            " JOIN pg_namespace n ON n.oid = c.connamespace WHERE c.contype = 'f' AND n.nspname = %s",
            (schema,)):
        child, parent = child.split(".")[-1].strip('"'), parent.split(".")[-1].strip('"')
        if child in parents and parent != child:
            parents[child].add(parent)
    ordered = [name for name in FIRST if name in parents]
    middle = [name for name in tables if name not in LAST]
    while len(ordered) < len(middle):
        ready = sorted(n for n in middle if n not in ordered and parents[n] <= set(ordered))
        ordered += ready[:1] or sorted(n for n in middle if n not in ordered)[:1]
    return ordered + [name for name in LAST if name in parents]


def _copy(source: sqlite3.Connection, raw: psycopg.Connection, name: str, columns: list[str]) -> int:
    # SQLite's implicit rowid is copied where the schema keeps it as a column (the order notes were
    # stored in).
    have = [row[1] for row in source.execute(f'PRAGMA table_info("{name}")')] + ["rowid"]
    shared = [column for column in columns if column in have]
    listed = sql.SQL(", ").join(map(sql.Identifier, shared))
    count = 0
    with raw.cursor().copy(sql.SQL("COPY {} ({}) FROM STDIN").format(sql.Identifier(name), listed)) as copy:
        quoted = ", ".join(f'"{column}"' for column in shared)
        for row in source.execute(f'SELECT {quoted} FROM "{name}"'):
            copy.write_row(row)
            count += 1
    return count


def _continue_identities(raw: psycopg.Connection, schema: str) -> None:
    """Each identity column's next value after the largest copied one."""
    for table, column in raw.execute("SELECT table_name, column_name FROM information_schema.columns"
                                     " WHERE table_schema = %s AND is_identity = 'YES'",
                                     (schema,)).fetchall():
        raw.execute(sql.SQL("SELECT setval(pg_get_serial_sequence(%s, %s), top) FROM (SELECT max({}) AS top "
                            "FROM {}) t WHERE top IS NOT NULL").format(sql.Identifier(column),
                                                                       sql.Identifier(table)),
                    (f'"{schema}"."{table}"', column))
