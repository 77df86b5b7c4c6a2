"""Crash-safe file primitives: a crash leaves the old file or the new one, never a torn one."""

from __future__ import annotations

import errno
import functools
import inspect
import os
import re
from contextlib import suppress
from pathlib import Path
from typing import Any, Callable, TypeVar

from core.errors import DiskFullError, ReadOnlyError, StorageError
from core.durable import fault_points

_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
_READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}
_TOO_MANY_FILES = {errno.EMFILE, errno.ENFILE}
_RUST_OS_ERROR = re.compile(r"\(os error (\d+)\)")
"""How LanceDB (Rust) words an OS error in the message of the OSError it raises, which has no ``errno``."""
TOO_MANY_FILES_FIX = ("too many open files: raise the limit of open files (`ulimit -n 4096` in the shell "
                      "that starts it, LimitNOFILE= in a systemd unit), or close() the agents this process "
                      "no longer serves")

F = TypeVar("F", bound=Callable[..., Any])


def os_error_number(exc: BaseException) -> int | None:
    """The error number of ``exc``, also when only its message has it (LanceDB's ``(os error 24)``)."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.errno
    found = _RUST_OS_ERROR.search(str(exc))
    return int(found.group(1)) if found else None


def storage_error(exc: OSError, what: str) -> StorageError:
    """The StorageError for an OS error met while ``what`` (e.g. "cannot write x"), naming the fix."""
    number = os_error_number(exc)
    reason = exc.strerror or " ".join(str(exc).split())[:300]
    if number in _FULL:
        return DiskFullError(f"{what}: {reason}; free some disk space, then retry")
    if number in _READ_ONLY:
        return ReadOnlyError(f"{what}: {reason}; make the agent's memory folder and its files writable "
                             "(permissions, a read-only mount), then retry")
    if number in _TOO_MANY_FILES:
        return StorageError(f"{what}: {TOO_MANY_FILES_FIX}")
    if number == errno.ENOMEM:
        return StorageError(f"{what}: out of memory ({reason}); free memory or give the process more, then "
                            "retry")
    if number == errno.ENOENT:
        return StorageError(f"{what}: {reason}; a file was removed while in use (another program deleting or "
                            "replacing the agent's files?): retry, or restore the agent from an export")
    return StorageError(f"{what}: {reason}; check the disk and the permissions of the agents home, then "
                        "retry")


def converting_os_errors(what: str) -> Callable[[F], F]:
    """Decorate a function at the library's boundary: an OSError it lets out becomes the StorageError of
    :func:`storage_error` (``what`` and the function's name say where), never a raw one.

    A ConnectionError is left alone: it is a network failure, which the model backends report as theirs.
    """
    def decorate(function: F) -> F:
        @functools.wraps(function)
        def converting(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except ConnectionError:
                raise
            except OSError as exc:
                raise storage_error(exc, f"{what} ({function.__name__})") from exc
        return converting  # type: ignore[return-value]
    return decorate


def public_methods_converting_os_errors(what: str) -> Callable[[type], type]:
    """A class decorator: :func:`converting_os_errors` on the constructor and every public method."""
    def decorate(cls: type) -> type:
        for name, member in list(vars(cls).items()):
            if inspect.isfunction(member) and (name == "__init__" or not name.startswith("_")):
                setattr(cls, name, converting_os_errors(what)(member))
        return cls
    return decorate


datasync = getattr(os, "fdatasync", os.fsync)
"""Flush a file's bytes and size (``fdatasync``; plain ``fsync`` where the system lacks it, e.g. macOS)."""


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries (a rename or a new file) to disk."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: temp file, fsync, ``os.replace``, fsync of the folder."""
    StagedFile(path, data).install()


class StagedFile:
    """The next content of a file, written to a temp file beside it but not yet in its place.

    ``install()`` makes it durable and atomically takes the file's place; ``discard()``
    drops it. Until then readers see the old file, and a crash leaves only a temp file
    that :func:`remove_stale_temp_files` sweeps. Failures raise StorageError and leave
    the file as it was.
    """

    def __init__(self, path: Path, data: bytes, *, start_flush: bool = False, prefix: str = "") -> None:
        """Write the temp file; with ``start_flush`` its writeback starts at once, so that a
        flush the caller makes meanwhile (of another file) and ``install()`` wait on less.

        ``prefix`` starts the temp file's name (``.<prefix><name>.<pid>.tmp``): a writer that stages
        ``path`` under another lock than its other writers names its temp files apart, so that
        neither sweeps the other's (see :func:`remove_stale_temp_files`)."""
        self.path = path
        self.tmp = path.with_name(f".{prefix}{path.name}.{os.getpid()}.tmp")
        self.replaced = False
        """True once the temp file has taken the path's place (only the folder's flush may be missing)."""
        try:
            self._fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError as exc:
            raise self._error(exc) from exc
        try:
            write_all(self._fd, data)
            if start_flush:
                start_writeback(self._fd)
        except BaseException as exc:
            self.discard()
            if isinstance(exc, OSError):
                raise self._error(exc) from exc
            raise

    def append(self, data: bytes) -> None:
        """Add ``data`` at the end of the temp file."""
        try:
            write_all(self._fd, data)
        except OSError as exc:
            self.discard()
            raise self._error(exc) from exc

    def flush(self) -> None:
        """fsync the temp file now, so that ``install()`` flushes only what is appended after."""
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self.discard()
            raise self._error(exc) from exc

    def install(self) -> None:
        """fsync the temp file, ``os.replace`` it onto the path, fsync the folder."""
        try:
            try:
                os.fsync(self._fd)
            finally:
                self._close()
            fault_points.reach("file.replace")
            os.replace(self.tmp, self.path)
            self.replaced = True
            fault_points.reach("file.replaced")
        except BaseException as exc:
            self.discard()
            if isinstance(exc, OSError):
                raise self._error(exc) from exc
            raise
        try:
            fsync_dir(self.path.parent)
        except OSError as exc:
            raise self._error(exc) from exc

    def discard(self) -> None:
        """Delete the temp file; the file at the path stays as it was. Never raises: it cleans up
        after another failure, which is the one to report."""
        with suppress(OSError):
            self._close()
        with suppress(OSError):
            self.tmp.unlink(missing_ok=True)

    def _close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def _error(self, exc: OSError) -> StorageError:
        return storage_error(exc, f"cannot write {self.path}")


def start_writeback(fd: int) -> None:
    """Start writing ``fd``'s dirty pages to disk without waiting for them.

    Linux starts the writeback on ``POSIX_FADV_DONTNEED`` (pages still dirty or under
    writeback stay cached); where the call does not exist this does nothing, and the
    later fsync does all the work as usual.
    """
    if hasattr(os, "posix_fadvise"):
        with suppress(OSError):  # a hint: if it is refused, the fsync does the work
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def remove_stale_temp_files(path: Path, prefix: str = "") -> list[Path]:
    """Delete the temp files ``atomic_write`` (or a :class:`StagedFile` with ``prefix``) left beside
    ``path`` when its writer was killed.

    ``path``'s name may be a glob pattern (``archive/LOG-*.md``). Call it only under the lock
    that every writer of those temp files holds, so no temp file is live.
    """
    stale = list(path.parent.glob(f".{prefix}{path.name}.*.tmp"))
    for tmp in stale:
        tmp.unlink(missing_ok=True)
    return stale


_TEMP_NAME = re.compile(r"\.(.+)\.(\d+)\.tmp")


def remove_orphan_temp_files(folder: Path) -> list[Path]:
    """Delete the temp files that killed processes left under ``folder`` (for files no lock guards).

    A temp file's name carries its writer's pid (``.<name>.<pid>.tmp``): one whose writer is
    no longer running is an orphan. A live writer's file is left alone.
    """
    removed = []
    for tmp in folder.rglob(".*.tmp") if folder.is_dir() else ():
        match = _TEMP_NAME.fullmatch(tmp.name)
        if match and tmp.is_file() and not _running(int(match.group(2))):
            with suppress(FileNotFoundError):
                tmp.unlink()
                removed.append(tmp)
    return removed


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (one call unless the kernel writes short)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
