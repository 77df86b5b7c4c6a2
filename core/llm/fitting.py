"""Summaries of inputs larger than the model's window: split, summarise each piece, then the summaries.

A summarizer prompt must never be cut by the server, so the input of one call is limited to
what the window holds besides the prompt's own text, the reply and the chat template
(:func:`room_chars`). A longer input is packed into pieces that fit (:func:`pack`, never
splitting a part unless that part alone is too long), each piece is summarised, and the
summaries are summarised together, again in pieces if they do not fit, until one is left
(:func:`map_reduce`).

:class:`BoundedModel` is the discipline every summarizer call gets: a timeout, an overall
deadline, ``<think>`` blocks removed, an empty answer or one not shorter than its input
rejected, and any failure turned into :class:`~core.errors.SummarizerError`.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Callable, Sequence

from core.errors import AgentOSError, SummarizerError
from core.llm.window import ContextWindow
from core.durable import background_thread

log = logging.getLogger(__name__)

DEFAULT_WINDOW_TOKENS = 4096
"""The window assumed for a model whose window is not known (Ollama's default)."""
MIN_ROOM_CHARS = 400
MAX_ROUNDS = 8
"""Most rounds of summarising summaries before the caller's deterministic fallback is used."""
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)


def window_of_generate(generate: object) -> ContextWindow | None:
    """The window of the backend behind ``generate`` (see :class:`core.llm.backend.BackendGenerate`), if
    known."""
    backend = getattr(generate, "backend", None)
    if backend is None:
        return None
    try:
        window = getattr(backend, "window", None)
    except AgentOSError as exc:  # the server cannot be asked now: the default window is assumed
        log.info("window of the summarizing model unknown (%s): %d tokens assumed", exc,
                 DEFAULT_WINDOW_TOKENS)
        return None
    return window if isinstance(window, ContextWindow) else None


def reply_reserve(num_ctx: int) -> int:
    """Tokens left for a summary reply: an eighth of the window, between 256 and 2,048."""
    return min(2048, max(256, num_ctx // 8))


def template_margin(num_ctx: int) -> int:
    """Tokens the chat template adds around the prompt: a thirty-second of the window, at least 128."""
    return max(128, num_ctx // 32)


def room_chars(window: ContextWindow | None, prompt_chars: int) -> int:
    """Characters of input that fit one call beside a prompt of ``prompt_chars`` characters."""
    window = window or ContextWindow(DEFAULT_WINDOW_TOKENS)
    num_ctx = window.num_ctx
    tokens = num_ctx - reply_reserve(num_ctx) - template_margin(num_ctx) - window.tokens("x" * prompt_chars)
    return max(MIN_ROOM_CHARS, window.chars(tokens))


def pack(parts: Sequence[str], room: int, separator: str = "\n") -> list[list[str]]:
    """Group ``parts`` in order into pieces of at most ``room`` characters (a longer part is cut into its
    own)."""
    pieces: list[list[str]] = []
    current: list[str] = []
    size = 0
    for part in parts:
        for chunk in _cut(part, room):
            cost = len(chunk) + (len(separator) if current else 0)
            if current and size + cost > room:
                pieces.append(current)
                current, size, cost = [], 0, len(chunk)
            current.append(chunk)
            size += cost
    if current:
        pieces.append(current)
    return pieces


def map_reduce(parts: Sequence[str], room: int, summarize: Callable[[str, int], str],
               merge: Callable[[str, int], str], separator: str = "\n") -> tuple[str, int]:
    """Summarise ``parts`` within ``room`` characters of input per call.

    ``summarize(text, piece_index)`` summarises source text; ``merge(text, round)`` summarises
    summaries. Returns ``(summary, calls)``.

    Raises:
        SummarizerError: a call failed, or the summaries stopped getting shorter.
    """
    pieces = pack(parts, room, separator)
    summaries = [summarize(separator.join(piece), i) for i, piece in enumerate(pieces)]
    merged, calls = reduce(summaries, room, merge)
    return merged, calls + len(summaries)


def reduce(summaries: Sequence[str], room: int, merge: Callable[[str, int], str]) -> tuple[str, int]:
    """Merge ``summaries`` into one, in groups of at most ``room`` characters, round after round.

    Returns ``(summary, merge_calls)``; a single summary is returned as it is.

    Raises:
        SummarizerError: a merge failed, or the summaries stopped getting shorter.
    """
    summaries = list(summaries)
    calls = rounds = 0
    while len(summaries) > 1:
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise SummarizerError(f"{len(summaries)} summaries did not merge into one in {MAX_ROUNDS} rounds")
        groups = pack(summaries, room, "\n\n")
        if len(groups) >= len(summaries) and rounds > 1:
            raise SummarizerError("the summaries stopped getting shorter: each alone fills the window")
        # a group of one summary passes through: there is nothing to merge it with
        summaries = [merge("\n\n".join(group), rounds) if len(group) > 1 else group[0] for group in groups]
        calls += sum(1 for group in groups if len(group) > 1)
    return summaries[0], calls


class BoundedModel:
    """A ``generate(prompt) -> text`` call with a timeout, an overall deadline and answer checks."""

    def __init__(self, generate: Callable[[str], str], timeout_s: float, deadline_s: float,
                 cancel: threading.Event | None = None) -> None:
        self.generate = generate
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + deadline_s
        self.cancel = cancel or threading.Event()
        """Set to stop waiting for the model (the process is closing): the call raises SummarizerError."""

    def remaining(self) -> float:
        """Seconds left before the deadline."""
        return self.deadline - time.monotonic()

    def __call__(self, prompt: str, source_chars: int | None = None) -> str:
        """The model's answer to ``prompt``, checked.

        ``source_chars``: the length of the text being summarised; the answer must be shorter.

        Raises:
            SummarizerError: the model failed, hung, answered nothing (or only a ``<think>`` block),
                or answered with more text than it was given.
        """
        timeout = min(self.timeout_s, self.remaining())
        if timeout <= 0:
            raise SummarizerError("the compaction's deadline passed before this summary was asked")
        if self.cancel.is_set():
            raise SummarizerError("the summary was abandoned: the memory is closing")
        answer = _call_with_timeout(self.generate, prompt, timeout, self.cancel)
        if not isinstance(answer, str):
            raise SummarizerError(f"the summarizer returned {type(answer).__name__}, not text")
        answer = _THINK.sub("", answer).strip()
        if not answer:
            raise SummarizerError("the summarizer returned nothing but a <think> block or blank text")
        if source_chars is not None and len(answer) >= source_chars:
            raise SummarizerError(f"the summary ({len(answer)} characters) is not shorter than its input "
                                  f"({source_chars} characters)")
        return answer


def _call_with_timeout(generate: Callable[[str], str], prompt: str, timeout_s: float,
                       cancel: threading.Event) -> object:
    """Run ``generate(prompt)`` in a daemon thread (a hung model call cannot be cancelled; a late answer is
    dropped)."""
    outcome: dict[str, object] = {}
    finished = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = generate(prompt)
        except BaseException as exc:  # handed to the caller below, never swallowed
            outcome["error"] = exc
        finally:
            finished.set()

    worker = background_thread(run, name="summarizer-call")
    worker.start()
    until = time.monotonic() + timeout_s
    while not finished.wait(min(0.05, max(0.0, until - time.monotonic()))):
        if cancel.is_set():
            raise SummarizerError("the summary was abandoned: the memory is closing")
        if time.monotonic() >= until:
            raise SummarizerError(f"the summarizer did not answer within {timeout_s:g}s")
    error = outcome.get("error")
    if isinstance(error, SummarizerError):
        raise error
    if isinstance(error, AgentOSError):
        raise SummarizerError(f"the summarizer's model failed: {error}") from error
    if isinstance(error, Exception):
        raise SummarizerError(f"the summarizer failed: {type(error).__name__}: {error}") from error
    if error is not None:
        raise error  # KeyboardInterrupt, SystemExit: not a summarizer failure
    return outcome.get("value")


def _cut(text: str, room: int) -> list[str]:
    """``text`` in pieces of at most ``room`` characters, cut at a line or space where one is near."""
    if len(text) <= room:
        return [text]
    out = []
    while len(text) > room:
        cut = max(text.rfind("\n", 0, room), text.rfind(" ", 0, room))
        if cut < room // 2:
            cut = room
        out.append(text[:cut])
        text = text[cut:].lstrip("\n ")
    if text:
        out.append(text)
    return out
