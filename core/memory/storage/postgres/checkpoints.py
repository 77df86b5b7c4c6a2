"""LangGraph checkpoints in the agent's PostgreSQL schema (``langgraph-checkpoint-postgres``).

The saver's tables (``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``)
are created with the rest of the schema by :func:`core.memory.storage.postgres.migrate.ensure`,
never by the saver's own ``setup()``, whose concurrent index builds under the
setup lock could wait for ever on an engine waiting for that lock.
A run killed on one host resumes from them on another.
"""

from __future__ import annotations

from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from core.config import StorageConfig
from core.memory.storage.postgres import migrate
from core.memory.storage.postgres.pool import application_name, configure, converted, probe


def open_saver(dsn: str, schema: str, config: StorageConfig) -> tuple[ConnectionPool, PostgresSaver]:
    """A saver over a pool of its own (closing it ends the saver), its tables set up.

    Raises:
        DatabaseUnavailableError: the server cannot be reached.
        LockTimeoutError: another process kept the schema's setup lock too long.
    """
    migrate.ensure(dsn, schema, config)  # done already when the agent's memory opened in this process
    pool = ConnectionPool(
        dsn, min_size=1, max_size=2, open=False, timeout=config.pool_timeout_s,
        name=f"agentos-checkpoints-{schema}",
        # what PostgresSaver requires of its connections
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
                "connect_timeout": max(1, round(config.connect_timeout_s)),
                "application_name": application_name(schema)},
        configure=configure(schema, config),
    )
    try:
        pool.open(wait=True, timeout=config.connect_timeout_s + 1)
    except PoolTimeout as exc:
        pool.close(timeout=0)
        probe(dsn, config)
        raise converted(exc, dsn, config) from exc
    return pool, PostgresSaver(pool)
