"""Ctrl-C reaches the main thread of an interactive session, whichever thread the kernel gave it to."""

from __future__ import annotations

import os
import select
import signal
import threading

import pytest

from core.terminal import ctrl_c


def test_a_ctrl_c_taken_by_another_thread_wakes_the_main_thread_waiting_in_c():
    """SIGINT delivered to a worker thread still interrupts the main thread's select(), as at a readline prompt."""
    before = signal.getsignal(signal.SIGINT)  # Python's default, or SIG_IGN where the test runner set it
    read_end, write_end = os.pipe()
    ready, done = threading.Event(), threading.Event()

    def worker() -> None:  # a thread that does not block SIGINT, like a pool thread of a library's
        ready.set()
        done.wait(60)

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        with ctrl_c.forwarded():
            threading.Timer(0.1, signal.pthread_kill, (thread.ident, signal.SIGINT)).start()
            with pytest.raises(KeyboardInterrupt):
                select.select([read_end], [], [], 60)  # a hang guard: the test fails if this waits it out
    finally:
        done.set()
        os.close(read_end)
        os.close(write_end)
    assert signal.getsignal(signal.SIGINT) is before


def test_a_ctrl_c_the_main_thread_takes_is_handled_once():
    """A SIGINT the main thread takes itself raises one KeyboardInterrupt, and nothing is forwarded after it."""
    with ctrl_c.forwarded():
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        threading.Event().wait(ctrl_c.GRACE_S * 3)  # a second, forwarded signal would raise here
