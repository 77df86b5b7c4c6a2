"""LangGraph checkpoints in the agent's PostgreSQL schema (``langgraph-checkpoint-postgres``).

The saver's tables (``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``)
are created by its own ``setup()``, once per schema, under the schema's
migration lock so engines starting together on several hosts do not race.
A run killed on one host resumes from them on another.
"""

from __future__ import annotations

import os
import threading

import psycopg
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from core.config import StorageConfig
from core.memory.postgres.migrate import schema_lock
from core.memory.postgres.pool import configure, converted, probe

_set_up: set[tuple[int, str, str]] = set()
_set_up_guard = threading.Lock()


def open_saver(dsn: str, schema: str, config: StorageConfig) -> tuple[ConnectionPool, PostgresSaver]:
    """A saver over a pool of its own (closing it ends the saver), its tables set up.

    Raises:
        DatabaseUnavailableError: the server cannot be reached.
    """
    pool = ConnectionPool(
        dsn, min_size=1, max_size=2, open=False, timeout=config.pool_timeout_s, name=f"agentos-checkpoints-{schema}",
        # what PostgresSaver requires of its connections
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
                "connect_timeout": max(1, round(config.connect_timeout_s))},
        configure=configure(schema, config),
    )
    try:
        pool.open(wait=True, timeout=config.connect_timeout_s + 1)
    except PoolTimeout as exc:
        pool.close(timeout=0)
        probe(dsn, config)
        raise converted(exc, dsn, config) from exc
    saver = PostgresSaver(pool)
    try:
        _setup(saver, dsn, schema, config)
    except psycopg.Error as exc:
        pool.close(timeout=0)
        raise converted(exc, dsn, config) from exc
    return pool, saver


def _setup(saver: PostgresSaver, dsn: str, schema: str, config: StorageConfig) -> None:
    key = (os.getpid(), dsn, schema)
    with _set_up_guard:
        if key in _set_up:
            return
        with schema_lock(dsn, schema, config):
            saver.setup()
        _set_up.add(key)
