"""Progress on stderr while something slow runs (only when stderr is a terminal).

``with Spinner("finn is working"):`` shows ``| finn is working 3s`` and erases it afterwards.
A spinner opened inside another (loading the embedding model during a turn) shows its own label
on the same line until it ends, then the outer label comes back: :func:`progress` is that. A
spinner stops for good as soon as the model's reply starts streaming (:meth:`Spinner.stop`).

A spinner never touches a line it did not draw: it erases only after it has drawn a frame, and while
a prompt waits for the user (:func:`prompt_shown`) no spinner draws at all, so a slow job that ends
after the prompt appeared (a model loading in the background) cannot wipe the prompt or what the user
is typing. Only the main thread opens a spinner of its own: a background job cannot know what the
terminal shows, so its :func:`progress` shows nothing unless a spinner is already running.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator, TextIO

from core.durable import background_thread

FRAMES = "|/-\\"
ERASE_LINE = "\r\033[K"

_active: list["Spinner"] = []
_active_guard = threading.Lock()
_prompts = 0
"""How many prompts wait for the user now (under ``_active_guard``): no spinner draws while one does."""


class Spinner:
    """A label with a turning bar and the seconds elapsed, on one erasable line."""

    def __init__(self, label: str, stream: TextIO | None = None, interval_s: float = 0.1,
                 at_once: bool = False) -> None:
        """``at_once`` draws the first frame when the spinner starts (for what always takes seconds);
        otherwise after ``interval_s``, so that a quick operation does not flash a line."""
        self.labels = [label]
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self.at_once = at_once
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._write = threading.Lock()
        self._drawn = False
        """A frame is on the screen: the line is the spinner's to erase."""
        self._started = time.monotonic()

    def __enter__(self) -> "Spinner":
        if self.stream.isatty():
            with _active_guard:
                if _prompts:
                    return self  # a prompt waits: the line belongs to the user
                _active.append(self)
            self._started = time.monotonic()
            if self.at_once:
                self._draw(FRAMES[0])
            self._thread = background_thread(self._spin)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        with _active_guard:
            if self in _active:
                _active.remove(self)

    @property
    def running(self) -> bool:
        return self._thread is not None

    def stop(self) -> None:
        """Stop spinning and erase the line if a frame is on it (idempotent, from any thread)."""
        self._stop.set()
        with self._write:
            thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._write:
            if self._drawn:
                self.stream.write(ERASE_LINE)
                self.stream.flush()
                self._drawn = False

    def _spin(self) -> None:
        for frame in itertools.islice(itertools.cycle(FRAMES), 1 if self.at_once else 0, None):
            if self._stop.wait(self.interval_s):
                return
            self._draw(frame)

    def _draw(self, frame: str) -> None:
        with _active_guard, self._write:
            if self._stop.is_set() or _prompts:
                return
            self.stream.write(
                f"{ERASE_LINE}{frame} {self.labels[-1]} {time.monotonic() - self._started:.0f}s"
            )
            self.stream.flush()
            self._drawn = True


@contextmanager
def progress(label: str) -> Iterator[None]:
    """Show ``label`` while the block runs: on the running spinner's line, or (from the main thread) on a
    spinner of its own."""
    with _active_guard:
        outer = next((s for s in reversed(_active) if s.running), None)
    if outer is None:
        if threading.current_thread() is not threading.main_thread():
            yield  # a background job: the terminal may show a prompt now
            return
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


@contextmanager
def prompt_shown() -> Iterator[None]:
    """Around a prompt that waits for the user: every spinner is stopped (its line erased) before the prompt
    is printed, and none draws until the user has answered."""
    global _prompts
    with _active_guard:
        _prompts += 1  # first: a spinner starting meanwhile does not draw
    stop_all()
    try:
        yield
    finally:
        with _active_guard:
            _prompts -= 1


def seconds(elapsed: float) -> str:
    """A duration for a person: tenths of a second, or milliseconds when it took less than that."""
    return f"{elapsed:.1f} s" if elapsed >= 0.1 else f"{elapsed:.3f} s"


def tqdm(*args: Any, **kwargs: Any) -> Any:
    """A ``tqdm`` progress bar (same arguments), the module imported on first use: every ``agentos`` command
    imports the modules of all of them to build its parser, and only a few draw a bar."""
    from tqdm import tqdm as bar

    return bar(*args, **kwargs)
