"""Progress on stderr while something slow runs (only when stderr is a terminal).

``with Spinner("finn is working"):`` shows ``| finn is working 3s`` and erases it afterwards.
A spinner opened inside another (loading the embedding model during a turn) shows its own label
on the same line until it ends, then the outer label comes back: :func:`progress` is that. A
spinner stops for good as soon as the model's reply starts streaming (:meth:`Spinner.stop`).
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator, TextIO

from core.memory.foreground import background_thread

FRAMES = "|/-\\"

_active: list["Spinner"] = []
_active_guard = threading.Lock()


class Spinner:
    """A label with a turning bar and the seconds elapsed, on one erasable line."""

    def __init__(self, label: str, stream: TextIO | None = None, interval_s: float = 0.1) -> None:
        self.labels = [label]
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._write = threading.Lock()

    def __enter__(self) -> "Spinner":
        if self.stream.isatty():
            with _active_guard:
                _active.append(self)
            self._thread = background_thread(self._spin)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        with _active_guard:
            if self in _active:
                _active.remove(self)

    def stop(self) -> None:
        """Stop spinning and erase the line (idempotent)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            with self._write:
                self.stream.write("\r\033[K")
                self.stream.flush()

    def _spin(self) -> None:
        started = time.monotonic()
        for frame in itertools.cycle(FRAMES):
            if self._stop.wait(self.interval_s):
                return
            with self._write:
                self.stream.write(f"\r\033[K{frame} {self.labels[-1]} {time.monotonic() - started:.0f}s")
                self.stream.flush()


@contextmanager
def progress(label: str) -> Iterator[None]:
    """Show ``label`` while the block runs: on the running spinner's line, or on a spinner of its own."""
    with _active_guard:
        outer = next((s for s in reversed(_active) if s._thread is not None), None)
    if outer is None:
        with Spinner(label):
            yield
        return
    outer.labels.append(label)
    try:
        yield
    finally:
        outer.labels.remove(label)


def stop_all() -> None:
    """Stop every running spinner: output the user reads is about to be written."""
    with _active_guard:
        spinners = list(_active)
    for spinner in spinners:
        spinner.stop()


def seconds(elapsed: float) -> str:
    """A duration for a person: tenths of a second, or milliseconds when it took less than that."""
    return f"{elapsed:.1f} s" if elapsed >= 0.1 else f"{elapsed:.3f} s"
