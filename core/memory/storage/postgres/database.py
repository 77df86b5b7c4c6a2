"""PostgresDatabase: memory.db's tables in one PostgreSQL schema, used exactly like
:class:`core.memory.storage.sqlite.SqliteDatabase`.

``db.conn.execute(sql, params)`` runs one statement on a pooled connection
(autocommit) and returns its rows; ``with db.transaction() as conn`` holds one
connection for a ``BEGIN ... COMMIT``. Rows answer ``row[0]`` and
``row["name"]`` like ``sqlite3.Row``. The statements are memory.db's own,
translated (:mod:`core.memory.storage.postgres.translate`).
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager, suppress
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal, Sequence

import psycopg
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from core.config import StorageConfig
from core.errors import DatabaseUnavailableError, LockTimeoutError, StorageError
from core.durable import fault_points, foreground
from core.memory.storage.dialect import POSTGRES
from core.memory.storage.postgres import migrate
from core.memory.storage.postgres.pool import advisory_key, claim_pool, converted, probe, release_pool
from core.memory.storage.postgres.translate import translate

log = logging.getLogger(__name__)

ITER_PAGE = 64
"""Rows fetched at a time by :meth:`PostgresDatabase.iterate`: about what one context needs."""
_FIRST_WAIT_S = 0.005
_LONGEST_WAIT_S = 0.2


class Row(tuple):
    """A result row readable by position and by column name, like ``sqlite3.Row``."""

    __slots__ = ()
    _index: dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            try:
                key = self._index[key]
            except KeyError:
                raise IndexError(f"no column named {key!r}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


@lru_cache(maxsize=1024)
def _row_class(names: tuple[str, ...]) -> type[Row]:
    index: dict[str, int] = {}
    for position, name in enumerate(names):
        index.setdefault(name, position)  # the first of equal names wins, as in sqlite3.Row
    return type("Row", (Row,), {"__slots__": (), "_index": index})


def row_factory(cursor: psycopg.Cursor) -> Any:
    """psycopg's row factory for :class:`Row`."""
    description = cursor.description
    if description is None:
        return tuple
    return _row_class(tuple(column.name for column in description))


class Result:
    """The rows of a statement already read from the server."""

    __slots__ = ("_rows", "_next", "rowcount")

    def __init__(self, rows: list, rowcount: int) -> None:
        self._rows = rows
        self._next = 0
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list:
        rows = self._rows[self._next:]
        self._next = len(self._rows)
        return rows

    def __iter__(self) -> Iterator:
        while self._next < len(self._rows):
            self._next += 1
            yield self._rows[self._next - 1]


class PipelinedCursor:
    """A statement's cursor in a pipelined transaction: reading rows or ``rowcount`` waits for its result."""

    __slots__ = ("_cursor", "_pipeline", "_db")

    def __init__(self, cursor: psycopg.Cursor, pipeline: psycopg.Pipeline, db: "PostgresDatabase") -> None:
        self._cursor, self._pipeline, self._db = cursor, pipeline, db

    def fetchone(self) -> Any:
        return self._cursor.fetchone()  # psycopg syncs the pipeline for it

    def fetchall(self) -> list:
        return self._cursor.fetchall()

    def __iter__(self) -> Iterator:
        return iter(self._cursor)

    @property
    def rowcount(self) -> int:
        try:
            self._pipeline.sync()
        except psycopg.Error as exc:
            raise self._db.error(exc) from exc
        return self._cursor.rowcount


class BoundConnection:
    """One checked-out connection (in a transaction): ``execute`` and ``executemany`` like sqlite3's."""

    def __init__(self, raw: psycopg.Connection, pipeline: psycopg.Pipeline, db: "PostgresDatabase") -> None:
        self.raw = raw
        self.pipeline = pipeline
        self.db = db

    def execute(self, sql: str, params: Sequence | None = None) -> PipelinedCursor:
        try:
            return PipelinedCursor(self.raw.execute(translate(sql), params or ()), self.pipeline, self.db)
        except psycopg.Error as exc:
            raise self.db.error(exc) from exc

    def executemany(self, sql: str, rows: Iterable[Sequence]) -> PipelinedCursor:
        cursor = self.raw.cursor()
        try:
            cursor.executemany(translate(sql), list(rows))
        except psycopg.Error as exc:
            raise self.db.error(exc) from exc
        return PipelinedCursor(cursor, self.pipeline, self.db)


class _AutocommitConnection:
    """``db.conn`` outside a transaction: each statement on a pooled connection, committed at once."""

    def __init__(self, db: "PostgresDatabase") -> None:
        self.db = db

    def execute(self, sql: str, params: Sequence | None = None) -> Result:
        with self.db.connection() as raw:
            try:
                cursor = raw.execute(translate(sql), params or ())
                rows = cursor.fetchall() if cursor.description is not None else []
            except psycopg.Error as exc:
                raise self.db.error(exc) from exc
            return Result(rows, cursor.rowcount)

    def executemany(self, sql: str, rows: Iterable[Sequence]) -> Result:
        with self.db.transaction() as conn:
            return Result([], conn.executemany(sql, rows).rowcount)


class ReadOnlyConnection:
    """The connection of one read-only transaction: ``execute`` takes memory.db's SQL, like sqlite3's."""

    def __init__(self, raw: psycopg.Connection, dsn: str, config: StorageConfig) -> None:
        self.raw, self.dsn, self.config = raw, dsn, config

    def execute(self, sql: str, params: Sequence | None = None) -> psycopg.Cursor:
        try:
            return self.raw.execute(translate(sql), params or ())
        except psycopg.Error as exc:
            raise converted(exc, self.dsn, self.config) from exc


@contextmanager
def snapshot(dsn: str, schema: str, config: StorageConfig) -> Iterator[ReadOnlyConnection]:
    """One read-only, repeatable-read transaction on ``schema``, which is neither created nor migrated:
    every read in the block sees one state while engines go on writing, and the server refuses a write.

    Raises:
        DatabaseUnavailableError: the server cannot be reached.
    """
    pool = claim_pool(dsn, schema, config, row_factory=row_factory)
    try:
        with pool.connection() as raw:
            raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield ReadOnlyConnection(raw, dsn, config)
            finally:
                with suppress(psycopg.Error):  # a lost connection ended the transaction; the pool drops it
                    raw.execute("ROLLBACK")
    except (psycopg.Error, PoolTimeout) as exc:
        raise converted(exc, dsn, config) from exc
    finally:
        release_pool(pool, dsn, schema, config, row_factory=row_factory)


class PostgresDatabase:
    """One agent's memory tables in the schema ``schema`` of the server at ``dsn``."""

    dialect = POSTGRES
    kind: Literal["postgres"] = "postgres"
    file = None
    """No file of ours holds the tables: the server does."""

    def __init__(self, dsn: str, schema: str, config: StorageConfig | None = None,
                 path: Path | None = None) -> None:
        """``path`` is the agent's memory.db path, kept for messages and for the files beside it."""
        self.dsn = dsn
        self.schema = schema
        self.config = config or StorageConfig()
        self.path = path if path is not None else Path(schema)
        self._local = threading.local()
        self._auto = _AutocommitConnection(self)
        self._pool: ConnectionPool | None = None
        self._guard = threading.Lock()

    def __repr__(self) -> str:
        from core.memory.storage.postgres.pool import describe

        return f"PostgresDatabase({describe(self.dsn)!r}, schema={self.schema!r})"

    @property
    def location(self) -> str:
        """The server (never its password) and the schema."""
        return repr(self)

    def size_bytes(self) -> int:
        """Bytes the schema's tables take on the server, their indexes and TOAST included."""
        return int(self.conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relkind = 'r'",
            (self.schema,)).fetchone()[0])

    # -- connections -------------------------------------------------------------

    def pool(self) -> ConnectionPool:
        """The pool (opened, and the schema migrated, on first use), claimed until :meth:`close`."""
        with self._guard:
            if self._pool is None or self._pool.closed:
                pool = claim_pool(self.dsn, self.schema, self.config, row_factory=row_factory)
                try:
                    self.set_up()
                except BaseException:
                    release_pool(pool, self.dsn, self.schema, self.config, row_factory=row_factory)
                    raise
                self._pool = pool
            return self._pool

    def set_up(self) -> None:
        """Create and migrate the schema, once a process (an agent's tables; a space's index overrides it)."""
        migrate.ensure(self.dsn, self.schema, self.config)

    @property
    def conn(self) -> BoundConnection | _AutocommitConnection:
        """This thread's transaction's connection, else one that runs each statement on its own."""
        bound = getattr(self._local, "bound", None)
        return bound if bound is not None else self._auto

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection for the ``with`` block."""
        pool = self.pool()
        try:
            raw = pool.getconn()
        except PoolTimeout as exc:
            probe(self.dsn, self.config)  # a server that is down is said so, not "all connections busy"
            raise self.error(exc) from exc
        # closed under this database (close_pools): a library error, never a raw one
        except PoolClosed as exc:
            raise StorageError(f"{self!r} was closed while in use: open the agent again") from exc
        try:
            yield raw
        finally:
            pool.putconn(raw)

    @contextmanager
    def transaction(self, wait: bool = True) -> Iterator[BoundConnection]:
        """A ``BEGIN ... COMMIT`` on one connection: all of the block is written, or none (nested: a
        savepoint). ``wait`` changes nothing: the server's writers of different rows do not wait for each
        other."""
        bound = getattr(self._local, "bound", None)
        if bound is not None:
            with self.converting(), bound.raw.transaction():
                yield bound
            return
        # Pipeline mode: statements whose results nobody reads go out without waiting for the server.
        with self.connection() as raw, self.converting(), raw.pipeline() as pipeline, raw.transaction(), \
                foreground.holding():  # a background thread in here does not give way to the writers
            self._local.bound = bound = BoundConnection(raw, pipeline, self)
            try:
                yield bound
                fault_points.reach("db.commit")
            finally:
                self._local.bound = None

    def checkpoint(self) -> None:
        """Nothing to do: the server checkpoints its own write-ahead log."""

    def iterate(self, sql: str, params: Sequence = ()) -> Iterator[Row]:
        """The rows of a long read, fetched a page at a time (a server-side cursor), so a reader that
        stops early (assembling a context) does not read them all; one snapshot throughout."""
        bound = getattr(self._local, "bound", None)
        if bound is not None:
            yield from bound.execute(sql, params)
            return
        with self.connection() as raw, self.converting(), raw.transaction():
            with raw.cursor(name="agentos_read") as cursor:
                cursor.itersize = ITER_PAGE
                cursor.execute(translate(sql), params or ())
                yield from cursor

    @contextmanager
    def converting(self) -> Iterator[None]:
        """psycopg's errors in the block (a statement, BEGIN, COMMIT or ROLLBACK) raised as the library's."""
        try:
            yield
        except psycopg.Error as exc:
            raise self.error(exc) from exc

    def error(self, exc: BaseException):
        """The library error for ``exc``; after a lost connection the pool drops its idle ones that died too
        (a server restarted or failed over), so the next operation gets a live one."""
        error = converted(exc, self.dsn, self.config)
        if isinstance(error, DatabaseUnavailableError) and self._pool is not None:
            self._pool.check()
        return error

    # -- what differs from SQLite ---------------------------------------------------

    def serialize(self, conn: BoundConnection, *key: object) -> None:
        """Inside a transaction: wait for every other transaction holding ``key`` (across hosts) to end."""
        conn.execute("SELECT pg_advisory_xact_lock(?)", (advisory_key(self.schema, *key),))

    @contextmanager
    def exclusive(self, timeout: float, *key: object) -> Iterator[None]:
        """Hold the lock ``key`` for the block, across processes and hosts (released if this process dies).

        Raises:
            LockTimeoutError: another holder kept it for ``timeout`` seconds.
        """
        lock = advisory_key(self.schema, *key)
        with self.connection() as raw:
            deadline = time.monotonic() + timeout
            wait = _FIRST_WAIT_S
            try:
                while not raw.execute("SELECT pg_try_advisory_lock(%s)", (lock,)).fetchone()[0]:
                    if time.monotonic() >= deadline:
                        raise LockTimeoutError(
                            f"{'/'.join(map(str, key))} of schema {self.schema} stayed locked for "
                            f"{timeout:g}s: another process is working on it; wait for it or stop it")
                    time.sleep(wait)
                    wait = min(wait * 2, _LONGEST_WAIT_S)
            except psycopg.Error as exc:
                raise self.error(exc) from exc
            try:
                yield
            finally:
                try:
                    raw.execute("SELECT pg_advisory_unlock(%s)", (lock,))
                except psycopg.Error as exc:  # the connection is gone, and the lock with it
                    log.warning("could not unlock %s: %s", key, exc)

    def conversation_lock(self, conv: int, timeout: float):
        """The lock that lets one compaction at a time work on conversation ``conv``."""
        return self.exclusive(timeout, "compaction", conv)

    def close(self) -> None:
        """Give back this object's claim on its pool (shared by the process: the last user's leaves it idle,
        and idle pools beyond a few are closed). Safe to call twice."""
        with self._guard:
            pool, self._pool = self._pool, None
        if pool is not None:
            release_pool(pool, self.dsn, self.schema, self.config, row_factory=row_factory)
        self._local = threading.local()
