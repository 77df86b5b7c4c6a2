"""Ctrl-C reaches the main thread, whichever thread the kernel gives it to.

The kernel gives a process's SIGINT to any one of its threads that does not block it. Python runs the
handler in the main thread, but only once that thread runs Python again: a main thread waiting in
readline's ``select()`` for a key is not woken when another thread (a pool thread of LangGraph's, a
native thread of LanceDB's) took the signal, and the prompt would stay deaf to Ctrl-C.

While :func:`forwarded` is active, the wake-up byte that Python's C handler writes for every signal
(``signal.set_wakeup_fd``) is read by a watcher thread; when the main thread has not handled a SIGINT
within :data:`GRACE_S`, the watcher sends SIGINT to the main thread itself (``signal.pthread_kill``),
which interrupts its wait. The signal's flag is already set, so the handler still runs once.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

GRACE_S = 0.2
"""How long the main thread may take to handle a Ctrl-C before it is woken (s)."""


@contextmanager
def forwarded() -> Iterator[None]:
    """Within the block, every Ctrl-C is handled by the main thread (from the main thread only; else a no-op)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_kill"):
        yield
        return
    handled = threading.Semaphore(0)
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum: int, frame: object) -> None:
        handled.release()
        if callable(previous):
            previous(signum, frame)  # the default handler raises KeyboardInterrupt
        else:
            raise KeyboardInterrupt

    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.signal(signal.SIGINT, on_sigint)
    old_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(read_end, handled, threading.main_thread().ident),
                               name="ctrl-c-forwarder", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGINT, previous)
        os.close(write_end)  # the watcher reads the end of the pipe and stops
        watcher.join(timeout=5)
        os.close(read_end)


def _watch(read_end: int, handled: threading.Semaphore, main: int) -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    own_kills = 0
    while data := os.read(read_end, 64):
        for number in data:
            if number != signal.SIGINT:
                continue
            if own_kills:  # the byte of a SIGINT this watcher sent: the handler ran once for both
                own_kills -= 1
                handled.acquire(timeout=GRACE_S)
                continue
            if not handled.acquire(timeout=GRACE_S):
                own_kills += 1
                signal.pthread_kill(main, signal.SIGINT)
