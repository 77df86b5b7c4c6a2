"""memory.db: one SQLite database an agent, in WAL mode, upgraded by numbered migrations.

Migrations are the modules ``core/memory/storage/migrations/mNNN_<name>.py``, which
PostgreSQL's schemas share (:mod:`core.memory.storage.migrations`). They run in order,
each in its own transaction, and are recorded in the ``_migrations`` table by name, so :func:`connect` is
idempotent and safe when several processes open the database at once. A
database that records a migration this version does not have was written by
another version: it is refused before anything is applied, never half upgraded.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import sqlite3
import threading
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Callable, Iterator, Literal

from core import __version__
from core.errors import CorruptionError, DiskFullError, LockTimeoutError, ReadOnlyError, StorageError
from core.durable import AgentLock, TOO_MANY_FILES_FIX, fault_points, foreground, storage_error
from core.memory.storage.migrations import all_migrations
from core.memory.storage.dialect import SQLITE

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 30_000
AUTOCHECKPOINT_PAGES = 10_000
"""A commit that leaves more pages than this in memory.db's WAL copies them into the database (SQLite's
default is 1,000). A process's background indexer does it much sooner (:meth:`Database.checkpoint`), off
the writers' path: the append whose commit crossed the default waited for the copy and its fsyncs."""

_migrated: set[Path] = set()
_migrated_guard = threading.Lock()

_writers: dict[str, threading.RLock] = {}
_writers_guard = threading.Lock()
_fork_hook_registered = False


def migrations() -> list[tuple[str, Callable[[sqlite3.Connection], None]]]:
    """Return ``(name, apply)`` for every migration, in order (:mod:`core.memory.storage.migrations`)."""
    return [(m.name, functools.partial(_apply_script, m.script("sqlite"))) for m in all_migrations()]


def _apply_script(script: str, conn: sqlite3.Connection) -> None:
    execute_script(conn, script)


def execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Run a multi-statement script inside the caller's transaction (``sqlite3.executescript`` would commit
    first): one complete statement at a time, triggers with inner semicolons included."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            conn.execute(pending)
            pending = ""
    if pending.strip():
        raise StorageError(f"incomplete SQL statement in migration: {pending.strip()[:80]}")


def converted(exc: sqlite3.Error, path: object) -> StorageError:
    """The StorageError for an SQLite error on the database at ``path``, naming the fix."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary == sqlite3.SQLITE_READONLY:
        return ReadOnlyError(f"{path} is read-only ({exc}): make memory.db, its -wal and -shm files and the "
                             "memory folder writable, then retry")
    if primary == sqlite3.SQLITE_FULL or (primary == sqlite3.SQLITE_IOERR and _disk_full(Path(str(path)))):
        return DiskFullError(f"{path}: the disk is full ({exc}): free some disk space, then retry")
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return LockTimeoutError(f"{path} stayed locked by another process for {BUSY_TIMEOUT_MS // 1000}s "
                                f"({exc}): wait for it or stop it, then retry")
    if primary == sqlite3.SQLITE_CANTOPEN and _out_of_descriptors():
        return StorageError(f"cannot open {path}: {TOO_MANY_FILES_FIX}")
    if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        mark_damaged(Path(str(path)), str(exc))
        return CorruptionError(f"{path} is damaged ({exc}): open the agent again, which moves it to "
                               "memory/quarantine/ and rebuilds it from LOG.md and the archives")
    return StorageError(f"{path}: {type(exc).__name__}: {exc}")


def _out_of_descriptors() -> bool:
    """True when this process cannot open one more file: why SQLite says only "unable to open database
    file"."""
    try:
        os.close(os.open(os.devnull, os.O_RDONLY))
    except OSError as exc:
        return exc.errno in (errno.EMFILE, errno.ENFILE)
    return False


def _disk_full(path: Path) -> bool:
    """True when the file system holding ``path`` has (almost) no space left: an I/O error's likely cause."""
    try:
        stat = os.statvfs(path.parent)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < 64 * 1024


def damage_marker(path: Path) -> Path:
    """The file that records that the database at ``path`` was found damaged (``memory.db.damaged``)."""
    return path.with_name(path.name + ".damaged")


def mark_damaged(path: Path, reason: str) -> None:
    """Record that the database is damaged, so the next open sets it aside and rebuilds it."""
    with suppress(OSError):  # best effort: the error being raised is what the caller needs
        damage_marker(path).write_text(reason + "\n", encoding="utf-8")


def _converting(method):
    """``method`` of a cursor, its SQLite errors raised as StorageErrors (see :func:`converted`)."""
    @functools.wraps(method)
    def call(self, *args):
        try:
            return method(self, *args)
        except sqlite3.Error as exc:
            raise converted(exc, self.connection.path) from exc
    return call


class _Cursor(sqlite3.Cursor):
    """A cursor whose SQLite errors, from statements and from reading rows, are StorageErrors."""

    execute = _converting(sqlite3.Cursor.execute)
    executemany = _converting(sqlite3.Cursor.executemany)
    fetchone = _converting(sqlite3.Cursor.fetchone)
    fetchmany = _converting(sqlite3.Cursor.fetchmany)
    fetchall = _converting(sqlite3.Cursor.fetchall)
    __next__ = _converting(sqlite3.Cursor.__next__)


class Connection(sqlite3.Connection):
    """An SQLite connection whose errors, from statements and from reading rows, are StorageErrors.

    Third-party errors are converted here, at the one boundary every query crosses, so no
    caller sees a raw ``sqlite3.OperationalError`` (a read-only file, a full disk, a damaged
    database, a lock held too long).
    """

    path: str = ""
    writers_key: str = ""
    """The database file's real path: this process's write transactions on it queue on one lock."""

    def cursor(self, factory=_Cursor):  # type: ignore[override]
        return super().cursor(factory)

    def execute(self, sql, parameters=()):  # type: ignore[override]
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql, seq_of_parameters):  # type: ignore[override]
        return self.cursor().executemany(sql, seq_of_parameters)


def open_connection(path: Path) -> sqlite3.Connection:
    """Open ``path`` with the pragmas every connection needs (no migrations); create its folder."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False,
            factory=Connection,
        )
        conn.path = str(path)
        conn.writers_key = os.path.realpath(path)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA wal_autocheckpoint = {AUTOCHECKPOINT_PAGES}")
        conn.execute("PRAGMA foreign_keys = ON")
    except OSError as exc:
        raise storage_error(exc, f"cannot open database {path}") from exc
    except sqlite3.Error as exc:
        raise converted(exc, path) from exc
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
            f"{getattr(conn, 'path', 'memory.db')} was upgraded by another version of AgentOS (migration "
            f"{unknown[-1]} is unknown to AgentOS {__version__}): open the agent with that version, or "
            "upgrade AgentOS")
    applied = []
    for name, apply in known:
        with transaction(conn):
            if conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone():
                continue
            apply(conn)
            conn.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', "
                "'now'))",
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
            except StorageError:
                conn.close()
                raise
            _migrated.add(key)
    return conn


def _has_migrations_table(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_migrations'").fetchone() is not None


def truncate_wal(conn: sqlite3.Connection) -> bool:
    """Copy the WAL into the database and truncate it; False if a reader kept it for the busy timeout. SQLite
    answers busy at once while another connection checkpoints (a background indexer's passive checkpoint, a
    commit's automatic one): that one is waited for too, up to the busy timeout."""
    deadline, pause = time.monotonic() + BUSY_TIMEOUT_MS / 1000, 0.0005
    while True:
        busy, frames, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy or frames != -1 or time.monotonic() >= deadline:  # -1: the checkpoint lock was not had
            return not busy
        time.sleep(pause := min(pause * 2, 0.05))


@contextmanager
def transaction(conn: sqlite3.Connection, wait: bool = True) -> Iterator[sqlite3.Connection]:
    """Run the block in one ``BEGIN IMMEDIATE`` transaction: all of it is written, or none.

    The writers of one database in this process queue on a lock first. A writer that finds the database locked
    sleeps in SQLite and tries again 1, 2, 5, 10 ... 100 ms later, so one behind a thread that commits short
    transactions back to back (the background indexer) could wait for a second; the lock wakes it when the
    transaction before it ends. Other processes meet at SQLite's lock. ``wait=False``: raise LockTimeoutError
    at once, writing nothing, while another thread of this process writes the database (for a write that may
    be done later instead, such as indexing a LOG.md entry)."""
    writers = _writers_of(conn)
    if writers is not None and not wait and not writers.acquire(blocking=False):
        raise LockTimeoutError(f"{conn.path} is being written by another thread of this process")
    if writers is not None and wait and not writers.acquire(timeout=BUSY_TIMEOUT_MS / 1000):
        raise LockTimeoutError(f"{conn.path} stayed locked by another thread of this process for "
                               f"{BUSY_TIMEOUT_MS // 1000}s: wait for it or stop it, then retry")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            with foreground.holding():  # a background thread in here does not give way to the writers
                yield conn
        except BaseException:
            if conn.in_transaction:  # SQLite has already rolled back after some errors (a full disk)
                with suppress(StorageError):  # the error that stopped the block is the one to report
                    conn.execute("ROLLBACK")
            raise
        try:
            fault_points.reach("db.commit")
            conn.execute("COMMIT")
        except StorageError:
            if conn.in_transaction:
                with suppress(StorageError):
                    conn.execute("ROLLBACK")
            raise
    finally:
        if writers is not None:
            writers.release()


def _writers_of(conn: sqlite3.Connection) -> threading.RLock | None:
    """The lock this process's writers of ``conn``'s database queue on (None: a connection not opened
    here)."""
    global _fork_hook_registered
    key = getattr(conn, "writers_key", "")
    if not key:
        return None
    lock = _writers.get(key)
    if lock is None:
        with _writers_guard:
            if not _fork_hook_registered:
                os.register_at_fork(after_in_child=_forget_writers_after_fork)
                _fork_hook_registered = True
            lock = _writers.setdefault(key, threading.RLock())
    return lock


def _forget_writers_after_fork() -> None:
    """In a forked child: the parent's threads, which may have held these locks, are not the child's."""
    global _writers_guard
    _writers_guard = threading.Lock()
    _writers.clear()


_inherited: list[sqlite3.Connection] = []
"""Connections a forked child inherited: kept open and unused (closing one in the child would drop SQLite
locks the child's own connections hold on the same file)."""


class SqliteDatabase:
    """Per-thread connections to one memory.db; a forked child opens its own (a
    :class:`~core.memory.storage.Database`)."""

    dialect = SQLITE
    kind: Literal["sqlite"] = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        self._pid = os.getpid()

    def __repr__(self) -> str:
        return f"SqliteDatabase({str(self.path)!r})"

    @property
    def file(self) -> Path:
        """memory.db: the file holding the tables."""
        return self.path

    @property
    def location(self) -> str:
        """memory.db's path."""
        return str(self.path)

    def size_bytes(self) -> int:
        """memory.db's size (its -wal and -shm files not counted)."""
        try:
            return self.path.stat().st_size
        except OSError as exc:
            raise storage_error(exc, f"cannot read the size of {self.path}") from exc

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection, opened (and the database migrated) on first use."""
        if self._pid != os.getpid():
            self._after_fork()
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path)
            self._local.conn = conn
            with self._guard:
                self._all.append(conn)
        return conn

    def _after_fork(self) -> None:
        """In a forked child: set the parent's connections aside (SQLite connections must not cross a
        fork)."""
        _inherited.extend(self._all)
        self._all = []
        self._local = threading.local()
        self._guard = threading.Lock()
        self._pid = os.getpid()

    def transaction(self, wait: bool = True):
        """A write transaction on this thread's connection (``wait=False``: see :func:`transaction`)."""
        return transaction(self.conn, wait)

    def checkpoint(self) -> None:
        """Copy the WAL into memory.db without waiting for its readers and writers (a passive checkpoint);
        for a background thread (see :data:`AUTOCHECKPOINT_PAGES`)."""
        self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def close(self) -> None:
        """Close every connection this object opened (in this process). Safe to call twice."""
        if self._pid != os.getpid():
            self._after_fork()
        with self._guard:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    def iterate(self, sql: str, params: tuple = ()) -> sqlite3.Cursor:
        """The rows of a long read, fetched as they are consumed (an SQLite cursor already is)."""
        return self.conn.execute(sql, params)

    def serialize(self, conn: sqlite3.Connection, *key: object) -> None:
        """Inside a transaction: wait for other writers of ``key``; ``BEGIN IMMEDIATE`` already did."""

    def conversation_lock(self, conv: int, timeout: float):
        """The lock that lets one compaction at a time work on conversation ``conv`` (a file beside
        memory.db)."""
        lock_dir = Path(self.path).parent / "ctx-locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        return AgentLock(lock_dir / f"conversation-{conv}.lock", timeout=timeout, keep_open=False).hold()

