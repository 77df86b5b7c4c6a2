"""Named fault points: the steps of a write at which a crash test kills the process.

A write path calls :func:`reach` between its durable steps. Unarmed (always, outside crash tests)
that is one global read. Armed, by :func:`arm` or by ``AGENTOS_FAULT_POINT=NAME[@N]`` in the
environment (read at the first point reached), the process SIGKILLs itself the N-th time (default
the first) one of its threads reaches a point called NAME (``*``: any point). A kill after a sleep
lands wherever the process happens to be, and on a busy machine somewhere else, or after the work
is over; a kill at a fault point lands at a known step however loaded the machine is.

The points:

- ``log.append``: a LOG.md line is about to be written (the agent lock held); ``log.appended``: it
  is written and flushed, memory.db not yet told.
- ``file.replace``: a staged file (NOW.md, an archive, a compacted LOG.md, ...) is flushed and about
  to replace its target; ``file.replaced``: it has, its folder not yet flushed.
- ``db.commit``: a memory.db (or PostgreSQL) transaction is about to commit.
- ``cold.write``: a write to the cold store's Lance table (an upsert, a delete, a step of its
  compaction) is about to start; ``cold.written``: it is committed.
"""

from __future__ import annotations

import os
import signal
import threading

ENV = "AGENTOS_FAULT_POINT"
_UNREAD = object()
_armed: object = _UNREAD
"""``(name, n, main_thread_only)`` once armed, None when not, ``_UNREAD`` before the environment is read."""
_counts: dict[str, int] = {}
_guard = threading.Lock()


def reach(name: str) -> None:
    """Count ``name`` as reached; SIGKILL this process if that is the point it is armed for."""
    if _armed is None:
        return
    if _armed is _UNREAD:
        _read_environment()
        if _armed is None:
            return
    target, nth, main_only = _armed  # type: ignore[misc]
    if main_only and threading.current_thread() is not threading.main_thread():
        return
    with _guard:
        _counts[name] = _counts.get(name, 0) + 1
        _counts["*"] = _counts.get("*", 0) + 1
        if _counts.get(target) == nth:
            os.kill(os.getpid(), signal.SIGKILL)


def arm(name: str | None, nth: int = 1, *, main_thread_only: bool = False) -> None:
    """Kill this process the ``nth`` time its threads (the main thread's only, if asked) reach ``name``
    (``*``: any point), counting from now; ``None`` disarms."""
    global _armed
    if nth < 1:
        raise ValueError(f"a fault point is reached the 1st time or later, not the {nth}th")
    with _guard:
        _counts.clear()
        _armed = None if name is None else (name, nth, main_thread_only)


def reached() -> dict[str, int]:
    """How many times each point was reached since arming (``*``: all of them); empty while unarmed."""
    with _guard:
        return dict(_counts)


def _read_environment() -> None:
    """Arm from ``AGENTOS_FAULT_POINT`` (``NAME``, ``NAME@N``; a ``main:`` prefix counts the main
    thread's points only), or disarm when it is unset."""
    spec = os.environ.get(ENV, "")
    if not spec:
        arm(None)
        return
    main_only = spec.startswith("main:")
    name, _, nth = spec.removeprefix("main:").partition("@")
    arm(name, int(nth or 1), main_thread_only=main_only)
