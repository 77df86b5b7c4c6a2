"""Asking the model, and never losing a batch to a bad reply.

:class:`ModelReader` sends one batch in one chat call, with the reply's JSON schema where the backend
takes one (``structured``: Ollama's ``format``; an OpenAI-compatible backend maps it to
``response_format``), and the reply bounded to the tokens the batch left for it (a small model can loop
inside a schema until the window is full, holding the server's slot). :func:`resolve` turns a batch into
what may be kept:

1. the reply is read (prose, a fence, a ``<think>`` block around the object are fine,
   :func:`core.llm.structured.parse_reply`) and checked (:mod:`core.memory.reflection.check`);
2. a reply that cannot be used (unreadable, cut off, the wrong shape, a value from thin air, a failed or
   timed-out call) is asked again once, with the error shown to the model;
3. then the batch is split in two and each half resolved alone;
4. an entry that still fails alone is quarantined with the reason.

A server that does not answer (or lacks the model) is no bad reply: :class:`BackendUnavailableError` and
:class:`ModelNotFoundError` go up, and nothing of the batch is kept or marked. So does :class:`Stopped`
when the memory closes during a call (the call is abandoned, the batch read again next time).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from core.errors import AgentOSError, BackendError, BackendUnavailableError, ModelNotFoundError
from core.llm import ContextWindow, StructuredReplyError, fill, load_prompt, parse_reply
from core.durable import background_thread, load_json
from core.memory.reflection.check import Checked, check
from core.memory.reflection.inputs import Item, reply_tokens

log = logging.getLogger(__name__)

DEFAULT_WINDOW = ContextWindow(4096)
"""The window assumed for a model whose window cannot be asked (Ollama's default)."""
SHOWN_REPLY_CHARS = 600
"""Of an unusable reply, what the retry shows the model (its start)."""
RETRY_CHARS = SHOWN_REPLY_CHARS + 600
"""Room a batch keeps for a retry's extra text (the reply shown, the error)."""
FAILURES_IN_A_ROW = 8
"""Unusable replies in a row after which the rest of a batch is quarantined unread."""


class Stopped(AgentOSError):
    """The memory is closing: the call in progress is abandoned and nothing of its batch is kept."""


def prompt_template() -> tuple[str, str]:
    """``(text, version)`` of ``prompts/REFLECT.md``; the version is on its first line
    (``<!-- prompt: reflect v1 -->``) and goes with every memory it extracts."""
    text = load_prompt("core.memory.reflection", "REFLECT")
    first, _, rest = text.partition("\n")
    version = first.strip().removeprefix("<!--").removesuffix("-->").strip().removeprefix("prompt:").strip()
    return rest, version or "reflect"


def prompt_text(items: Sequence[Item], known: str) -> str:
    """The prompt of one batch: its entries numbered from 1, and the facts already known."""
    template, _ = prompt_template()
    return fill(template, entries="\n".join(item.line(n) for n, item in enumerate(items, 1)),
                known=known or "(none)")


class Reader(Protocol):
    """Who reads a batch: a model, or the offline backend's rules."""

    model: str
    """What the provenance of what it reads names."""
    fallback: bool
    """True for the rule-based reader (reported as the fallback it is)."""


@dataclass
class Tally:
    """What a pass did, counted for ``reflect_stats`` and the report."""

    calls: int = 0
    failed: int = 0
    repaired: int = 0
    split: int = 0
    quarantined: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)
    streak: int = 0
    """Unusable replies in a row (see :func:`resolve`)."""
    last: str = ""
    """Why the last unusable reply could not be used."""

    def add(self, other: "Tally") -> None:
        for name in ("calls", "failed", "repaired", "split", "quarantined", "rejected"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.errors += other.errors


@dataclass
class Done:
    """The outcome for some of a batch's items: what may be kept, or the reason they are quarantined."""

    items: list[Item]
    checked: Checked | None = None
    error: str = ""


class ModelReader:
    """One chat call a batch, bounded by ``timeout_s`` and abandoned when ``cancel`` is set."""

    fallback = False

    def __init__(self, backend: Any, timeout_s: float, cancel: threading.Event) -> None:
        self.backend = backend
        self.model = str(getattr(backend, "model", "?"))
        self.timeout_s = timeout_s
        self.cancel = cancel

    @property
    def window(self) -> ContextWindow:
        """The model's window (asked from the server once); Ollama's default when it cannot be asked."""
        try:
            window = getattr(self.backend, "window", None)
        except AgentOSError as exc:
            log.info("window of %s unknown (%s): %d tokens assumed", self.model, exc, DEFAULT_WINDOW.num_ctx)
            return DEFAULT_WINDOW
        return window if isinstance(window, ContextWindow) else DEFAULT_WINDOW

    def chat(self, messages: list[dict[str, Any]]) -> str:
        """The reply's text.

        Raises:
            Stopped: the memory is closing.
            BackendError: the call failed or took longer than ``timeout_s``.
        """
        # a model server's backend: the shape and a length bound
        if getattr(self.backend, "structured", False):
            limit = reply_tokens(self.window)
            # pydantic: imported by the first pass that asks a model
            from core.memory.reflection.reply import schema

            call: Callable[[], Any] = lambda: self.backend.chat(messages, [], format=schema(),
                                                                max_tokens=limit)
        else:
            call = lambda: self.backend.chat(messages, [])
        return str(_bounded(call, self.timeout_s, self.cancel).text or "")


def _bounded(call: Callable[[], Any], timeout_s: float, cancel: threading.Event) -> Any:
    """``call()`` in a thread of its own: a model call cannot be interrupted, so a late one is abandoned."""
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller below, never swallowed
            outcome["error"] = exc
        finally:
            finished.set()

    background_thread(run, name="agentos-reflect-call").start()
    until = time.monotonic() + timeout_s
    while not finished.wait(min(0.05, max(0.0, until - time.monotonic()))):
        if cancel.is_set():
            raise Stopped("reflection stopped: the memory is closing")
        if time.monotonic() >= until:
            raise BackendError(f"the model did not answer within {timeout_s:g}s (reflect.timeout_s)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def resolve(reader: ModelReader, items: list[Item], known: str, tally: Tally,
            today: Any = None) -> list[Done]:
    """What may be kept of ``items``, or why they are quarantined: asked, asked again, split, set aside.

    After :data:`FAILURES_IN_A_ROW` unusable replies in a row the model is not asked about the rest of the
    batch: its entries are quarantined unread (a model that cannot answer the schema would otherwise be
    asked four times an entry), and tried again alone later.
    """
    if tally.streak >= FAILURES_IN_A_ROW:
        ids = list(dict.fromkeys(item.id for item in items))
        tally.quarantined += len(ids)
        reason = (
            f"set aside unread: the model gave {tally.streak} unusable replies in a row (the last: "
            f"{tally.last})"
        )
        return [Done([i for i in items if i.id == item_id], error=reason) for item_id in ids]
    checked, error = _ask_twice(reader, items, known, tally, today)
    if checked is not None:
        return [Done(items, checked)]
    ids = list(dict.fromkeys(item.id for item in items))
    if len(ids) > 1:
        tally.split += 1
        half = set(ids[: len(ids) // 2])
        first = [i for i in items if i.id in half]
        second = [i for i in items if i.id not in half]
        log.info("reflection: a batch of %d entries failed twice (%s); asking its halves", len(ids), error)
        return resolve(reader, first, known, tally, today) + resolve(reader, second, known, tally, today)
    tally.quarantined += 1
    log.warning("reflection: %s set aside after failing alone twice: %s", ids[0], error)
    return [Done(items, error=error)]


def _ask_twice(reader: ModelReader, items: list[Item], known: str, tally: Tally,
               today: Any) -> tuple[Checked | None, str]:
    """The checked reply to ``items``, asked at most twice (the second time with the first one's error)."""
    messages = [{"role": "user", "content": prompt_text(items, known)}]
    error = ""
    for attempt in (1, 2):
        tally.calls += 1
        text = ""
        try:
            text = reader.chat(messages)
            checked = _read(text, items, tally, today)
            tally.streak = 0
            return checked, ""
        except (BackendUnavailableError, ModelNotFoundError, Stopped):
            raise
        except BackendError as exc:  # an unusable reply (StructuredReplyError too), a failed or late call
            error = str(exc)
        tally.failed += 1
        tally.streak += 1
        tally.last = error
        tally.errors.append(error)
        log.info("reflection reply %d of 2 from %s unusable: %s", attempt, reader.model, error)
        messages = messages[:1] + [
            {"role": "assistant", "content": text[:SHOWN_REPLY_CHARS]},
            {"role": "user",
             "content": f"That answer cannot be used: {error}. Answer again with only the JSON object asked "
                        "for, copying every value from the entries it cites."}]
    return None, error


def _read(text: str, items: list[Item], tally: Tally, today: Any) -> Checked:
    """The reply checked against ``items``.

    Raises:
        StructuredReplyError: no object of the shape in it, or a value it holds is not in its entries.
    """
    from core.memory.reflection.reply import ReflectReply

    reply = parse_reply(text, ReflectReply)
    checked = check(reply, items, today)
    tally.rejected += len(checked.rejected)
    if checked.rejected:
        raise StructuredReplyError("; ".join(checked.rejected[:5]))
    if checked.repaired or not _bare(text):
        tally.repaired += 1
    return checked


def _bare(text: str) -> bool:
    """Whether ``text`` is the JSON object alone (nothing had to be repaired to read it)."""
    try:
        return isinstance(load_json(text), dict)
    except ValueError:
        return False
