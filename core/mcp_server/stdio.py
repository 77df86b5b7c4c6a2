"""Serving MCP over stdio so that Ctrl-C stops the server cleanly.

The SDK reads stdin in a worker thread whose blocking read cannot be cancelled: on Ctrl-C the
event loop would wait for it forever. Here stdin is read through :class:`InterruptibleInput`,
whose read also returns (end of input) once a wake-up pipe is written; Python's C-level signal
handler writes that pipe (``signal.set_wakeup_fd``) at once, whichever thread the kernel gives the
signal to, and only Ctrl-C has a Python handler here. A Ctrl-C thus looks to the server like a
client that closed its end: it stops as it does then, closing the agent's memory. A second Ctrl-C
raises KeyboardInterrupt at once.
"""

from __future__ import annotations

import io
import os
import select
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Callable, Iterator


class InterruptibleInput(io.RawIOBase):
    """Bytes from ``fd`` until it ends or ``wake_fd`` becomes readable (then: end of input)."""

    def __init__(self, fd: int, wake_fd: int) -> None:
        super().__init__()
        self.fd = fd
        self.wake_fd = wake_fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        # poll(), not select(): select() refuses a descriptor numbered 1024 or more, which a process
        # serving for long (or a test run) may well hand out to the wake-up pipe.
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        poller.register(self.wake_fd, select.POLLIN)
        ready = {fd for fd, _ in poller.poll()}
        if self.wake_fd in ready:
            return 0
        data = os.read(self.fd, len(buffer))
        buffer[:len(data)] = data
        return len(data)


@contextmanager
def interruptible_stdin() -> Iterator[Callable[[], bool]]:
    """Within the block ``sys.stdin`` ends at the first Ctrl-C; yields ``interrupted()``, true once one came.

    From the main thread only (signal handlers are set there), and for a stdin with a file descriptor;
    otherwise stdin is left as it is.
    """
    try:
        stdin_fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # no stdin, or one in memory: nothing blocks on it
        stdin_fd = None
    if stdin_fd is None or threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    stopping = threading.Event()

    def on_sigint(signum: int, frame: object) -> None:
        if stopping.is_set():
            raise KeyboardInterrupt  # the second Ctrl-C: the server did not stop on the first
        stopping.set()

    previous_handler = signal.signal(signal.SIGINT, on_sigint)
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    previous_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BufferedReader(InterruptibleInput(stdin_fd, read_end)),
                                 encoding="utf-8", errors="replace")
    try:
        yield stopping.is_set
    finally:
        sys.stdin = previous_stdin
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, previous_handler)
        os.close(write_end)
        # Not read_end: the SDK's reader thread may still be in select() on it after the server returned.
