"""The spaces a process keeps open between recalls: opening one costs a config read, a journal check and an
``index.db`` open with its ``PRAGMA quick_check``, which a recall need not pay each time.

An open space is used again while it is still the same space on disk: its members file exists, its
``index.db`` is the same file (same device and inode: a damaged index moved aside by any process, a
space replaced by ``agentos import --space --force`` or an index moved between databases give a new
one) and the home's ``config.yaml`` is unchanged. A journal that grew is no reason to reopen: every
search first indexes what the journal gained, as a fresh open would. One process's threads take turns
on an open space (its index has one SQLite connection).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from core.memory.spaces.paths import SpacePaths
from core.memory.spaces.space import Space

_open: dict[tuple[int, str, str], tuple[tuple, Space, threading.RLock]] = {}
_open_guard = threading.Lock()


def _identity(paths: SpacePaths) -> tuple:
    """What tells this space's files apart from a replaced copy of them."""
    marks = []
    for path in (paths.members_file, paths.index_file, paths.home / "config.yaml",
                 paths.root / "storage.backend"):
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            marks.append(None)
            continue
        marks.append((stat.st_dev, stat.st_ino) if path != paths.home / "config.yaml"
                     else (stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(marks)


@contextmanager
def opened(name: str, home: Path) -> Iterator[Space]:
    """The space ``name`` of ``home``, open for the block: this process's open one if it is still current,
    else opened now (UnknownSpaceError if there is none) and kept for the next recall."""
    paths = SpacePaths.for_space(name, home)
    key = (os.getpid(), str(paths.home), paths.name)  # a forked child opens its own: SQLite's rule
    with _open_guard:
        known = _open.get(key)
        if known is None or known[0] != _identity(paths):
            known = _open[key] = _reopen(paths, known)
    _, space, turn = known
    with turn:
        yield space


def _reopen(paths: SpacePaths, stale: tuple[tuple, Space, threading.RLock] | None) -> tuple[tuple, Space,
                                                                                           threading.RLock]:
    if stale is not None:
        with stale[2]:  # a thread still searching the old one finishes first
            stale[1].close()
    space = Space(paths.name, paths.home)
    space.index()  # opened now, so that the identity taken next is that of the index this space holds
    return _identity(paths), space, threading.RLock()


def close_all() -> None:
    """Close every space this process keeps open (tests that remove homes; a process that ends)."""
    with _open_guard:
        spaces = list(_open.values())
        _open.clear()
    for _, space, turn in spaces:
        with turn:
            space.close()
