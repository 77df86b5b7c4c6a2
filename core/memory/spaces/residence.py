"""Where a space's index lives: ``index.db`` in its folder, or its schema on the PostgreSQL server.

The space's folder says so itself, with the rules of an agent's folder
(:mod:`core.memory.storage.residence`), so that two indexes of one journal never live side by side (one of
them would keep what a purge took out of the other, and each would be searched by half the hosts):

- ``storage.backend`` holds ``sqlite`` or ``postgres`` once a move has finished, ``copying-to-postgres`` or
  ``copying-to-sqlite`` while one runs (then both sides refuse the space until the move is run again);
- without it, ``storage.id`` (created at the folder's first open on PostgreSQL) means PostgreSQL, and its
  absence SQLite.

With PostgreSQL configured, a space whose ``index.db`` holds memories (or that was moved back to SQLite) is
refused; without a server, a space whose index lives on one is refused. ``agentos space move-index NAME --to
postgres|sqlite`` moves it: the index is derived, so a move rebuilds it from the journal on the other side,
then removes the old one (``index.db`` deleted, or the schema dropped).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from core.errors import ConfigError, StorageError, ValidationError
from core.durable import atomic_write, fsync_dir
from core.memory.spaces.index import SpaceIndex
from core.memory.spaces.paths import SpacePaths
from core.memory.storage.residence import (POSTGRES, SQLITE, TO_POSTGRES, TO_SQLITE, read_marker,
                                           tables_with_rows)

log = logging.getLogger(__name__)


def marker(paths: SpacePaths) -> Path:
    return paths.root / "storage.backend"


def recorded(paths: SpacePaths) -> str | None:
    """The word in ``storage.backend``, or None when there is no such file."""
    return read_marker(marker(paths), "the space's index")


def resident(paths: SpacePaths) -> str:
    """Where the space's index lives, or which move is under way."""
    word = recorded(paths)
    if word is not None:
        return word
    return POSTGRES if (paths.root / "storage.id").exists() else SQLITE


def check(paths: SpacePaths, backend: str) -> None:
    """Refuse to open the space's index on ``backend`` when it lives on the other side. Writes nothing.

    Raises:
        StorageError: the message names the move (or the server to set).
    """
    state = resident(paths)
    name = paths.name
    if state in (TO_SQLITE, TO_POSTGRES):
        target = "sqlite" if state == TO_SQLITE else "postgres"
        raise StorageError(f"the index of the space {name} is being moved ({state}; a move that was stopped "
                           f"leaves this): run `agentos space move-index {name} --to {target}` again, with "
                           "the server set")
    if backend == "sqlite" and state == POSTGRES:
        raise StorageError(
            f"the index of the space {name} lives in PostgreSQL (storage.backend or storage.id in "
            f"{paths.root}), and no server is configured: set $AGENTOS_DSN (or storage.backend postgres and "
            f"storage.dsn in the home's config.yaml), or bring it back with `agentos space move-index {name} "
            "--to sqlite` run with the server set")
    if backend == "postgres" and state == SQLITE:
        if recorded(paths) == SQLITE:
            what = "it was moved back to SQLite"
        else:
            busy = [t for t in tables_with_rows(paths.index_file) if t == "entries"]
            if not busy:
                return  # nothing indexed in SQLite yet: the schema is the index from now on
            what = f"{paths.index_file} holds its memories"
        raise StorageError(
            f"the index of the space {name} lives in SQLite: {what}, and storage is set to PostgreSQL: move "
            f"it with `agentos space move-index {name} --to postgres`, or unset $AGENTOS_DSN (and "
            "storage.backend) to keep it in SQLite")


def open_index(space: Any) -> Any:
    """The index of ``space`` where it lives (``index.db`` or its schema), refused as :func:`check` says."""
    backend, dsn = space.config.storage.resolved()
    check(space.paths, backend)
    if backend == "sqlite":
        return SpaceIndex(space.paths.index_file, space.journal, space.name)
    return _postgres_index(space, dsn)


def _postgres_index(space: Any, dsn: str) -> Any:
    try:
        from core.memory.spaces.pg_index import PostgresSpaceIndex
        from core.memory.storage.postgres.space_schema import SpaceDatabase, space_schema
    except ImportError as exc:
        raise ConfigError(f"storage.backend postgres needs psycopg ({exc}): pip install "
                          "'agentos[postgres]'") from exc
    storage = space.config.storage
    db = SpaceDatabase(dsn, space_schema(space.name, storage), storage, space.paths.index_file)
    return PostgresSpaceIndex(db, space.journal, space.name, space.paths.root)


def move_index(space: Any, target: str) -> int:
    """Rebuild ``space``'s index on ``target`` (``sqlite`` or ``postgres``) from its journal and remove it
    from the other side; return the journal entries indexed. Both directions need the server configured.

    Raises:
        ValidationError: an unknown target. ConfigError: no server configured.
    """
    if target not in (SQLITE, POSTGRES):
        raise ValidationError(f"move the index --to sqlite or --to postgres, not {target!r}")
    backend, dsn = space.config.storage.resolved()
    if backend != "postgres":
        raise ConfigError("moving a space's index between SQLite and PostgreSQL needs the server: set "
                          "$AGENTOS_DSN (or storage.backend postgres and storage.dsn in the home's "
                          "config.yaml)")
    paths = space.paths
    with space.lock.hold():
        space.close()
        atomic_write(marker(paths),
                     ((TO_POSTGRES if target == POSTGRES else TO_SQLITE) + "\n").encode("ascii"))
        if target == POSTGRES:
            index = _postgres_index(space, dsn)
            count = _rebuilt(index)
            remove_sqlite_index(paths)
        else:
            remove_sqlite_index(paths)  # one left from before the space moved to PostgreSQL is stale
            count = _rebuilt(SpaceIndex(paths.index_file, space.journal, space.name))
            drop_schema(space, dsn)
        atomic_write(marker(paths), (target + "\n").encode("ascii"))
    log.info("moved the index of the space %s to %s (%d journal entries)", space.name, target, count)
    return count


def _rebuilt(index: Any) -> int:
    try:
        return index.rebuild()
    finally:
        index.close()


def remove_sqlite_index(paths: SpacePaths) -> None:
    """Delete ``index.db``, its log and the damaged copies moved aside (all derived from the journal)."""
    for path in [paths.index_file.with_name(paths.index_file.name + s) for s in ("", "-wal", "-shm")] + \
            sorted(paths.root.glob("index.db.damaged-*")):
        path.unlink(missing_ok=True)
    fsync_dir(paths.root)


def drop_schema(space: Any, dsn: str) -> None:
    """Drop the space's schema on the server (its index, derived from the journal)."""
    from psycopg import sql

    from core.memory.storage.postgres.migrate import forget_ready, schema_lock
    from core.memory.storage.postgres.pool import close_pools
    from core.memory.storage.postgres.space_schema import space_schema

    schema = space_schema(space.name, space.config.storage)
    close_pools(schema)
    with schema_lock(dsn, schema, space.config.storage) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
    forget_ready()


def keep_residence(old: Path, new: Path) -> None:
    """Carry the space folder ``old``'s residence (``storage.backend``, ``storage.id``) into ``new``, which
    replaces it: the index stays where it lived, and the schema still knows the folder."""
    for name in ("storage.backend", "storage.id"):
        if (old / name).is_file():
            shutil.copy2(old / name, new / name)
