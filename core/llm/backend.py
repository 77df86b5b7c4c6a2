"""The Backend protocol: one chat call with tools, one reply.

Messages are Ollama chat dicts (``{"role", "content", "tool_calls", "tool_name"}``),
tools are Ollama/OpenAI tool definitions. A backend turns its vendor's
errors into :class:`core.errors.BackendError` subclasses at the boundary.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol
from urllib.parse import urlsplit

from core.llm.structured import StructuredReplyError, parse_reply, strip_think
from core.llm.templates import load_prompt

log = logging.getLogger(__name__)


DEFAULT_HOST = "http://127.0.0.1:11434"
"""Where Ollama listens unless told otherwise."""
DEFAULT_OPENAI_HOST = "http://127.0.0.1:8080/v1"
"""Where llama.cpp's ``llama-server`` listens unless told otherwise."""


def resolve_host(flag: str | None = None, configured: str = "") -> str:
    """The Ollama address: a ``--host`` flag, else the config's ``llm.host``, else ``$OLLAMA_HOST``, else the
    default."""
    return flag or configured or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST


def resolve_openai_host(flag: str | None = None, configured: str = "") -> str:
    """The OpenAI-compatible server's base URL: ``--host``, else ``llm.host``, else ``$OPENAI_BASE_URL``, else
    llama-server's.

    Raises:
        ValueError: the address is not a URL.
    """
    given = ((flag, "--host"), (configured, "llm.host"),
             (os.environ.get("OPENAI_BASE_URL"), "$OPENAI_BASE_URL"))
    return base_url(*next(((value, name) for value, name in given if value), (DEFAULT_OPENAI_HOST, "")))


def base_url(host: str, source: str = "llm.host") -> str:
    """The OpenAI base URL of ``host``: as given, with ``/v1`` added to a bare ``http://host:port``
    (``source`` names where ``host`` came from, for the error)."""
    parts = urlsplit(host)
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"{source} {host!r} is not a URL: give one such as http://127.0.0.1:8080/v1")
    return host.rstrip("/") + ("/v1" if parts.path.strip("/") == "" else "")


HANDOFF_OPENING = "You are handing this session over to a fresh assistant"
"""The words that open every handoff request the engine sends (its ``prompts/HANDOFF.md``): a backend
that cannot summarise, the offline one, answers such a request with a deterministic summary."""


THIS_REQUEST = "(this turn's request: the user's newest message)"
"""What the engine's memory message shows in place of NOW's objective (or a log entry) that only repeats this
turn's request: a backend that reads the memory message, the offline one, finds the request itself in the
conversation."""


TextSink = Callable[[str], None]
"""Receives a reply's text piece by piece as the model produces it."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call requested by the model."""

    name: str
    """The tool's name, as offered."""
    arguments: dict[str, Any]
    """The arguments object (already parsed from JSON)."""
    id: str = ""
    """A stable id the engine assigns, so a re-run never repeats a finished call."""

    def as_message_part(self) -> dict[str, Any]:
        """The call in the shape of an Ollama assistant message's ``tool_calls`` item."""
        return {"function": {"name": self.name, "arguments": dict(self.arguments)}}


@dataclass(frozen=True)
class ChatReply:
    """The model's answer to one chat call."""

    text: str = ""
    """Assistant text (may be empty when the model only calls tools)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Tools the model wants run before it answers."""
    usage: dict[str, int] = field(default_factory=dict)
    """Token counts the server reported, those it gives: ``prompt_tokens`` (the whole prompt; Ollama does not
    say it), ``cached_tokens`` (taken from its prompt cache), ``evaluated_tokens``, ``completion_tokens``."""
    blocked: str = ""
    """Why the backend cannot carry out the request (the offline backend's open-ended tasks); empty
    otherwise."""
    cut: bool = False
    """The reply stopped at the token limit (``max_tokens``, ``num_predict``, the server's own, or the
    window), not where the model ended it."""


class Backend(Protocol):
    """An LLM that can chat with tool calling."""

    name: str
    """``ollama``, ``openai`` or ``offline``."""
    model: str
    """The model used, for messages to the user."""

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
             on_text: TextSink | None = None) -> ChatReply:
        """Send the conversation (system prompt first) and the tool definitions; return the reply.

        ``on_text`` receives the reply's text as it arrives (a streaming backend calls it per
        chunk; others once). A tool call written as text is recognised in the whole reply.

        Raises:
            BackendUnavailableError: the model server cannot be reached.
            ModelNotFoundError: the server lacks the model.
            ToolArgumentError: the model produced a tool call whose arguments are not a JSON object.
            BackendError: any other failure of the backend.
        """
        ...


class BackendGenerate:
    """``generate(prompt) -> text``: one chat call through a backend without tools (for summarizers).

    It keeps its backend, so a summarizer can size its pieces to the backend's window. A backend that
    takes a reply shape (``structured``: Ollama's ``format``, the OpenAI API's ``response_format``) is asked
    for a :class:`SummaryReply`, in the prompt too; a reply that does not fit is asked again once, then the
    prompt is sent as plain text, as a backend without shapes is asked (at once when the reply stopped at the
    token limit: asked again, it would stop there again). ``<think>`` blocks never reach the summary.
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def __call__(self, prompt: str) -> str:
        if getattr(self.backend, "structured", False):
            answer = self._structured(prompt)
            if answer is not None:
                return answer
        return strip_think(self.backend.chat([{"role": "user", "content": prompt}], []).text)

    def _structured(self, prompt: str) -> str | None:
        """The summary from a reply of the shape, asked at most twice; None when neither reply fits."""
        from core.llm.shapes import SummaryReply  # pydantic: only a process that summarises imports it

        messages = [{"role": "user",
                     "content": f"{prompt}\n\n{load_prompt('core.llm', 'STRUCTURED_SUMMARY')}"}]
        schema = SummaryReply.model_json_schema()
        for attempt in (1, 2):
            reply = self.backend.chat(messages, [], format=schema)
            try:
                return parse_reply(reply.text, SummaryReply).summary
            except StructuredReplyError as exc:
                log.warning("summary reply %d of 2 unusable: %s", attempt, exc)
            if reply.cut:  # asked again the same way, it would stop at the same limit
                log.warning("the summary reply stopped at the token limit: asking for plain text")
                return None
        log.warning("the model gave no summary of the asked shape twice: asking for plain text")
        return None


def generate_with(backend: Backend) -> BackendGenerate:
    """``generate(prompt) -> text`` through ``backend``."""
    return BackendGenerate(backend)
