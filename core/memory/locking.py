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
_shared: dict[Path, "_Shared"] = {}


class _Shared:
    """The locks of one lock file, shared by every AgentLock of this process on it."""

    def __init__(self, lock_file: Path) -> None:
        self.thread_lock = threading.RLock()
        self.file_lock = FileLock(str(lock_file), thread_local=False)
        self.depth = 0
        """How deep the thread that holds ``thread_lock`` has entered; only that thread changes it."""


class AgentLock:
    """A re-entrant lock shared by all threads and processes that write one agent's memory."""

    def __init__(self, lock_file: Path, timeout: float = 30.0) -> None:
        self.lock_file = lock_file
        self.timeout = timeout
        with _registry_guard:
            if lock_file not in _shared:
                _shared[lock_file] = _Shared(lock_file)
            self._shared = _shared[lock_file]

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the duration of the ``with`` block."""
        shared = self._shared
        if not shared.thread_lock.acquire(timeout=self.timeout):
            raise LockTimeoutError(self._busy_message())
        try:
            if shared.depth == 0:  # re-entry needs no second trip through the file lock
                try:
                    shared.file_lock.acquire(timeout=self.timeout)
                except Timeout as exc:
                    raise LockTimeoutError(self._busy_message()) from exc
            shared.depth += 1
            try:
                yield
            finally:
                shared.depth -= 1
                if shared.depth == 0:
                    shared.file_lock.release()
        finally:
            shared.thread_lock.release()

    def _busy_message(self) -> str:
        return (
            f"could not lock {self.lock_file} within {self.timeout:g}s: another process is "
            "writing this agent's memory; wait for it or stop it"
        )
