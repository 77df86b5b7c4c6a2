"""Ctrl-C reaches the main thread, whichever thread the kernel gives it to.

The kernel gives a process's SIGINT to any one of its threads that does not block it. Python runs the
handler in the main thread, but only once that thread runs Python again: a main thread waiting in
readline's ``select()`` for a key is not woken when another thread (a pool thread of LangGraph's, a
native thread of LanceDB's) took the signal, and the prompt would stay deaf to Ctrl-C.

While :func:`forwarded` is active, the wake-up byte that Python's C handler writes for every signal
(``signal.set_wakeup_fd``) is read by a watcher thread; when the main thread has not handled a SIGINT
within :data:`GRACE_S`, the watcher wakes it with :data:`WAKE_SIGNAL`, whose handler does nothing
(``signal.pthread_kill``): the wait is interrupted, and Python runs the pending handlers, the SIGINT's
among them. Waking it is never a second Ctrl-C: a wake that lands after the main thread handled the
SIGINT on its own (a busy machine) runs only the empty handler.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

GRACE_S = 0.2
"""How long the main thread may take to handle a Ctrl-C before it is woken (s)."""

WAKE_SIGNAL = getattr(signal, "SIGURG", None)
"""The signal that wakes the main thread: one a terminal program does not otherwise use, and whose default
action is to ignore it."""


@contextmanager
def forwarded() -> Iterator[None]:
    """Within the block, every Ctrl-C is handled by the main thread (from the main thread only; else a
    no-op)."""
    if (threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_kill")
            or WAKE_SIGNAL is None):
        yield
        return
    runs = _Runs()
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum: int, frame: object) -> None:
        runs.add()
        if callable(previous):
            previous(signum, frame)  # the default handler raises KeyboardInterrupt
        else:
            raise KeyboardInterrupt

    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous_wake = signal.signal(WAKE_SIGNAL, _woken)
    signal.signal(signal.SIGINT, on_sigint)
    old_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(read_end, runs, threading.main_thread().ident),
                               name="ctrl-c-forwarder", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGINT, previous)
        os.close(write_end)  # the watcher reads the end of the pipe and stops
        watcher.join()  # before the wake's handler goes: no wake may come after it
        os.close(read_end)
        signal.signal(WAKE_SIGNAL, previous_wake)


def _woken(signum: int, frame: object) -> None:
    """The wake's handler: nothing (it only interrupts the main thread's wait)."""


class _Runs:
    """How many times the SIGINT handler has run, which the watcher can wait on."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def add(self) -> None:
        with self.changed:
            self.count += 1
            self.changed.notify_all()

    def beyond(self, seen: int, timeout: float) -> int:
        """The count once it exceeds ``seen``, or ``seen`` if it does not within ``timeout`` s."""
        with self.changed:
            self.changed.wait_for(lambda: self.count > seen, timeout)
            return max(self.count, seen)


def _watch(read_end: int, runs: _Runs, main: int) -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    accounted = 0  # handler runs matched with SIGINTs read so far (a wake counts as the run it asks for)
    while data := os.read(read_end, 64):
        for number in data:
            if number != signal.SIGINT:
                continue
            ran = runs.beyond(accounted, GRACE_S)
            if ran > accounted:  # handled (two quick Ctrl-C may have made one run: the next one is woken)
                accounted = ran
            else:
                accounted += 1
                signal.pthread_kill(main, WAKE_SIGNAL)
