"""A database's schema as text, for comparing what the migrations build with what an earlier version built.

    python -m tests.schema_snapshot      # rewrites tests/data/schema-*.txt from the migrations of this
    checkout
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
SQLITE_SNAPSHOT = DATA / "schema-sqlite.txt"
POSTGRES_SNAPSHOT = DATA / "schema-postgres.txt"


def _flat(sql: str) -> str:
    """``sql`` without comments, on one line, with single spaces."""
    return " ".join(re.sub(r"--[^\n]*", "", sql).split())


def sqlite_schema(conn: sqlite3.Connection) -> list[str]:
    """Every table, index, trigger and view of an SQLite database, as its CREATE statement."""
    rows = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name")
    return [f"{kind} {name}: {_flat(sql)}" for kind, name, sql in rows]


_PG_CATALOG = """
SELECT 'column ' || table_name || '.' || column_name || ': ' || data_type || ' null=' || is_nullable
       || ' default=' || coalesce(column_default, '') || ' identity=' || is_identity
FROM information_schema.columns WHERE table_schema = %(s)s
UNION ALL SELECT 'index ' || indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = %(s)s
UNION ALL SELECT 'trigger ' || t.tgname || ': ' || pg_get_triggerdef(t.oid)
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(s)s AND NOT t.tgisinternal
UNION ALL SELECT 'function ' || p.proname || ': ' || pg_get_functiondef(p.oid)
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %(s)s
UNION ALL SELECT 'constraint ' || conname || ': ' || pg_get_constraintdef(c.oid)
FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = %(s)s
"""


def postgres_schema(conn, schema: str) -> list[str]:
    """Every column, index, trigger, function and constraint of ``schema`` (its name written ``SCHEMA``)."""
    lines = [row[0] for row in conn.execute(_PG_CATALOG, {"s": schema})]
    return sorted(_flat(line.replace(f'"{schema}"', "SCHEMA").replace(schema, "SCHEMA")) for line in lines)


def main() -> None:
    """Write both snapshots from this checkout's migrations (SQLite in a scratch file, PostgreSQL on a test
    server)."""
    import tempfile
    import uuid

    import psycopg

    from core.memory.storage.postgres.migrate import ensure
    from core.config import StorageConfig
    from core.memory.storage.sqlite import connect
    from tests.postgres_server import PostgresServer

    DATA.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        conn = connect(Path(folder) / "memory.db")
        SQLITE_SNAPSHOT.write_text("\n".join(sqlite_schema(conn)) + "\n", encoding="utf-8")
        conn.close()
    server = PostgresServer.start()
    try:
        schema = f"snap_{uuid.uuid4().hex[:8]}"
        ensure(server.dsn, schema, StorageConfig())
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            POSTGRES_SNAPSHOT.write_text("\n".join(postgres_schema(conn, schema)) + "\n", encoding="utf-8")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
