"""A progress indicator on stderr while the model works (only when stderr is a terminal)."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from typing import TextIO

FRAMES = "|/-\\"


class Spinner:
    """``with Spinner("thinking"):`` shows ``| thinking 3s`` and erases it afterwards."""

    def __init__(self, label: str, stream: TextIO | None = None, interval_s: float = 0.1) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "Spinner":
        if self.stream.isatty():
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.stream.write("\r\033[K")
            self.stream.flush()

    def _spin(self) -> None:
        started = time.monotonic()
        for frame in itertools.cycle(FRAMES):
            if self._stop.wait(self.interval_s):
                return
            self.stream.write(f"\r{frame} {self.label} {time.monotonic() - started:.0f}s")
            self.stream.flush()
