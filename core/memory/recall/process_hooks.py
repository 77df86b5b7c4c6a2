"""The process-wide exit and fork hooks of an agent's background work (recall indexing, LOG.md compaction).

A process that exits while background threads run first stops them between steps (a model call is
abandoned, indexing not yet started is left to the next open) and waits for them, so the interpreter
never finalizes under a thread that is inside native code. A forked child starts with no background
work: the parent's threads and cold store handles are not the child's. The hooks are registered with
the first worker a process tracks, never at import.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from typing import Protocol

from core.memory.recall import vector_indexer
from core.memory.recall.vector_indexer import EXIT_WAIT_S


class Background(Protocol):
    """Background work the hooks stop at exit and forget in a forked child."""

    def halt(self) -> None:
        """Ask the work to stop at its next step (without waiting)."""

    def stop(self, indexer_timeout: float | None) -> None:
        """Stop the work and wait for it (for a vector batch in progress, at most ``indexer_timeout`` s)."""

    def after_fork(self) -> None:
        """In a forked child: drop the parent's threads and handles."""


_live: "weakref.WeakSet[Background]" = weakref.WeakSet()
_registered = False
_guard = threading.Lock()


def track(work: Background) -> None:
    """Stop ``work`` at interpreter exit and reset it in a forked child (the hooks are registered once a
    process)."""
    global _registered
    with _guard:
        if not _registered:
            # Before the interpreter joins its threads and shuts down the executors LanceDB and
            # torch use (the public atexit runs after that, too late for a thread that needs them).
            getattr(threading, "_register_atexit", atexit.register)(_stop_all_at_exit)
            os.register_at_fork(after_in_child=_forget_all_after_fork)
            _registered = True
        _live.add(work)


def untrack(work: Background) -> None:
    """``work`` was closed: the hooks leave it alone."""
    _live.discard(work)


def _stop_all_at_exit() -> None:
    """At interpreter exit: ask all background work to stop, then wait for it (the vector indexers, all
    together, at most ``EXIT_WAIT_S``: a batch cut short is redone at the next open)."""
    deadline = time.monotonic() + EXIT_WAIT_S
    works = list(_live)
    for work in works:
        work.halt()
    for work in works:
        work.stop(indexer_timeout=max(0.0, deadline - time.monotonic()))
    vector_indexer.close_all(deadline)


def _forget_all_after_fork() -> None:
    """In a forked child: the parent's threads and cold store handles are not the child's."""
    global _guard
    _guard = threading.Lock()
    for work in list(_live):
        work.after_fork()
