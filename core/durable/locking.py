"""The per-agent lock that serialises every write to an agent's memory files.

A process-wide re-entrant thread lock is paired with an exclusive ``flock`` on
``memory/.lock``, so threads of one process and separate processes both queue
behind the same lock, and a holder may re-enter it (``update_now`` logs while
holding it). It is the lock ``filelock`` takes on POSIX systems, so a tool that
holds ``filelock.FileLock("memory/.lock")`` is serialised with the agent too; the
difference is that a lock taken often keeps its file open between holds, which
makes taking it one system call instead of an open, a lock and a close. The OS
drops the lock when its holder dies, even by SIGKILL.

A waiter gives up only when one holder has kept the lock for the whole timeout, not
when it has waited that long behind a queue of holders that each took their turn: on
a busy machine, and with many writers, the queue's length says nothing about a holder
that hangs. Every release marks the lock file (8 bytes: the releasing process and its
count of releases), so a waiter in another process sees the lock change hands.

Nothing outlives its users: the open lock file of a path is shared by the ``AgentLock`` objects on it
in a process and closed when the last of them is closed (:meth:`AgentLock.close`, which the agent's
``close()`` calls) or garbage-collected, so a process that opens and closes agents for weeks keeps no
descriptor of an agent it closed.
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import time
import weakref
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Iterator

from core.errors import LockTimeoutError
from core.durable import foreground
from core.durable.fsutil import storage_error

_registry_guard = threading.RLock()
"""Re-entrant: a lock collected by the garbage collector releases its file under it, at any allocation."""
_shared: dict[Path, "_Shared"] = {}
_fork_hook_registered = False

_FIRST_WAIT_S = 0.0005
_LONGEST_WAIT_S = 0.02
_MARK = struct.Struct("<II")
"""The release mark at the start of the lock file: the releasing pid and its process's count of releases."""


class _Shared:
    """The locks of one lock file in one process, shared by every AgentLock on it there."""

    def __init__(self, lock_file: Path, keep_open: bool) -> None:
        self.lock_file = lock_file
        self.keep_open = keep_open
        self.pid = os.getpid()
        """A forked child makes its own: an inherited descriptor would share the parent's flock."""
        self.thread_lock = threading.RLock()
        self.depth = 0
        """How deep the thread that holds ``thread_lock`` has entered; only that thread changes it."""
        self.releases = 0
        """How many times this process has released the lock (written in the release mark)."""
        self.handovers = 0
        """How many times the lock was seen to change hands, here or in another process: what the
        threads waiting for ``thread_lock`` watch (its holder may itself be queueing for the flock)."""
        self.users = 0
        """The AgentLock objects of this process on it (and holds of closed ones): the last to go closes the
        file."""
        self.retired = False
        """No user is left: the file is closed when the hold in progress ends."""
        self._fd = -1

    def take_thread_lock(self, timeout: float) -> bool:
        """Take ``thread_lock``, waiting while other threads take their turns; False once one thread
        has held it ``timeout`` s."""
        seen, deadline = self.handovers, time.monotonic() + timeout
        while not self.thread_lock.acquire(timeout=max(0.0, min(deadline - time.monotonic(), 0.1))):
            if self.handovers != seen:
                seen, deadline = self.handovers, time.monotonic() + timeout
            elif time.monotonic() >= deadline:
                return False
        return True

    def take_file_lock(self, timeout: float) -> bool:
        """Take the flock, waiting while other processes take their turns; False once one has held
        it ``timeout`` s (or, for a holder that does not mark its releases, e.g. ``filelock``, once
        the lock has been busy ``timeout`` s)."""
        wait, seen, deadline = _FIRST_WAIT_S, None, time.monotonic() + timeout
        while True:
            if self._fd < 0:
                self._open()
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                in_place = os.fstat(self._fd).st_nlink > 0
            except BlockingIOError:
                mark = self._release_mark()
                if seen is not None and mark != seen:
                    deadline = time.monotonic() + timeout
                    self.handovers += 1
                seen, left = mark, deadline - time.monotonic()
                if left <= 0:
                    if not self.keep_open:
                        self.close()
                    return False
                time.sleep(min(wait, left))
                wait = min(wait * 2, _LONGEST_WAIT_S)
                continue
            except OSError as exc:
                self.close()  # which drops the flock if it was taken
                raise storage_error(exc, f"cannot lock {self.lock_file}") from exc
            if in_place:
                return True
            self.close()  # the lock file was deleted or replaced: lock the one at its path now

    def unlock_file(self) -> None:
        if self.pid == os.getpid():  # in a forked child the descriptor is the parent's: leave its lock
            with suppress(OSError):  # a hint for waiters; without it (a full disk) they wait for the timeout
                os.pwrite(self._fd, _MARK.pack(self.pid & 0xFFFFFFFF, self.releases & 0xFFFFFFFF), 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            if not self.keep_open or self.retired:
                self.close()

    def _release_mark(self) -> bytes:
        try:
            return os.pread(self._fd, _MARK.size, 0)
        except OSError:
            return b""

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _open(self) -> None:
        try:
            self.lock_file.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise storage_error(exc, f"cannot open the lock file {self.lock_file}") from exc


def _shared_for(lock_file: Path, keep_open: bool) -> _Shared:
    """This process's locks of ``lock_file``, with one more user (give it back with :func:`_release`)."""
    global _fork_hook_registered
    with _registry_guard:
        if not _fork_hook_registered:
            os.register_at_fork(after_in_child=_forget_inherited_locks)
            _fork_hook_registered = True
        shared = _shared.get(lock_file)
        if shared is None:  # a forked child starts with an empty registry (_forget_inherited_locks)
            shared = _shared[lock_file] = _Shared(lock_file, keep_open)
        shared.keep_open = shared.keep_open and keep_open  # one caller asking to close is enough
        shared.users += 1
        return shared


def _release(shared: _Shared) -> None:
    """One user of ``shared`` is gone; the last one closes the lock file (at once, or when the hold in
    progress in this thread ends)."""
    with _registry_guard:
        if shared.pid != os.getpid():
            return  # a parent's, forgotten at the fork
        shared.users -= 1
        if shared.users > 0:
            return
        if _shared.get(shared.lock_file) is shared:
            del _shared[shared.lock_file]
    with shared.thread_lock:  # re-entrant: this thread may be the holder, whose release then closes it
        if shared.depth == 0:
            shared.close()
        else:
            shared.retired = True


class _Use:
    """An AgentLock's claim on its lock file's shared locks, given back once (by close or by collection)."""

    def __init__(self, shared: _Shared) -> None:
        self.shared: _Shared | None = shared

    def give_back(self) -> None:
        shared, self.shared = self.shared, None
        if shared is not None:
            _release(shared)


def _forget_inherited_locks() -> None:
    """In a forked child: close the inherited lock files and start a fresh registry.

    An inherited open lock file shares the parent's flock, so while the child lived a
    parent killed in the middle of a write would leave the agent locked.
    """
    global _registry_guard
    _registry_guard = threading.RLock()  # another thread of the parent may have held it
    for shared in _shared.values():
        shared.close()
    _shared.clear()


class AgentLock:
    """A re-entrant lock shared by all threads and processes that write one agent's memory."""

    def __init__(self, lock_file: Path, timeout: float = 30.0, *, keep_open: bool = True,
                 writers_take_it: bool = True) -> None:
        """``keep_open=False`` closes the lock file after each hold: for locks taken rarely but
        on many files (one per conversation), which would otherwise each keep a descriptor.
        With ``keep_open``, the file stays open until :meth:`close` (or until this object is collected).
        ``writers_take_it=False``: no foreground write takes this lock (a compaction's own), so a background
        thread holding it still gives way to the writers (see :func:`core.durable.foreground.give_way`)."""
        self.lock_file = lock_file
        self.timeout = timeout
        self.keep_open = keep_open
        self.writers_take_it = writers_take_it
        self._use = _Use(_shared_for(lock_file, keep_open))
        self._closer = self._finalizer(self._use)

    def _finalizer(self, use: _Use) -> weakref.finalize:
        closer = weakref.finalize(self, use.give_back)
        closer.atexit = False  # at exit the OS closes the file; a daemon thread may still hold the lock
        return closer

    def close(self) -> None:
        """Let go of the lock file: the last AgentLock of a path in the process closes it. Safe to call twice;
        a later :meth:`hold` still works (it opens the file for that hold only)."""
        self._closer()

    @contextmanager
    def hold(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the lock for the duration of the ``with`` block (waiting ``timeout`` s, default the
        lock's)."""
        timeout = self.timeout if timeout is None else timeout
        shared = self._use.shared
        if shared is not None and shared.pid != os.getpid():
            # This process was forked from the one that made it: the parent's registry, and its claim,
            # are gone.
            self._closer.detach()
            self._use = _Use(_shared_for(self.lock_file, self.keep_open))
            self._closer = self._finalizer(self._use)
            shared = self._use.shared
        if shared is not None:
            with self._held(shared, timeout):
                yield
            return
        once = _Use(_shared_for(self.lock_file, self.keep_open))  # closed: a claim for this hold alone
        try:
            with self._held(once.shared, timeout):
                yield
        finally:
            once.give_back()

    @contextmanager
    def _held(self, shared: _Shared | None, timeout: float) -> Iterator[None]:
        assert shared is not None
        if not shared.take_thread_lock(timeout):
            raise LockTimeoutError(self._busy_message("another thread of this process", timeout))
        try:
            # Re-entry takes no second flock.
            if shared.depth == 0 and not shared.take_file_lock(timeout):
                raise LockTimeoutError(self._busy_message("another process", timeout))
            shared.depth += 1
            try:
                with foreground.holding() if self.writers_take_it else nullcontext():
                    yield
            finally:
                shared.depth -= 1
                if shared.depth == 0:
                    shared.releases += 1
                    shared.handovers += 1
                    shared.unlock_file()
        finally:
            shared.thread_lock.release()

    def _busy_message(self, holder: str, timeout: float) -> str:
        return (
            f"could not lock {self.lock_file}: {holder} has held it for {timeout:g}s while "
            "writing this agent's memory; wait for it or stop it"
        )
