"""Where an agent's memory tables live: its own memory.db, or its schema on a PostgreSQL server.

An agent folder says so itself, so that neither side opens the memory the other one holds
(which would start an empty memory beside it, or rebuild a poorer one from LOG.md):

- ``memory/storage.backend`` holds one word, written atomically by the copies between the
  two: ``sqlite`` or ``postgres`` once a copy has finished, ``copying-to-postgres`` or
  ``copying-to-sqlite`` while one runs (then both sides refuse to open the agent until the
  copy is run again to its end);
- without that file, ``memory/storage.id`` (created at the folder's first open on
  PostgreSQL) means PostgreSQL, and its absence means SQLite.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from core.errors import StorageError
from core.durable import atomic_write, storage_error
from core.paths import AgentPaths

SQLITE, POSTGRES = "sqlite", "postgres"
TO_SQLITE, TO_POSTGRES = "copying-to-sqlite", "copying-to-postgres"
STATES = (SQLITE, POSTGRES, TO_SQLITE, TO_POSTGRES)


def marker(paths: AgentPaths) -> Path:
    return paths.memory_dir / "storage.backend"


def recorded(paths: AgentPaths) -> str | None:
    """The word in ``memory/storage.backend``, or None when there is no such file.

    Raises:
        StorageError: the file cannot be read or holds something else.
    """
    return read_marker(marker(paths), "the agent's memory")


def read_marker(path: Path, what: str) -> str | None:
    """The word in the ``storage.backend`` file ``path`` of ``what`` (named in the error), or None when there
    is no such file.

    Raises:
        StorageError: the file cannot be read or holds something else.
    """
    try:
        word = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise storage_error(exc, f"cannot read {path}") from exc
    except UnicodeDecodeError as exc:
        raise StorageError(f"cannot read {path}: {exc}") from exc
    if word not in STATES:
        raise StorageError(f"{path} holds {word[:40]!r}, not one of {', '.join(STATES)}: write where {what} "
                           "lives into it")
    return word


def record(paths: AgentPaths, state: str) -> None:
    """Write ``state`` into ``memory/storage.backend`` (atomic, durable)."""
    atomic_write(marker(paths), (state + "\n").encode("ascii"))


def resident(paths: AgentPaths) -> str:
    """Where the agent's memory lives, or which copy is under way (one of STATES)."""
    word = recorded(paths)
    if word is not None:
        return word
    return POSTGRES if (paths.memory_dir / "storage.id").exists() else SQLITE


def tables_with_rows(db_file: Path) -> list[str]:
    """The tables of the memory.db at ``db_file`` that hold rows (none when there is no file); read only.

    Bookkeeping is left out: ``_migrations``, SQLite's own tables and the FTS5 indexes, which mirror others.

    Raises:
        StorageError: the file cannot be read as a database.
    """
    if not db_file.is_file() or db_file.stat().st_size == 0:
        return []
    # Without a write-ahead log beside it the file holds everything: read it as immutable, which creates no
    # -wal and -shm files (a read-only open of a WAL database would leave them behind).
    wal = db_file.with_name(db_file.name + "-wal").exists()
    try:
        conn = sqlite3.connect(f"file:{db_file}?mode=ro" + ("" if wal else "&immutable=1"), uri=True)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read {db_file}: {exc}") from exc
    try:
        return [name for name in data_tables(conn)
                if conn.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone()]
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read {db_file}: {exc}") from exc
    finally:
        conn.close()


def data_tables(conn: sqlite3.Connection) -> list[str]:
    """memory.db's tables that hold the agent's data: all but its bookkeeping and its FTS5 tables (and
    shadows)."""
    fts = [row[0]
           for row in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%'")]
    return [name for (name,
                      ) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            if not (name.startswith("sqlite_") or name == "_migrations"
                    or any(name.startswith(f) for f in fts))]


def check_sqlite(paths: AgentPaths) -> None:
    """Refuse to open memory.db of an agent whose memory lives in PostgreSQL (or is being copied).

    Raises:
        StorageError: the message says how to reach the memory, or to bring it back.
    """
    state = resident(paths)
    if state == POSTGRES:
        raise StorageError(
            f"agent {paths.name}'s memory lives in PostgreSQL (its folder was opened there: "
            f"{marker(paths).name} or storage.id in {paths.memory_dir}), and no server is configured: set "
            "$AGENTOS_DSN (or storage.backend postgres and storage.dsn), or bring the memory back with "
            f"`agentos copy-to-sqlite --agent {paths.name}` run with the server set")
    if state in (TO_SQLITE, TO_POSTGRES):
        raise unfinished(paths, state)


def check_postgres(paths: AgentPaths) -> None:
    """Refuse to open on PostgreSQL an agent whose memory lives in memory.db (or is being copied). Writes
    nothing.

    Raises:
        StorageError: the message names ``agentos copy-to-postgres`` (or the copy to finish).
    """
    state = resident(paths)
    if state in (TO_SQLITE, TO_POSTGRES):
        raise unfinished(paths, state)
    if state == POSTGRES:
        return
    # The memory lives in SQLite here: copied back, or a folder never opened on PostgreSQL (new, or not
    # moved yet).
    if recorded(paths) == SQLITE:
        what = f"it was copied back to {paths.db_file}"
    else:
        busy = tables_with_rows(paths.db_file)
        if not busy:
            return
        what = f"{paths.db_file} holds its data ({', '.join(busy[:4])}{', ...' if len(busy) > 4 else ''})"
    raise StorageError(
        f"agent {paths.name}'s memory lives in SQLite: {what}, and storage is set to PostgreSQL: move it "
        f"with `agentos copy-to-postgres --agent {paths.name}`, or unset $AGENTOS_DSN (and storage.backend) "
        "to keep it in SQLite")


def unfinished(paths: AgentPaths, state: str) -> StorageError:
    """The error for an agent whose copy between the backends did not finish."""
    command = "copy-to-sqlite" if state == TO_SQLITE else "copy-to-postgres"
    return StorageError(f"agent {paths.name}'s memory is being copied ({state}; a copy that was stopped "
                        f"leaves this): run `agentos {command} --agent {paths.name}` again, with the server "
                        "set, to finish it")
