"""Named fault points: the steps of a write at which a crash test kills the process.

A write path calls :func:`reach` between its durable steps. Unarmed (always, outside crash tests)
that is one global read. Armed, by :func:`arm` or by ``AGENTOS_FAULT_POINT=NAME[@N]`` in the
environment (read at the first point reached), the process SIGKILLs itself the N-th time (default
the first) one of its threads reaches a point called NAME (``*``: any point); ``THREAD:NAME[@N]``
counts only the points of the threads whose name starts with THREAD (``main``: the main thread).
A kill after a sleep lands wherever the process happens to be, and on a busy machine somewhere
else, or after the work is over; a kill at a fault point lands at a known step however loaded the
machine is.

The points:

- ``log.append``: a LOG.md line is about to be written (the agent lock held); ``log.appended``: it
  is written and flushed, memory.db not yet told.
- ``file.replace``: a staged file (NOW.md, an archive, a compacted LOG.md, ...) is flushed and about
  to replace its target; ``file.replaced``: it has, its folder not yet flushed.
- ``db.commit``: a memory.db (or PostgreSQL) transaction, or one of a memory space's ``index.db``, is about
  to commit.
- ``cold.write``: a write to the cold store's Lance table (an upsert, a delete, a step of its
  compaction) is about to start; ``cold.written``: it is committed.
- ``import.swap``: an imported agent, whole in its staging folder, is about to take its place;
  ``import.swapped``: it has, the agent it replaced not yet deleted.
- ``reflect.commit``: reflection has a batch's checked reply and is about to write what it learned
  (nothing of the batch is written yet).
"""

from __future__ import annotations

import os
import signal
import threading

ENV = "AGENTOS_FAULT_POINT"
_UNREAD = object()
_armed: object = _UNREAD
"""``(name, n, thread)`` once armed, None when not, ``_UNREAD`` before the environment is read."""
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
    target, nth, thread = _armed  # type: ignore[misc]
    if thread is not None and not _is_thread(thread):
        return
    with _guard:
        _counts[name] = _counts.get(name, 0) + 1
        _counts["*"] = _counts.get("*", 0) + 1
        if _counts.get(target) == nth:
            os.kill(os.getpid(), signal.SIGKILL)


def arm(name: str | None, nth: int = 1, *, thread: str | None = None) -> None:
    """Kill this process the ``nth`` time its threads reach ``name`` (``*``: any point), counting from now;
    ``None`` disarms. With ``thread``, only the points of the threads whose name starts with it count
    (``main``: the main thread; ``agentos-recall``: background indexing)."""
    global _armed
    if nth < 1:
        raise ValueError(f"a fault point is reached the 1st time or later, not the {nth}th")
    with _guard:
        _counts.clear()
        _armed = None if name is None else (name, nth, thread)


def reached() -> dict[str, int]:
    """How many times each point was reached since arming (``*``: all of them); empty while unarmed."""
    with _guard:
        return dict(_counts)


def _is_thread(prefix: str) -> bool:
    current = threading.current_thread()
    if prefix == "main":
        return current is threading.main_thread()
    return current.name.startswith(prefix)


def _read_environment() -> None:
    """Arm from ``AGENTOS_FAULT_POINT`` (``[THREAD:]NAME[@N]``, see :func:`arm`); disarm when it is unset."""
    spec = os.environ.get(ENV, "")
    if not spec:
        arm(None)
        return
    thread, _, point = spec.rpartition(":")
    name, _, nth = point.partition("@")
    arm(name, int(nth or 1), thread=thread or None)
