"""Foreground writes, which this process's background work gives way to.

An append takes a fraction of a millisecond when nothing else in the process competes
with it. While automatic compaction or recall indexing runs in another thread, the
append also waits for what that thread holds: the GIL (CPython hands it back to a thread
returning from a system call only after the switch interval, 5 ms, and an append makes
several such calls), a CPU (computing vectors keeps one busy, loading LanceDB or the
embedding model takes seconds of Python), memory.db's write lock and the disk's flushes.

So background threads start each step of their work once the writers of this process
have paused for :data:`PAUSE_S`, or after :data:`MAX_WAIT_S`, so that they keep up
under writes that never pause. An agent writes in bursts (a turn's entries) between
model calls that take seconds: its background work runs in those gaps.
"""

from __future__ import annotations

import threading
import time

PAUSE_S = 0.05
"""How long the writers must have been quiet for a background step to start (s)."""
MAX_WAIT_S = 1.0
"""The longest a background step waits for that pause (s)."""

_POLL_S = 0.01
"""How often a waiting step looks at its ``cancel`` events."""

_last_write = float("-inf")


def wrote() -> None:
    """Record that a foreground write (a LOG.md entry, with NOW.md or a fact) just ended."""
    global _last_write
    _last_write = time.monotonic()  # one store under the GIL: no lock needed


def wait_for_pause(*cancel: threading.Event) -> bool:
    """Wait until the writers have been quiet for ``PAUSE_S``, at most ``MAX_WAIT_S``; False (at once)
    when one of the ``cancel`` events is set: the caller is stopping, or someone waits for its result."""
    deadline = time.monotonic() + MAX_WAIT_S
    while True:
        if any(event.is_set() for event in cancel):
            return False
        now = time.monotonic()
        left = min(PAUSE_S - (now - _last_write), deadline - now)
        if left <= 0:
            return True
        time.sleep(min(left, _POLL_S))
