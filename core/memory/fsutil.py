"""Crash-safe file primitives: a crash leaves the old file or the new one, never a torn one."""

from __future__ import annotations

import os
from pathlib import Path


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
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (one call unless the kernel writes short)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
