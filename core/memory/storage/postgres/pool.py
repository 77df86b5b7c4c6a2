"""Connection pools to the PostgreSQL server, one per (server, schema) in a process, and its errors.

Every connection of a pool has its ``search_path`` set to one agent's schema,
a statement timeout, and autocommit on (a transaction is always explicit).
psycopg's errors become the library's at this boundary, with a message that
names the fix and never the password.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from typing import Any, Callable

import psycopg
from psycopg import conninfo, errors, sql
from psycopg_pool import ConnectionPool, PoolTimeout

from core.config import StorageConfig
from core.errors import (
    AgentOSError,
    DatabaseUnavailableError,
    LockTimeoutError,
    StorageError,
    ValidationError,
)

log = logging.getLogger(__name__)

_pools: dict[tuple, ConnectionPool] = {}
_claims: dict[tuple, int] = {}
"""How many users each pool has now (an open PostgresDatabase, a read in progress)."""
_idle: OrderedDict[tuple, None] = OrderedDict()
"""The pools no one uses, least recently used first: the oldest are closed beyond ``IDLE_POOLS``."""
_pools_guard = threading.Lock()

IDLE_POOLS = 4
"""Pools kept open with no user (a process reading agent after agent, as the inspector does, reuses them);
each holds a connection and psycopg_pool's threads, so a process that served many agents closes the rest."""


def describe(dsn: str) -> str:
    """``host:port/dbname`` of a DSN, for messages: never its password."""
    try:
        parts = conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "(an invalid DSN)"
    host = parts.get("host") or os.environ.get("PGHOST") or "localhost"
    port = parts.get("port") or os.environ.get("PGPORT") or "5432"
    return f"{host}:{port}/{parts.get('dbname') or os.environ.get('PGDATABASE') or parts.get('user') or ''}"


def advisory_key(*parts: object) -> int:
    """A signed 64-bit advisory-lock key for ``parts`` (hashed, so any text fits)."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def converted(exc: BaseException, dsn: str, config: StorageConfig) -> AgentOSError:
    """The library's error for a psycopg or pool error, naming the fix (a StorageError but for bad values)."""
    where = f"PostgreSQL at {describe(dsn)}"
    if isinstance(exc, PoolTimeout):  # an OperationalError too: the pool is full, the server may be fine
        return StorageError(f"{where}: no connection was free within storage.pool_timeout_s "
                            f"({config.pool_timeout_s:g}s), all {config.pool_max} busy; raise "
                            "storage.pool_max")
    if isinstance(exc, (psycopg.DataError, errors.ProgramLimitExceeded)):
        return ValidationError(f"{where} refused a value: {_first_line(exc)}; nothing was written")
    if isinstance(exc, errors.LockNotAvailable):
        return LockTimeoutError(f"{where}: a lock wait was cut short ({_first_line(exc)}): another session "
                                "held the lock; retry, or find that session in pg_locks and pg_stat_activity")
    if isinstance(exc, errors.QueryCanceled):
        return StorageError(f"{where}: a statement ran longer than storage.statement_timeout_s "
                            f"({config.statement_timeout_s:g}s) and was cancelled; raise it or check the "
                            "server's load")
    if isinstance(exc, errors.InsufficientPrivilege):
        return StorageError(f"{where}: {_first_line(exc)}; grant the user of storage.dsn the rights to "
                            "create schemas and tables in this database")
    if isinstance(exc, psycopg.OperationalError) and _connection_lost(exc):
        return DatabaseUnavailableError(f"cannot reach {where}: {_first_line(exc)}; start the server or fix "
                                        "storage.dsn (or $AGENTOS_DSN)")
    return StorageError(f"{where}: {type(exc).__name__}: {_first_line(exc)}")


def _connection_lost(exc: psycopg.Error) -> bool:
    """A failure to connect, or a connection lost or shut down (not an error of one statement)."""
    state = exc.sqlstate or ""
    return not state or state.startswith(("08", "57P"))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.splitlines()[0].split())


def probe(dsn: str, config: StorageConfig) -> None:
    """Open and close one connection: raise DatabaseUnavailableError when the server does not answer."""
    try:
        psycopg.connect(dsn, connect_timeout=_whole_seconds(config.connect_timeout_s)).close()
    except psycopg.Error as exc:
        raise converted(exc, dsn, config) from exc


def _whole_seconds(seconds: float) -> int:
    return max(1, round(seconds))  # libpq's connect_timeout is whole seconds, at least 2 in effect


def session_settings(config: StorageConfig) -> dict[str, str]:
    """The settings every connection gets: timeouts in milliseconds."""
    timeout = str(max(1, round(config.statement_timeout_s * 1000)))
    return {"statement_timeout": timeout, "idle_in_transaction_session_timeout": timeout}


def configure(schema: str, config: StorageConfig) -> Callable[[psycopg.Connection], None]:
    """The pool's ``configure`` callback: search_path to ``schema`` and the timeouts, committed."""
    settings = {"search_path": sql.Identifier(schema).as_string(None), **session_settings(config)}

    def run(conn: psycopg.Connection) -> None:
        for name, value in settings.items():
            conn.execute("SELECT set_config(%s, %s, false)", (name, value))
        if not conn.autocommit:
            conn.commit()

    return run


def application_name(schema: str) -> str:
    """How the server lists this pool's connections (``pg_stat_activity.application_name``)."""
    return f"agentos {schema}"[:63]


def pool_key(dsn: str, schema: str, config: StorageConfig, **kwargs: Any) -> tuple:
    """What tells this process's pools apart: the server, the schema, the size and the connection
    arguments."""
    return os.getpid(), dsn, schema, config.pool_max, tuple(sorted((k, repr(v)) for k, v in kwargs.items()))


def claim_pool(dsn: str, schema: str, config: StorageConfig, **kwargs: Any) -> ConnectionPool:
    """This process's pool of connections to ``dsn`` whose search_path is ``schema``, with one more user:
    give it back with :func:`release_pool` (the same arguments), after which it may be closed.

    ``kwargs`` are connection arguments (e.g. a row factory); pools differ by them too.

    Raises:
        DatabaseUnavailableError: the server cannot be reached.
    """
    key = pool_key(dsn, schema, config, **kwargs)
    with _pools_guard:
        pool = _pools.get(key)
        if pool is None or pool.closed:
            pool = _open_pool(key, dsn, schema, config, **kwargs)
        _claims[key] = _claims.get(key, 0) + 1
        _idle.pop(key, None)
        return pool


def release_pool(pool: ConnectionPool, dsn: str, schema: str, config: StorageConfig, **kwargs: Any) -> None:
    """One user of ``pool`` (from :func:`claim_pool` with the same arguments) is done; pools beyond
    ``IDLE_POOLS`` that no one uses are closed."""
    key = pool_key(dsn, schema, config, **kwargs)
    with _pools_guard:
        if _pools.get(key) is not pool or key not in _claims:
            return  # closed meanwhile by close_pools() (and its claims with it)
        _claims[key] -= 1
        if _claims[key] > 0:
            return
        del _claims[key]
        _idle[key] = None
        surplus = [_idle.popitem(last=False)[0] for _ in range(max(0, len(_idle) - IDLE_POOLS))]
        closing = [_pools.pop(old) for old in surplus if old in _pools]
    for pool in closing:
        pool.close(timeout=5)


def _open_pool(key: tuple, dsn: str, schema: str, config: StorageConfig, **kwargs: Any) -> ConnectionPool:
    """A new pool for ``key`` (the caller holds ``_pools_guard``)."""
    probe(dsn, config)  # a server that is down fails here at once, not after the pool's timeout
    pool = ConnectionPool(
        dsn, min_size=1, max_size=max(1, config.pool_max), open=False, timeout=config.pool_timeout_s,
        kwargs={"autocommit": True, "connect_timeout": _whole_seconds(config.connect_timeout_s),
                "application_name": application_name(schema), **kwargs},
        configure=configure(schema, config), name=f"agentos-{schema}",
        reconnect_timeout=max(config.pool_timeout_s, 60.0),
    )
    try:
        pool.open(wait=True, timeout=config.connect_timeout_s + 1)
    except PoolTimeout as exc:
        pool.close(timeout=0)
        probe(dsn, config)  # says why, when the server is down
        raise converted(exc, dsn, config) from exc
    _pools[key] = pool
    log.info("connection pool to %s (schema %s, at most %d)", describe(dsn), schema, config.pool_max)
    return pool


def close_pools(schema: str | None = None) -> None:
    """Close this process's pools (of one schema, or all), used or not: before dropping a schema, or
    exiting."""
    with _pools_guard:
        keys = [key for key in _pools if key[0] == os.getpid() and schema in (None, key[2])]
        pools = [_pools.pop(key) for key in keys]
        for key in keys:
            _claims.pop(key, None)
            _idle.pop(key, None)
    for pool in pools:
        pool.close(timeout=5)


def open_pools() -> int:
    """How many pools this process has open (with users or kept idle)."""
    with _pools_guard:
        return sum(1 for key, pool in _pools.items() if key[0] == os.getpid() and not pool.closed)
