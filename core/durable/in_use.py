"""Who has an agent's memory (or a space) open: a shared ``flock`` held by every opener, until it closes.

Each ``MemoryManager`` (and each ``Space``) holds a shared lock on ``memory/.in-use`` for as long as it
is open. Replacing the folder (``agentos import --force``, :func:`replacing`) takes the exclusive lock without
waiting:
while any process has the agent open it is refused, because that process would go on writing into the
folder that was replaced, its writes acknowledged and then lost. Holding the exclusive lock keeps new
openers waiting until the folder in place is the new one; an opener that got its shared lock on a
file that was replaced meanwhile (its folder renamed away) takes the lock of the file now at its path.
The OS drops the locks of a process that dies, even by SIGKILL.
"""

from __future__ import annotations

import fcntl
import os
import time
import weakref
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Iterator

from core.errors import AgentInUseError, LockTimeoutError, StorageError

IN_USE = ".in-use"
"""The lock file's name in an agent's ``memory/`` folder (and in a space's folder)."""
_FIRST_WAIT_S = 0.001
_LONGEST_WAIT_S = 0.05


class InUse:
    """A shared lock on an ``.in-use`` file, held until :meth:`release`."""

    def __init__(self, lock_file: Path, timeout: float, what: str) -> None:
        """Take the shared lock, waiting up to ``timeout`` s while the folder is being replaced.

        Raises:
            LockTimeoutError: an import held the folder for the whole timeout.
            StorageError: the lock file cannot be opened.
        """
        self.lock_file = lock_file
        self._fd = -1
        self._close = None
        deadline, wait = time.monotonic() + timeout, _FIRST_WAIT_S
        while True:
            fd = _open(lock_file)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    raise LockTimeoutError(f"{what} is being replaced (agentos import --force) and stayed "
                                           f"locked for {timeout:g}s: wait for the import to finish, then "
                                           "retry") from None
                time.sleep(wait)
                wait = min(wait * 2, _LONGEST_WAIT_S)
                continue
            if _same_file(fd, lock_file):
                self._fd = fd
                # An opener that fails after this (or is dropped unclosed) lets go when it is collected.
                self._close = weakref.finalize(self, os.close, fd)
                return
            os.close(fd)  # the folder was replaced while we waited: lock the file of the new one

    def release(self) -> None:
        """Drop the lock (safe to call twice)."""
        if self._close is not None:
            self._close()  # closes the descriptor once
            self._fd = -1


@contextmanager
def replacing(lock_file: Path, what: str, *, create: bool = True) -> Iterator[None]:
    """Hold ``lock_file`` exclusively for the block, or refuse at once when anyone has it open.

    ``create=False`` only checks: a lock file that does not exist is held by no one, and is not made.

    Raises:
        AgentInUseError: a process (this one included) holds the shared lock; nothing was changed.
    """
    if not create and not lock_file.exists():
        yield
        return
    fd = _open(lock_file)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holders = _holders(fd)
            if os.getpid() in holders:
                raise AgentInUseError(f"{what} is open in this process: close it (MemoryManager.close()) "
                                      "before replacing it; nothing was changed") from None
            who = f" (process {', '.join(map(str, holders))})" if holders else ""
            raise AgentInUseError(f"{what} is open in another process{who}: stop it (agentos run, agentos "
                                  "mcp or a program using it), then retry; nothing was changed") from None
        yield
    finally:
        os.close(fd)


def _open(lock_file: Path) -> int:
    try:
        return os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StorageError(f"cannot open the lock file {lock_file}: {exc}") from exc


def _same_file(fd: int, path: Path) -> bool:
    try:
        held, now = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def _holders(fd: int) -> list[int]:
    """The processes that hold a lock on ``fd``'s file, from ``/proc/locks`` (Linux; empty elsewhere)."""
    info = os.fstat(fd)
    inode = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    pids: set[int] = set()
    with suppress(OSError, ValueError):
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[5] == inode and fields[4].isdigit():
                pids.add(int(fields[4]))
    return sorted(pids - {0})
