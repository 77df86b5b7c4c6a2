"""Migrations of an agent's PostgreSQL schema: memory.db's numbered migrations, in PostgreSQL's SQL.

Every ``core/memory/migrations/mNNN_<name>.py`` has its PostgreSQL form in
``core/memory/migrations/postgres/mNNN_<name>.sql``. They run in order, each in
its own transaction, recorded in the schema's ``_migrations`` table like
memory.db's. An advisory lock held while migrating makes processes that start
together (on any host) apply each migration once: the others wait, then find
it recorded.
"""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager
from importlib import resources
from typing import Iterator

import psycopg
from psycopg import sql

from core.config import StorageConfig
from core.errors import StorageError
from core.memory.log_format import utc_timestamp
from core.memory.postgres.pool import converted, session_settings

log = logging.getLogger(__name__)

_FOLDER_TABLE = """CREATE TABLE IF NOT EXISTS _agent_folder (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    folder_id TEXT NOT NULL,   -- memory/storage.id of the agent folder whose LOG.md this schema indexes
    host TEXT NOT NULL,
    path TEXT NOT NULL,
    claimed_at TEXT NOT NULL
)"""
"""The one agent folder whose files this schema's log index and cold queue belong to."""

_ready: set[tuple[int, str, str]] = set()
_ready_guard = threading.Lock()


def postgres_migrations() -> list[tuple[str, str]]:
    """``(name, sql)`` of every migration of memory.db, in order, in PostgreSQL's SQL.

    Raises:
        StorageError: a migration has no PostgreSQL form yet.
    """
    from core.memory.db import migrations

    folder = resources.files("core.memory.migrations") / "postgres"
    found = []
    for name, _apply in migrations():
        script = folder / f"{name}.sql"
        if not script.is_file():
            raise StorageError(f"migration {name} has no PostgreSQL form: add core/memory/migrations/postgres/"
                               f"{name}.sql, or use storage.backend sqlite")
        found.append((name, script.read_text(encoding="utf-8")))
    return found


@contextmanager
def schema_lock(dsn: str, schema: str, config: StorageConfig) -> Iterator[psycopg.Connection]:
    """A connection holding the schema's migration lock (processes on every host wait for it)."""
    from core.memory.postgres.database import advisory_key

    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=max(1, round(config.connect_timeout_s)))
    except psycopg.Error as exc:
        raise converted(exc, dsn, config) from exc
    try:
        with conn:
            for name, value in session_settings(config).items():
                conn.execute("SELECT set_config(%s, %s, false)", (name, value))
            conn.execute("SELECT pg_advisory_lock(%s)", (advisory_key("migrate", schema),))
            yield conn
    except psycopg.Error as exc:
        raise converted(exc, dsn, config) from exc


def ensure(dsn: str, schema: str, config: StorageConfig) -> list[str]:
    """Create ``schema`` and apply the migrations it lacks, once per process; return the names applied."""
    key = (os.getpid(), dsn, schema)
    with _ready_guard:
        if key in _ready:
            return []
        scripts = postgres_migrations()
        with schema_lock(dsn, schema, config) as conn:
            applied = _apply(conn, schema, scripts)
        _ready.add(key)
    if applied:
        log.info("schema %s migrated: %s", schema, ", ".join(applied))
    return applied


def _apply(conn: psycopg.Connection, schema: str, scripts: list[tuple[str, str]]) -> list[str]:
    name = sql.Identifier(schema)
    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
    conn.execute("SELECT set_config('search_path', %s, false)", (name.as_string(conn),))
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    conn.execute(_FOLDER_TABLE)
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    applied = []
    for migration, script in scripts:
        if migration in done:
            continue
        with conn.transaction():
            conn.execute(script.encode("utf-8"))  # bytes: run as written, several statements at once
            conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (%s, %s)", (migration, utc_timestamp()))
        applied.append(migration)
    return applied


def forget_ready() -> None:
    """Check the schemas again at their next use (after a test dropped one)."""
    with _ready_guard:
        _ready.clear()
