"""Moving an agent's memory tables between its memory.db and its PostgreSQL schema, both ways, crash-safely.

Each move first records in the agent folder that it is under way
(``memory/storage.backend``, see :mod:`core.memory.storage.residence`), so that neither
side opens the agent meanwhile; then it copies; then it records where the memory
lives now. The source is never changed. A move killed at any point leaves the
target empty or as it was (the copy to PostgreSQL is one transaction; the copy to
SQLite is built in a file of its own and swapped in whole), and running it again
finishes it: the source is frozen until then, so copying it again is always right.

``step(name)`` is called at each named point (``marked``, ``table <name>`` once a
table is copied, ``copied``, ``swapped``); the crash tests stop a move there.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable

import psycopg

from core.config import StorageConfig
from core.errors import ConfigError, LockTimeoutError, NotFoundError, StorageError, ValidationError
from core.memory.storage import residence
from core.durable import fsync_dir, storage_error
from core.memory.storage.postgres.copy import copy_memory_db, schema_rows
from core.memory.storage.postgres.copy_back import copy_schema_to_file
from core.memory.storage.postgres.database import PostgresDatabase
from core.memory.storage.postgres.pool import application_name, converted
from core.memory.storage.residence import POSTGRES, SQLITE, TO_POSTGRES, TO_SQLITE
from core.memory.storage.backend import claim_schema, postgres_database, schema_name
from core.paths import AgentPaths
from core.memory.storage.engine_lease import AgentLease

log = logging.getLogger(__name__)

Step = Callable[[str], None]


def _nothing(name: str) -> None:
    """No fault point."""


def to_postgres(paths: AgentPaths, config: StorageConfig,
                step: Step = _nothing) -> tuple[dict[str, int], PostgresDatabase]:
    """Copy memory.db into the agent's schema (empty, or holding an older copy of this folder's memory).

    Raises:
        ConfigError: no PostgreSQL server is configured.
        ValidationError: the memory lives in PostgreSQL already, or the schema holds another memory's rows.
        LockTimeoutError: an engine runs the agent on memory.db.
        StorageError: another folder owns the schema, a copy to SQLite is unfinished, or a database failed.
    """
    db = _database(paths, config)
    state = residence.resident(paths)
    if state == POSTGRES:
        raise ValidationError(f"agent {paths.name}'s memory lives in PostgreSQL already (schema "
                              f"{db.schema}): nothing to copy")
    if state == TO_SQLITE:
        raise residence.unfinished(paths, state)
    if not paths.db_file.is_file():
        raise NotFoundError(f"no memory.db at {paths.db_file}: there is nothing to copy")
    replace = state == TO_POSTGRES or residence.recorded(paths) == SQLITE  # the schema holds an older copy
    lease = AgentLease(paths)  # no engine runs on memory.db meanwhile
    try:
        _check_owner(db, paths)
        busy = [] if replace else schema_rows(db)
        if busy:
            raise ValidationError(f"schema {db.schema} already holds rows ({', '.join(busy[:4])}): a copy "
                                  "goes only into an agent's empty schema (docs/scaling.md says how to empty "
                                  "one filled by mistake)")
        residence.record(paths, TO_POSTGRES)
        step("marked")
        try:
            claim_schema(db, paths)
            counts = copy_memory_db(paths.db_file, db, lambda table, rows: step(f"table {table}"),
                                    replace=True)
        except BaseException:  # not a crash: the transaction rolled back, so memory.db still holds the memory
            residence.record(paths, SQLITE)
            raise
        step("copied")
        residence.record(paths, POSTGRES)
    finally:
        lease.release()
    log.info("agent %s: memory.db copied into schema %s, where its memory lives now", paths.name, db.schema)
    return counts, db


def to_sqlite(paths: AgentPaths, config: StorageConfig,
              step: Step = _nothing) -> tuple[dict[str, int], PostgresDatabase]:
    """Copy the agent's schema into a new memory.db that takes the old one's place (an older copy, if any).

    Raises:
        ConfigError: no PostgreSQL server is configured.
        ValidationError: the memory lives in memory.db already.
        LockTimeoutError: engines or commands are connected to the agent's schema.
        StorageError: another folder owns the schema, a copy to PostgreSQL is unfinished, or a database
            failed.
    """
    db = _database(paths, config)
    state = residence.resident(paths)
    if state == SQLITE:
        raise ValidationError(f"agent {paths.name}'s memory lives in {paths.db_file} already: nothing to "
                              "copy")
    if state == TO_POSTGRES:
        raise residence.unfinished(paths, state)
    _check_idle(db)  # before this process opens connections of its own to the schema
    _check_owner(db, paths)
    residence.record(paths, TO_SQLITE)
    step("marked")
    staged = paths.db_file.with_name(paths.db_file.name + ".copying")
    _remove(staged, *_companions(staged))
    try:
        counts = copy_schema_to_file(db, staged, lambda table, rows: step(f"table {table}"))
    except BaseException:  # not a crash: memory.db is untouched and the schema still holds the memory
        _remove(staged, *_companions(staged))
        residence.record(paths, POSTGRES)
        raise
    step("copied")
    # An older memory.db's write-ahead log must not be replayed onto the new file, and older checkpoints
    # must not come back: both go before the swap.
    _remove(*_companions(paths.db_file), paths.checkpoints_file, *_companions(paths.checkpoints_file))
    os.replace(staged, paths.db_file)
    fsync_dir(paths.memory_dir)
    step("swapped")
    residence.record(paths, SQLITE)
    log.info("agent %s: schema %s copied into %s, where its memory lives now", paths.name, db.schema,
             paths.db_file)
    return counts, db


def _database(paths: AgentPaths, config: StorageConfig) -> PostgresDatabase:
    backend, dsn = config.resolved()
    if backend != "postgres":
        raise ConfigError("no PostgreSQL server is configured: set $AGENTOS_DSN (or storage.backend postgres "
                          "and storage.dsn) to the server that holds, or is to hold, the agent's memory")
    return postgres_database(dsn, schema_name(paths.name, config), config, paths.db_file)


def _check_owner(db: PostgresDatabase, paths: AgentPaths) -> None:
    """Refuse a schema that another folder of this agent owns (the check ``claim_schema`` makes), writing
    nothing."""
    owner = db.conn.execute("SELECT * FROM _agent_folder").fetchone()
    mine = paths.memory_dir / "storage.id"
    if owner is not None and (not mine.exists()
                              or mine.read_text(encoding="utf-8").strip() != owner["folder_id"]):
        raise StorageError(f"schema {db.schema} holds the memory of agent {paths.name} from the folder "
                           f"{owner['path']} on host {owner['host']}, not from {paths.root}: copy from that "
                           "folder, or give this deployment its own storage.schema_prefix")


def _check_idle(db: PostgresDatabase) -> None:
    """Refuse while engines or commands are connected to the schema: their writes would miss the copy."""
    try:
        timeout = max(1, round(db.config.connect_timeout_s))
        with psycopg.connect(db.dsn, autocommit=True, connect_timeout=timeout) as conn:
            rows = conn.execute("SELECT pid, coalesce(host(client_addr), 'a local socket') FROM "
                                "pg_stat_activity WHERE application_name = %s AND pid <> pg_backend_pid()",
                                (application_name(db.schema),)).fetchall()
    except psycopg.Error as exc:
        raise converted(exc, db.dsn, db.config) from exc
    if rows:
        raise LockTimeoutError(f"{len(rows)} connections of other processes use schema {db.schema} (pids "
                               f"{', '.join(str(r[0]) for r in rows[:5])}, from {rows[0][1]}): stop the "
                               "agent's engines and commands, then copy")


def _companions(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def _remove(*paths: Path) -> None:
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise storage_error(exc, f"cannot remove {path}") from exc
