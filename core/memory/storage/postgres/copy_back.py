"""Copy an agent's PostgreSQL schema into a new memory.db file: the way back from a server to SQLite.

The file is built whole beside memory.db (its tables made by memory.db's own
migrations, every row of the schema inserted in one SQLite transaction from one
read-only snapshot of the schema) before anything takes memory.db's place:
:mod:`core.memory.storage.postgres.move` swaps it in. FTS5 indexes fill through their
triggers; the facts' triggers queue them for the cold store again (re-indexed
idempotently) and queue the secrets' scrub again (which finds nothing to change).
LangGraph's checkpoints are not copied: copy between runs, not during one.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Callable

import psycopg
from psycopg import sql

from core.errors import StorageError
from core.durable import storage_error
from core.memory.storage.sqlite import migrate, open_connection
from core.memory.storage.postgres.copy import FIRST, LAST, schema_tables
from core.memory.storage.postgres.database import PostgresDatabase, snapshot
from core.memory.storage.residence import data_tables

PAGE = 1000
"""Rows read from the server at a time."""


def copy_schema_to_file(db: PostgresDatabase, target: Path,
                        progress: Callable[[str, int], None] | None = None) -> dict[str, int]:
    """Create the SQLite database ``target`` holding every row of ``db``'s schema; return the rows per table.

    ``target`` must not exist. It is complete and flushed to disk when this returns.

    Raises:
        StorageError: the schema lacks a table of memory.db, or either database failed (``target`` may then
            be left half built: it is never memory.db itself).
    """
    conn = open_connection(target)
    try:
        migrate(conn)
        # rows come from a consistent database, parents in any order
        conn.execute("PRAGMA foreign_keys = OFF")
        tables = data_tables(conn)
        counts: dict[str, int] = {}
        with snapshot(db.dsn, db.schema, db.config) as pg:
            source = schema_tables(pg.raw, db.schema)
            missing = [name for name in tables if name not in source]
            if missing:
                raise StorageError(f"schema {db.schema} lacks the tables {', '.join(missing)} of memory.db: "
                                   "open the agent once on PostgreSQL with this version of AgentOS (it "
                                   "migrates the schema)")
            conn.execute("BEGIN IMMEDIATE")
            middle = [t for t in tables if t not in FIRST and t not in LAST]
            for name in [t for t in FIRST if t in tables] + middle + [t for t in LAST if t in tables]:
                if name in LAST:
                    conn.execute(f'DELETE FROM "{name}"')
                counts[name] = _copy(pg.raw, conn, name, source[name])
                if progress:
                    progress(name, counts[name])
            conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as exc:
        raise StorageError(f"cannot write {target}: {exc}") from exc
    except psycopg.Error as exc:
        raise db.error(exc) from exc
    finally:
        conn.close()
    _flush(target)
    return counts


def _copy(pg: psycopg.Connection, conn: sqlite3.Connection, name: str, columns: list[str]) -> int:
    """Insert every row of the schema's table ``name`` into memory.db's; return how many."""
    # Generated and hidden columns (hidden > 0) take no value; SQLite's implicit rowid does, where the
    # schema keeps it as a column (the order notes were stored in).
    have = [row[1] for row in conn.execute(f'PRAGMA table_xinfo("{name}")') if row[6] == 0] + ["rowid"]
    shared = [column for column in columns if column in have]
    listed = ", ".join(f'"{column}"' for column in shared)
    insert = f'INSERT INTO "{name}" ({listed}) VALUES ({", ".join("?" * len(shared))})'
    count = 0
    with pg.cursor(name=f"agentos_copy_{name}"[:63]) as cursor:
        cursor.itersize = PAGE
        cursor.execute(sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(map(sql.Identifier, shared)),
                                                           sql.Identifier(name)))
        while rows := cursor.fetchmany(PAGE):
            conn.executemany(insert, rows)
            count += len(rows)
    return count


def _flush(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise storage_error(exc, f"cannot flush {path}") from exc
