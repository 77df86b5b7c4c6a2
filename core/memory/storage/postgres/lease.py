"""SessionLease: an engine's hold on one session of an agent, and on each run while it runs (advisory locks).

The locks live on a connection of the lease's own, so the server drops them
the moment the engine's process dies, on whatever host it ran.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

import psycopg

from core.config import StorageConfig
from core.errors import LockTimeoutError
from core.memory.storage.postgres.pool import advisory_key
from core.memory.storage.postgres.pool import application_name, converted, session_settings

log = logging.getLogger(__name__)


class SessionLease:
    """One engine per session of an agent (PostgreSQL), across processes and hosts."""

    def __init__(self, dsn: str, schema: str, session_id: str, config: StorageConfig) -> None:
        """Raises LockTimeoutError when another engine serves the session, DatabaseUnavailableError when
        the server does not answer."""
        self.dsn, self.schema, self.session_id, self.config = dsn, schema, session_id, config
        self._conn = self._connect()

    def _connect(self) -> psycopg.Connection:
        """A connection of the lease's own, holding the session's lock."""
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, application_name=application_name(self.schema),
                                   connect_timeout=max(1, round(self.config.connect_timeout_s)))
            for name, value in session_settings(self.config).items():
                conn.execute("SELECT set_config(%s, %s, false)", (name, value))
            key = advisory_key(self.schema, "session", self.session_id)
            taken = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
        except psycopg.Error as exc:
            raise converted(exc, self.dsn, self.config) from exc
        if not taken:
            conn.close()
            raise LockTimeoutError(f"session {self.session_id} is already served by another engine (schema "
                                   f"{self.schema}): wait for it to finish, stop it, or use another session")
        return conn

    def _try_lock(self, *parts: str) -> bool:
        key = advisory_key(self.schema, *parts)
        return self._conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]

    @contextmanager
    def running(self, run_id: str) -> Iterator[None]:
        """Hold ``run_id``'s lock for the block: other engines see the run as live.

        A lease whose connection was lost (its locks with it) takes the session again first.
        """
        try:
            try:
                self._try_lock("run", run_id)  # a fresh id: nobody else holds it
            except psycopg.OperationalError:
                self._conn.close()
                self._conn = self._connect()
                self._try_lock("run", run_id)
        except psycopg.Error as exc:
            raise converted(exc, self.dsn, self.config) from exc
        try:
            yield
        finally:
            try:
                self._conn.execute("SELECT pg_advisory_unlock(%s)",
                                   (advisory_key(self.schema, "run", run_id),))
            except psycopg.Error as exc:  # the connection is gone: so is the lock
                log.warning("could not release the lock of run %s: %s", run_id, exc)

    def is_live(self, run_id: str) -> bool:
        """Whether an engine (this one excepted) holds ``run_id``'s lock right now."""
        try:
            if not self._try_lock("run", run_id):
                return True
            self._conn.execute("SELECT pg_advisory_unlock(%s)", (advisory_key(self.schema, "run", run_id),))
            return False
        except psycopg.Error as exc:
            raise converted(exc, self.dsn, self.config) from exc

    def release(self) -> None:
        """Let the session go. Its locks are unlocked first: a closed connection's locks go only when its
        server process has exited, which may be after the next engine asked for them."""
        try:
            self._conn.execute("SELECT pg_advisory_unlock_all()")
        except psycopg.Error as exc:  # the connection is gone: so are its locks
            log.debug("the session's connection was already gone: %s", exc)
        finally:
            self._conn.close()
