"""The per-agent lock that serialises every write to an agent's memory files.

A process-wide re-entrant thread lock is paired with a ``filelock`` on
``memory/.lock``, so threads of one process and separate processes both queue
behind the same lock, and a holder may re-enter it (``update_now`` logs while
holding it).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from filelock import FileLock, Timeout

from core.errors import LockTimeoutError

_registry_guard = threading.Lock()
_thread_locks: dict[Path, threading.RLock] = {}
_file_locks: dict[Path, FileLock] = {}


class AgentLock:
    """A re-entrant lock shared by all threads and processes that write one agent's memory."""

    def __init__(self, lock_file: Path, timeout: float = 30.0) -> None:
        self.lock_file = lock_file
        self.timeout = timeout
        with _registry_guard:
            self._thread_lock = _thread_locks.setdefault(lock_file, threading.RLock())
            self._file_lock = _file_locks.setdefault(
                lock_file, FileLock(str(lock_file), thread_local=False)
            )

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the duration of the ``with`` block."""
        if not self._thread_lock.acquire(timeout=self.timeout):
            raise LockTimeoutError(self._busy_message())
        try:
            try:
                self._file_lock.acquire(timeout=self.timeout)
            except Timeout as exc:
                raise LockTimeoutError(self._busy_message()) from exc
            try:
                yield
            finally:
                self._file_lock.release()
        finally:
            self._thread_lock.release()

    def _busy_message(self) -> str:
        return (
            f"could not lock {self.lock_file} within {self.timeout:g}s: another process is "
            "writing this agent's memory; wait for it or stop it"
        )
