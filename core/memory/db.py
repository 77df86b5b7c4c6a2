"""memory.db: one SQLite database an agent, in WAL mode, upgraded by numbered migrations.

Migrations are the modules ``core/memory/migrations/mNNN_<name>.py``; each
defines ``apply(conn)``. They run in order, each in its own transaction, and
are recorded in the ``_migrations`` table by name, so :func:`connect` is
idempotent and safe when several processes open the database at once. A
database that records a migration this version does not have was written by
another version: it is refused before anything is applied, never half upgraded.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import sqlite3
import threading
from pathlib import Path
from typing import Callable, Iterator
from contextlib import contextmanager

from core import __version__
from core.errors import StorageError
from core.memory import migrations as migrations_package

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 30_000

_migrated: set[Path] = set()
_migrated_guard = threading.Lock()


def migrations() -> list[tuple[str, Callable[[sqlite3.Connection], None]]]:
    """Return ``(name, apply)`` for every migration module, in order."""
    names = sorted(
        info.name
        for info in pkgutil.iter_modules(migrations_package.__path__)
        if info.name[:1] == "m" and info.name[1:4].isdigit()
    )
    found = []
    for name in names:
        module = importlib.import_module(f"{migrations_package.__name__}.{name}")
        found.append((name, module.apply))
    return found


def execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Run a multi-statement script inside the caller's transaction.

    ``sqlite3.executescript`` would commit first; this runs one complete
    statement at a time (triggers with inner semicolons included).
    """
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            conn.execute(pending)
            pending = ""
    if pending.strip():
        raise StorageError(f"incomplete SQL statement in migration: {pending.strip()[:80]}")


def open_connection(path: Path) -> sqlite3.Connection:
    """Open ``path`` with the pragmas every connection needs (no migrations); create its folder."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except (OSError, sqlite3.Error) as exc:
        raise StorageError(f"cannot open database {path}: {exc}") from exc
    return conn


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply the migrations ``conn`` lacks; return the names applied."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    known = migrations()
    recorded = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    unknown = sorted(recorded - {name for name, _ in known})
    if unknown:
        raise StorageError(
            f"memory.db was upgraded by another version of AgentOS (migration {unknown[-1]} is unknown to "
            f"AgentOS {__version__}): open the agent with that version, or upgrade AgentOS")
    applied = []
    for name, apply in known:
        with transaction(conn):
            if conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone():
                continue
            apply(conn)
            conn.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                (name,),
            )
            applied.append(name)
    if applied:
        log.info("memory.db migrated: %s", ", ".join(applied))
    return applied


def connect(path: Path) -> sqlite3.Connection:
    """Open memory.db at ``path``, creating and upgrading it as needed."""
    conn = open_connection(path)
    key = path.resolve()
    with _migrated_guard:
        if key not in _migrated or not _has_migrations_table(conn):
            try:
                migrate(conn)
            except sqlite3.Error as exc:
                conn.close()
                raise StorageError(f"cannot upgrade database {path}: {exc}") from exc
            except StorageError as exc:
                conn.close()
                raise StorageError(f"{path}: {exc}") from exc
            _migrated.add(key)
    return conn


def _has_migrations_table(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_migrations'").fetchone()
    return row is not None


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Run the block in one ``BEGIN IMMEDIATE`` transaction: all of it is written, or none."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class Database:
    """Per-thread connections to one memory.db."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._guard = threading.Lock()

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection, opened (and the database migrated) on first use."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path)
            self._local.conn = conn
            with self._guard:
                self._all.append(conn)
        return conn

    def transaction(self):
        """A write transaction on this thread's connection."""
        return transaction(self.conn)

    def close(self) -> None:
        """Close every connection this object opened. Safe to call twice."""
        with self._guard:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()
