"""Which engine may serve an agent's session, and whether a run that never ended is still running.

With SQLite one engine serves an agent (a file lock on ``memory/.engine.lock``):
any run it finds unfinished belongs to a dead process. With PostgreSQL several
engines, on any hosts, may serve different sessions of one agent: each holds
an advisory lock on its session for its life and one on each run while it
runs, on a connection of its own, so the server releases them the moment the
process dies. A run with no RUN_END whose lock is free is interrupted; one
whose lock is held is another engine's live run.
"""

from __future__ import annotations

from contextlib import nullcontext

from core.config import StorageConfig
from core.errors import LockTimeoutError
from core.paths import AgentPaths


class AgentLease:
    """One engine per agent (SQLite): every unfinished run it finds is a dead process's."""

    def __init__(self, paths: AgentPaths) -> None:
        """Raises LockTimeoutError when another engine runs the agent."""
        # here: only an engine pays filelock's import, not every reader
        from filelock import FileLock, Timeout

        self._lock = FileLock(str(paths.memory_dir / ".engine.lock"), thread_local=False)
        try:
            self._lock.acquire(timeout=0)
        except Timeout as exc:
            raise LockTimeoutError(
                f"agent {paths.name} is already running in another engine: wait for it to finish or stop it"
            ) from exc

    def running(self, run_id: str):
        """Mark ``run_id`` live for the block (the agent's lock already does)."""
        return nullcontext()

    def is_live(self, run_id: str) -> bool:
        """Whether another engine is running ``run_id``: never, with one engine per agent."""
        return False

    def release(self) -> None:
        self._lock.release()


def hold_lease(paths: AgentPaths, storage: StorageConfig, session_id: str):
    """The lease of an engine that serves ``session_id`` of the agent at ``paths``.

    Raises:
        LockTimeoutError: another engine holds the agent (SQLite) or the session (PostgreSQL).
    """
    backend, dsn = storage.resolved()
    if backend == "sqlite":
        return AgentLease(paths)
    from core.memory.storage.postgres.lease import SessionLease
    from core.memory.storage.backend import schema_name

    return SessionLease(dsn, schema_name(paths.name, storage), session_id, storage)
