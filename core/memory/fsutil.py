"""Crash-safe file primitives: a crash leaves the old file or the new one, never a torn one."""

from __future__ import annotations

import os
from pathlib import Path


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
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def remove_stale_temp_files(path: Path) -> list[Path]:
    """Delete the temp files ``atomic_write`` left beside ``path`` when its writer was killed.

    Call it only under the lock that every writer of ``path`` holds, so no temp file is live.
    """
    stale = list(path.parent.glob(f".{path.name}.*.tmp"))
    for tmp in stale:
        tmp.unlink(missing_ok=True)
    return stale


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (one call unless the kernel writes short)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
