"""Migrations of an agent's PostgreSQL schema: memory.db's numbered migrations, in PostgreSQL's SQL.

Every ``core/memory/storage/migrations/mNNN_<name>.py`` is written once for both databases
(:mod:`core.memory.storage.migrations`). They run in order, each in
its own transaction, recorded in the schema's ``_migrations`` table like
memory.db's. LangGraph's checkpoint tables are set up in the same pass. An
advisory lock held while setting up makes processes that start together (on
any host) apply each migration once: the others wait, then find it recorded.
The whole setup runs on the connection that holds the lock, outside any other
transaction, and takes no step that waits for other sessions' snapshots, so no
wait can close a cycle through the lock.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

import psycopg
from psycopg import errors, sql

from core.config import StorageConfig
from core.errors import LockTimeoutError
from core.memory.files.log_format import utc_timestamp
from core.memory.storage.migrations import all_migrations
from core.memory.storage.postgres.pool import advisory_key, converted, describe, session_settings

log = logging.getLogger(__name__)

_FOLDER_TABLE = """CREATE TABLE IF NOT EXISTS _agent_folder (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    folder_id TEXT NOT NULL,   -- memory/storage.id of the agent folder whose LOG.md this schema indexes
    host TEXT NOT NULL,
    path TEXT NOT NULL,
    claimed_at TEXT NOT NULL
)"""
"""The one agent folder whose files this schema's log index and cold queue belong to."""

_SPACE_FOLDER_TABLE = _FOLDER_TABLE.replace("_agent_folder", "_space_folder").replace(
    "memory/storage.id of the agent folder whose LOG.md",
    "spaces/<name>/storage.id of the space folder whose journal")
"""The one space folder (``spaces/<name>/``) whose journal a memory space's schema indexes."""

_ready: set[tuple[int, str, str]] = set()
_ready_guard = threading.Lock()


def postgres_migrations() -> list[tuple[str, str]]:
    """``(name, sql)`` of every migration of memory.db, in order, as PostgreSQL runs it."""
    return [(m.name, m.script("postgres")) for m in all_migrations()]


@contextmanager
def schema_lock(dsn: str, schema: str, config: StorageConfig) -> Iterator[psycopg.Connection]:
    """A connection holding the schema's setup lock (processes on every host wait for it), outside any
    transaction: the setup runs on this connection, so it never waits for another of this process's.

    Raises:
        LockTimeoutError: another process held the lock for ``storage.statement_timeout_s``; says who.
    """
    key = advisory_key("migrate", schema)
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=max(1, round(config.connect_timeout_s)),
                               application_name=f"agentos {schema} setup"[:63])
    except psycopg.Error as exc:
        raise converted(exc, dsn, config) from exc
    try:
        with conn:
            settings = session_settings(config)
            for name, value in settings.items():
                conn.execute("SELECT set_config(%s, %s, false)", (name, value))
            # The wait is bounded as a lock wait (lock_timeout), so that it is reported as one.
            conn.execute("SELECT set_config('lock_timeout', %s, false), set_config('statement_timeout', '0', "
                         "false)",
                         (settings["statement_timeout"],))
            try:
                conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            except errors.LockNotAvailable as exc:
                raise LockTimeoutError(_lock_wait(dsn, schema, key, config)) from exc
            conn.execute("SELECT set_config('statement_timeout', %s, false)",
                         (settings["statement_timeout"],))
            yield conn
    except psycopg.Error as exc:
        raise converted(exc, dsn, config) from exc


def _lock_wait(dsn: str, schema: str, key: int, config: StorageConfig) -> str:
    """What a process that waited too long for the setup lock of ``schema`` tells: who holds it, doing
    what."""
    where = f"PostgreSQL at {describe(dsn)}"
    head = (f"{where}: waited {config.statement_timeout_s:g}s (storage.statement_timeout_s) for the setup "
            f"lock of schema {schema}")
    fix = "; wait for that process to finish, or stop it (pg_terminate_backend), then retry"
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    try:
        with psycopg.connect(dsn, autocommit=True,
                             connect_timeout=max(1, round(config.connect_timeout_s))) as conn:
            row = conn.execute(_HOLDER, (unsigned >> 32, unsigned & 0xFFFFFFFF)).fetchone()
    except psycopg.Error as exc:  # the reason for the first error matters more than this one's
        return f"{head} (its holder could not be looked up: {exc.sqlstate or exc}){fix}"
    if row is None:
        return f"{head}, which its holder has released since: retry"
    pid, app, client, state, waiting, busy_s, query = row
    doing = f"{state or 'unknown'} for {busy_s:.0f}s" + (f", itself waiting on {waiting}" if waiting else "")
    return (f"{head}, held by pid {pid} ({app or 'no application name'}, from {client or 'a local socket'}; "
            f"{doing}; last statement: {' '.join((query or '').split())[:120]}){fix}")


_HOLDER = """
SELECT a.pid, a.application_name, host(a.client_addr), a.state,
       nullif(concat_ws('/', a.wait_event_type, a.wait_event), ''),
       extract(epoch FROM now() - coalesce(a.state_change, a.backend_start))::float8, a.query
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s AND l.objsubid = 1
"""
"""The session holding a bigint advisory lock (pg_locks shows its key as two 32-bit halves)."""


def ensure(dsn: str, schema: str, config: StorageConfig) -> list[str]:
    """Set ``schema`` up whole, once per process: memory.db's migrations it lacks and LangGraph's checkpoint
    tables, all under one lock, on one connection, before this process opens any transaction on it.

    Returns the names applied.

    Raises:
        LockTimeoutError: another process kept the schema's setup lock too long (the message names it).
        StorageError: the server failed (a migration that failed is rolled back; rerunning goes on).
    """
    def set_up(conn: psycopg.Connection) -> list[str]:
        return _apply(conn, schema, postgres_migrations()) + _apply_checkpointer(conn)

    return _once(dsn, schema, config, set_up)


def ensure_space(dsn: str, schema: str, config: StorageConfig, scripts: list[tuple[str, str]]) -> list[str]:
    """Set up the schema of a memory space's index whole, once per process, as :func:`ensure` sets up an
    agent's: the ``(name, sql)`` migrations of ``scripts`` it lacks
    (:data:`core.memory.storage.postgres.space_schema.MIGRATIONS`), under the schema's setup lock, on one
    connection, before this process opens any transaction on it.

    Returns the names applied.

    Raises:
        LockTimeoutError: another process kept the schema's setup lock too long (the message names it).
        StorageError: the server failed (a migration that failed is rolled back; rerunning goes on).
    """
    return _once(dsn, schema, config, lambda conn: _apply(conn, schema, scripts, _SPACE_FOLDER_TABLE))


def _once(dsn: str, schema: str, config: StorageConfig,
          set_up: Callable[[psycopg.Connection], list[str]]) -> list[str]:
    """Run ``set_up`` on the connection holding ``schema``'s setup lock, once per process and schema."""
    key = (os.getpid(), dsn, schema)
    with _ready_guard:
        if key in _ready:
            return []
        with schema_lock(dsn, schema, config) as conn:
            applied = set_up(conn)
        _ready.add(key)
    if applied:
        log.info("schema %s set up: %s", schema, ", ".join(applied))
    return applied


def _apply(conn: psycopg.Connection, schema: str, scripts: list[tuple[str, str]],
           folder_table: str = _FOLDER_TABLE) -> list[str]:
    name = sql.Identifier(schema)
    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
    conn.execute("SELECT set_config('search_path', %s, false)", (name.as_string(conn),))
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    conn.execute(folder_table)
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    applied = []
    for migration, script in scripts:
        if migration in done:
            continue
        with conn.transaction():
            conn.execute(script.encode("utf-8"))  # bytes: run as written, several statements at once
            conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (%s, %s)",
                         (migration, utc_timestamp()))
        applied.append(migration)
    return applied


_CONCURRENTLY = re.compile(r"\bCONCURRENTLY\s+", re.IGNORECASE)


def _apply_checkpointer(conn: psycopg.Connection) -> list[str]:
    """LangGraph's checkpoint tables: ``PostgresSaver.setup()``'s migrations, recorded where it records them
    (``checkpoint_migrations``), so that the saver finds nothing left to do.

    Its indexes are built without CONCURRENTLY: a concurrent build waits for every transaction on the
    server that took a snapshot before it, including a process waiting here for this very lock, which
    then waits for ever (the server cannot see the cycle). These tables are new or small, and a plain
    build inside the migration's transaction also makes each step all or nothing.
    """
    from langgraph.checkpoint.postgres import PostgresSaver

    migrations = PostgresSaver.MIGRATIONS
    conn.execute(migrations[0])
    top = conn.execute("SELECT max(v) FROM checkpoint_migrations").fetchone()[0]
    applied = []
    for version in range(0 if top is None else top + 1, len(migrations)):
        with conn.transaction():
            conn.execute(_CONCURRENTLY.sub("", migrations[version]))
            conn.execute("INSERT INTO checkpoint_migrations (v) VALUES (%s)", (version,))
        applied.append(f"checkpoints v{version}")
    return applied


def forget_ready() -> None:
    """Check the schemas again at their next use (after a test dropped one)."""
    with _ready_guard:
        _ready.clear()
