"""Scrubbing secret values from an agent's PostgreSQL schema: every text column of every table.

The PostgreSQL form of :func:`core.memory.upkeep.scrub_tables.scrub_database`, just as
generic: it finds the schema's tables and columns in the catalog, so a table a
later feature adds is covered without being named here. Identifiers (columns in
a primary key or a plain index) are left alone; a column only an expression
index reads (the full-text ``tsvector`` indexes) is scrubbed.

The redactor is Python's, so each table is read a page at a time through a
server-side cursor and only the rows that change are written back, all in one
transaction. Then, as SQLite's ``secure_delete`` and FTS rebuild do for memory.db,
the old text is taken out of the live database: the changed tables are
vacuumed (their dead row versions removed) and their GIN indexes rebuilt with
``REINDEX CONCURRENTLY`` (a vacuumed GIN index still holds the old words as keys).
Neither blocks the engines writing meanwhile. What VACUUM does not reach (freed
space not yet reused, WAL, replicas, backups) is in docs/scaling.md, "Secrets".
"""

from __future__ import annotations

import logging

import psycopg
from psycopg import sql

from core.memory.storage.postgres.database import PostgresDatabase
from core.memory.storage.postgres.pool import advisory_key, configure
from core.memory.secrets.redaction import Redactor

log = logging.getLogger(__name__)

PAGE = 500
"""Rows read at a time from a table being scrubbed."""

_COLUMNS = """
SELECT t.relname, a.attname FROM pg_class t
JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE t.relnamespace = current_schema()::regnamespace AND t.relkind IN ('r', 'p')
  AND a.atttypid IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype)
  AND t.relname NOT IN ('_migrations', 'forgotten_values')
  AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = t.oid AND a.attnum = ANY (i.indkey))
ORDER BY t.relname, a.attnum
"""
"""Text columns of the schema's tables that are neither in a primary key nor in a plain index."""

_GIN = """
SELECT i.indexrelid::regclass::text FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid
JOIN pg_am m ON m.oid = x.relam WHERE i.indrelid = %s::regclass AND m.amname = 'gin' AND i.indisvalid
"""
_INVALID = (
    "SELECT i.indexrelid::regclass::text FROM pg_index i WHERE i.indrelid = %s::regclass AND NOT i.indisvalid"
)


def scrub_schema(db: PostgresDatabase, redactor: Redactor) -> tuple[dict[str, int], bool]:
    """Redact every free text column of the schema (a secret fact's own value excepted).

    Returns the rows changed per ``table.column``, and True (nothing is left pending: dead row
    versions a still-open transaction can see are removed by autovacuum once it ends).

    Raises:
        StorageError: the server failed; nothing was changed, or only the VACUUM is missing.
    """
    changed: dict[str, int] = {}
    with db.connection() as raw, db.converting():
        with raw.transaction():
            tables: dict[str, list[str]] = {}
            for table, column in raw.execute(_COLUMNS).fetchall():
                tables.setdefault(table, []).append(column)
            for table, columns in tables.items():
                for column, count in _scrub_table(raw, table, columns, redactor).items():
                    changed[f"{table}.{column}"] = count
    touched = sorted({key.split(".")[0] for key in changed})
    if touched:
        clean(db, touched)
    return changed, True


def _scrub_table(raw: psycopg.Connection, table: str, columns: list[str],
                 redactor: Redactor) -> dict[str, int]:
    """Rewrite the rows of ``table`` whose ``columns`` hold a secret; return the changes per column."""
    name = sql.Identifier(table)
    listed = sql.SQL(", ").join(map(sql.Identifier, columns))
    where = sql.SQL(" WHERE category <> 'secret'") if table == "user_facts" else sql.SQL("")
    updates: list[tuple] = []
    counts: dict[str, int] = {}
    with raw.cursor(name=f"agentos_scrub_{table}"[:63]) as cursor:
        cursor.itersize = PAGE
        cursor.execute(sql.SQL("SELECT ctid::text, {} FROM {}{}").format(listed, name, where))
        for ctid, *values in cursor:
            redacted = [redactor.text(v) if isinstance(v, str) else v for v in values]
            if redacted != values:
                updates.append((*redacted, ctid))
                for column, before, after in zip(columns, values, redacted):
                    if before != after:
                        counts[column] = counts.get(column, 0) + 1
    if updates:
        assignments = sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(c)) for c in columns)
        with raw.cursor() as cursor:
            cursor.executemany(sql.SQL("UPDATE {} SET {} WHERE ctid = %s::tid").format(name, assignments),
                               updates)
    return counts


def clean(db: PostgresDatabase, tables: list[str]) -> None:
    """VACUUM ``tables`` and rebuild their GIN indexes, on a connection of its own without a statement
    timeout."""
    try:
        raw = psycopg.connect(db.dsn, autocommit=True,
                              connect_timeout=max(1, round(db.config.connect_timeout_s)))
    except psycopg.Error as exc:
        raise db.error(exc) from exc
    with raw, db.converting():
        configure(db.schema, db.config)(raw)
        raw.execute("SET statement_timeout = 0")
        # one rebuild at a time
        raw.execute("SELECT pg_advisory_lock(%s)", (advisory_key(db.schema, "scrub"),))
        for table in tables:
            qualified = sql.Identifier(db.schema, table).as_string(raw)
            raw.execute(sql.SQL("VACUUM {}").format(sql.Identifier(table)))
            # left by a rebuild the server cut short
            for (index,) in raw.execute(_INVALID, (qualified,)).fetchall():
                raw.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.SQL(index)))
            for (index,) in raw.execute(_GIN, (qualified,)).fetchall():
                raw.execute(sql.SQL("REINDEX INDEX CONCURRENTLY {}").format(sql.SQL(index)))
    log.info("schema %s: %s vacuumed and their full-text indexes rebuilt", db.schema, ", ".join(tables))
