"""What the backends of a model server share (Ollama's API and the OpenAI-compatible one).

- **The window**, asked from the server once, on first use (:meth:`ServedBackend.ask_window`, each API its
  own way), with the line that says where it came from; a :class:`~core.llm.model_window.WindowMeter` that
  learns the tokenizer's characters per token from the server's counts and spots prompts the server cut.
- **A prompt that cannot fit is refused** before it is sent: its estimate at the learned ratio is over the
  window (:class:`~core.errors.PromptTooLongError`); nothing reaches a server that would cut it silently.
- **The reply**, put together from streamed pieces (:class:`ReplyParts`): ``<think>`` blocks never shown nor
  kept, tool calls written as text read as calls (:mod:`core.llm.text_tool_calls`), token counts.
- **The prompt cache's counts** per call (logged) and summed (:class:`PromptCounts`): how many of the
  prompt's tokens the server took from its cache and how many it evaluated.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from core.config import LLMConfig
from core.errors import PromptTooLongError
from core.llm import text_tool_calls
from core.llm.backend import ChatReply, ToolCall
from core.llm.model_window import RatioStore, WindowMeter, initial_ratio, prompt_chars
from core.llm.structured import ThinkFilter, strip_think
from core.llm.window import ContextWindow

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WindowSource:
    """A window and where it came from."""

    num_ctx: int
    """Tokens of one request."""
    source: str
    """Where the number came from, for the user (``llama.cpp /props n_ctx``, ``llm.num_ctx``, ...)."""


DEFAULT_REPLY_TOKENS = LLMConfig.max_reply_tokens
"""A reply's token limit when none is configured (``llm.max_reply_tokens``'s default)."""
KEPT_CALLS = 1000


@dataclass(frozen=True)
class CallUsage:
    """One model call's counts as the server reported them."""

    usage: dict[str, int]
    """:attr:`ChatReply.usage <core.llm.backend.ChatReply.usage>`."""
    tools: bool
    """The call offered tools (a planner call; summaries offer none)."""
    continues: bool
    """The call continues a run: a tool result is among its last two messages (a note may follow it)."""


@dataclass
class PromptCounts:
    """Prompt tokens of model calls, as the server counted them: in all, from its cache, evaluated."""

    calls: int = 0
    prompt_tokens: int = 0
    """Tokens of the whole prompts, where the server says (OpenAI-compatible servers; Ollama does not)."""
    cached_tokens: int = 0
    """Tokens taken from the server's prompt cache (where it says)."""
    evaluated_tokens: int = 0
    """Tokens the server evaluated."""
    completion_tokens: int = 0

    def add(self, usage: dict[str, int]) -> None:
        """Count one call's :attr:`ChatReply.usage <core.llm.backend.ChatReply.usage>`."""
        self.calls += 1
        self.prompt_tokens += usage.get("prompt_tokens", 0)
        self.cached_tokens += usage.get("cached_tokens", 0)
        self.evaluated_tokens += usage.get("evaluated_tokens", 0)
        self.completion_tokens += usage.get("completion_tokens", 0)

    def since(self, before: "PromptCounts") -> "PromptCounts":
        """The counts added after ``before`` (a copy taken earlier)."""
        return PromptCounts(*(getattr(self, name) - getattr(before, name) for name in _FIELDS))

    def copy(self) -> "PromptCounts":
        return PromptCounts(*(getattr(self, name) for name in _FIELDS))

    @property
    def cached_share(self) -> float | None:
        """Share of the prompts' tokens taken from the cache (None when the server does not say)."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else None

    def describe(self) -> str:
        """One line: calls, prompt tokens, cached and evaluated."""
        share = self.cached_share
        whole = f"{self.prompt_tokens} prompt tokens, " if self.prompt_tokens else ""
        cached = f", {self.cached_tokens} from the server's cache ({share:.0%})" if share is not None else ""
        return (f"{self.calls} model call{'s' if self.calls != 1 else ''}: {whole}{self.evaluated_tokens} "
                f"evaluated{cached}, {self.completion_tokens} generated")


_FIELDS = ("calls", "prompt_tokens", "cached_tokens", "evaluated_tokens", "completion_tokens")


class ServedBackend:
    """The part of a backend that talks to a model server which is the same for every API.

    A subclass sets :attr:`name`, implements :meth:`ask_window` and ``chat``, and calls
    :meth:`refuse_overflow` before a request and :meth:`observe` after it.
    """

    name = "served"
    structured = True
    """Takes a reply shape: ``chat(..., format=schema)``."""

    def __init__(self, model: str, host: str, timeout_s: float, *, num_ctx: int,
                 ratios: RatioStore | None, max_reply_tokens: int | None = DEFAULT_REPLY_TOKENS) -> None:
        self.model = model
        self.host = host
        self.timeout_s = timeout_s
        self.num_ctx = num_ctx
        """The configured window (``llm.num_ctx``); the model's or server's own limit may lower it."""
        self.max_reply_tokens = max_reply_tokens
        """Most tokens of a reply (``llm.max_reply_tokens``), sent with every call that sets no limit of its
        own; None sends none (the server's default: until the window is full)."""
        self.ratios = ratios
        self.counts = PromptCounts()
        """Every call's prompt tokens, summed (a run takes the difference, see :meth:`PromptCounts.since`)."""
        self.calls: deque[CallUsage] = deque(maxlen=KEPT_CALLS)
        """The latest calls' counts, oldest first (for benchmarks)."""
        self.window_source = ""
        self._meter: WindowMeter | None = None

    def reply_limit(self, max_tokens: int | None) -> int | None:
        """The reply's token limit to send: the call's own, else :attr:`max_reply_tokens`."""
        return max_tokens if max_tokens is not None else self.max_reply_tokens

    def ask_window(self) -> WindowSource:
        """The window, asked from the server (raises the backend's errors)."""
        raise NotImplementedError

    @property
    def window(self) -> ContextWindow:
        """The model's window, asked from the server on first use.

        Raises:
            BackendUnavailableError, ModelNotFoundError, BackendError: the server cannot tell.
        """
        return self.meter.window

    @property
    def meter(self) -> WindowMeter:
        """The window and the comparison of estimates with the server's counts."""
        if self._meter is None:
            chosen = self.ask_window()
            self.window_source = chosen.source
            log.info("window of %s: %d tokens (%s)", self.model, chosen.num_ctx, chosen.source)
            window = ContextWindow(chosen.num_ctx, initial_ratio(self.ratios, self.model))
            self._meter = WindowMeter(window, self.model, self.ratios)
        return self._meter

    def describe_window(self) -> str:
        """The window, where it came from, the last prompt's size and the estimate's error, for
        ``/status``."""
        if self._meter is None:
            return f"window: not asked yet (llm.num_ctx {self.num_ctx})"
        return f"{self._meter.describe()}; window from {self.window_source}"

    def refuse_overflow(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        """Refuse a request whose estimate is over the window, rather than let the server cut it.

        Raises:
            PromptTooLongError: the prompt's estimate exceeds the window (nothing was sent).
        """
        window = self.window
        estimate = int(prompt_chars(messages, tools) / window.chars_per_token)
        if estimate > window.num_ctx:
            raise PromptTooLongError(
                f"a prompt of ~{estimate} tokens does not fit {self.model}'s window of {window.num_ctx} "
                f"tokens ({self.window_source}); it was not sent: shorten the request, or use a model with a "
                "longer window")

    def observe(self, reply: ChatReply, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        """Count the reply's tokens and log them (one line a call)."""
        usage = reply.usage
        self.counts.add(usage)
        self.calls.append(CallUsage(dict(usage), bool(tools),
                                    any(m.get("role") == "tool" for m in messages[-2:])))
        if not usage:
            return
        if "cached_tokens" in usage and usage.get("prompt_tokens"):
            log.info("LLM reply: %d prompt tokens, %d from the server's cache (%.0f%%), %d evaluated, %d "
                     "generated",
                     usage["prompt_tokens"], usage["cached_tokens"],
                     100 * usage["cached_tokens"] / usage["prompt_tokens"],
                     usage.get("evaluated_tokens", 0), usage.get("completion_tokens", 0))
        else:
            log.info("LLM reply: %d prompt tokens evaluated, %d generated",
                     usage.get("evaluated_tokens", 0), usage.get("completion_tokens", 0))


@dataclass
class ReplyParts:
    """A reply put together from the pieces of a streamed chat call, whatever the API."""

    parts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    """``prompt_tokens`` (the whole prompt), ``cached_tokens``, ``evaluated_tokens``, ``completion_tokens``:
    those the server reported."""
    thinking: ThinkFilter = field(default_factory=ThinkFilter)
    """Keeps ``<think>`` blocks out of the text shown as it streams."""
    cut: bool = False
    """The server stopped the reply at the token limit."""

    def text(self, piece: str) -> str:
        """Take a piece of the reply's text; return what to show of it (thinking left out)."""
        if not piece:
            return ""
        self.parts.append(piece)
        return self.thinking.feed(piece)

    def finish(self, offered: list[str]) -> ChatReply:
        """The whole reply; a tool call the model wrote as text becomes a tool call."""
        text = strip_think("".join(self.parts))
        calls = tuple(self.calls)
        if not calls:
            text, calls = text_tool_calls.parse(text, offered)
            if calls:
                log.info("the model wrote %d tool call(s) as text: %s", len(calls),
                         ", ".join(c.name for c in calls))
        return ChatReply(text=text, tool_calls=calls, usage=dict(self.usage), cut=self.cut)


def tool_names(tools: list[dict[str, Any]]) -> list[str]:
    """The names of the offered tool definitions."""
    return [tool.get("function", {}).get("name", "") for tool in tools]
