"""Which database holds an agent's memory tables: its own SQLite memory.db, or a schema on a PostgreSQL
server.

    db = open_database(paths, config.storage)

SQLite is the default and is opened exactly as before. With PostgreSQL
(``storage.backend: postgres`` or ``$AGENTOS_DSN``) the agent's tables live in
the schema ``<storage.schema_prefix><agent>``, which one agent folder claims:
a second, different folder of the same agent on another host is refused,
because its LOG.md would not match the index kept in the schema.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sqlite3
import uuid
from pathlib import Path
from typing import Any, Literal

from core.config import StorageConfig
from core.errors import ConfigError, StorageError
from core.memory.storage import residence
from core.memory.storage.protocol import Database
from core.memory.storage.sqlite import SqliteDatabase
from core.durable import atomic_write, storage_error
from core.memory.files.log_format import utc_timestamp
from core.paths import AgentPaths

MAX_SCHEMA_CHARS = 63
"""PostgreSQL's longest identifier."""


def schema_name(agent: str, config: StorageConfig) -> str:
    """The PostgreSQL schema of ``agent``: the prefix and the name, shortened with a hash past 63
    characters."""
    name = config.schema_prefix + agent
    if len(name.encode("utf-8")) <= MAX_SCHEMA_CHARS:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]
    return name.encode("utf-8")[: MAX_SCHEMA_CHARS - 11].decode("utf-8", "ignore") + "_" + digest


def open_database(paths: AgentPaths, config: StorageConfig | None = None) -> Database:
    """The database of the agent at ``paths``: ``SqliteDatabase`` or ``PostgresDatabase``.

    Raises:
        ConfigError: an unknown backend, postgres without a DSN, or psycopg missing.
        DatabaseUnavailableError: the PostgreSQL server cannot be reached.
        StorageError: the schema belongs to another folder of this agent, or the agent's memory lives in the
            other backend (or is being copied there): the message names the command that moves it.
    """
    config = config or StorageConfig()
    backend, dsn = config.resolved()
    if backend == "sqlite":
        residence.check_sqlite(paths)
        return SqliteDatabase(paths.db_file)
    residence.check_postgres(paths)  # before anything is created: the memory may live in memory.db
    db = postgres_database(dsn, schema_name(paths.name, config), config, paths.db_file)
    claim_schema(db, paths)
    return db


def require_sqlite(config: StorageConfig, what: str) -> None:
    """Raise ConfigError unless the memory tables are in memory.db: ``what`` works on that file."""
    if config.resolved()[0] != "sqlite":
        raise ConfigError(f"{what} works on memory.db files, and storage.backend is postgres: back the "
                          "schemas up with pg_dump --schema, or unset $AGENTOS_DSN and storage.backend for "
                          "agents kept in SQLite")


class Checkpoints:
    """LangGraph's checkpointer of one agent (``saver``), in ``memory/checkpoints.db`` or the agent's
    schema."""

    def __init__(self, saver: Any, closable: Any, kind: Literal["sqlite", "postgres"]) -> None:
        self.saver = saver
        self.kind = kind
        """Which database holds the checkpoints."""
        self._closable = closable

    def forget(self, thread_id: str) -> None:
        """Delete a finished thread's checkpoints, which hold its raw messages.

        SQLite: their pages are zeroed (``secure_delete``) and the WAL that still holds them is
        truncated. PostgreSQL: the rows are deleted; their old versions stay in the table's files
        until autovacuum frees the space and later writes reuse it (docs/scaling.md, "Secrets").
        """
        self.saver.delete_thread(thread_id)
        if self.kind == "sqlite":
            self._closable.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        """Close the checkpointer's connections. Safe to call twice."""
        self._closable.close()


def open_checkpointer(paths: AgentPaths, config: StorageConfig | None = None) -> Checkpoints:
    """LangGraph's checkpointer of the agent, in ``memory/checkpoints.db`` or its schema."""
    config = config or StorageConfig()
    backend, dsn = config.resolved()
    if backend == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(paths.checkpoints_file, check_same_thread=False)
        # A turn's checkpoints hold its raw messages (what the user typed, get_fact's replies): deleted with
        # the turn, their pages are zeroed and the WAL that still holds them is truncated.
        conn.execute("PRAGMA secure_delete = ON")
        return Checkpoints(SqliteSaver(conn), conn, "sqlite")
    from core.memory.storage.postgres.checkpoints import open_saver

    pool, saver = open_saver(dsn, schema_name(paths.name, config), config)
    return Checkpoints(saver, pool, "postgres")


def postgres_database(dsn: str, schema: str, config: StorageConfig, path: Path | None = None):
    """A ``PostgresDatabase`` (importing psycopg only now: SQLite users never load it)."""
    try:
        from core.memory.storage.postgres.database import PostgresDatabase
    except ImportError as exc:
        raise ConfigError(f"storage.backend postgres needs psycopg ({exc}): pip install "
                          "'agentos[postgres]'") from exc
    return PostgresDatabase(dsn, schema, config, path)


def claim_schema(db, paths: AgentPaths) -> None:
    """Record this agent folder as the owner of the schema on first use; refuse another folder after that."""
    mine = folder_id(paths.memory_dir / "storage.id")
    with db.transaction() as conn:
        conn.execute("INSERT OR IGNORE INTO _agent_folder (singleton, folder_id, host, path, claimed_at)"
                     " VALUES (1, ?, ?, ?, ?)",
                     (mine, socket.gethostname(), str(paths.root), utc_timestamp()))
        owner = conn.execute("SELECT * FROM _agent_folder").fetchone()
    if owner["folder_id"] != mine:
        raise StorageError(
            f"schema {db.schema} holds the memory of agent {paths.name} from the folder {owner['path']} on "
            f"host {owner['host']} (since {owner['claimed_at']}), not from {paths.root}: run the agent from "
            "that folder (mount it here), or give this deployment its own storage.schema_prefix")


def folder_id(path: Path) -> str:
    """The agent folder's id (``memory/storage.id``), created once: of processes racing, the first link
    wins."""
    if not path.exists():
        staged = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(staged, (uuid.uuid4().hex + "\n").encode("ascii"))
            try:
                os.link(staged, path)
            except FileExistsError:
                pass
        except OSError as exc:
            raise storage_error(exc, f"cannot create {path}") from exc
        finally:
            staged.unlink(missing_ok=True)
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise storage_error(exc, f"cannot read {path}") from exc
