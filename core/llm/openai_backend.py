"""The OpenAI-compatible backend, through the official ``openai`` client: llama.cpp's ``llama-server``,
LM Studio, vLLM, LocalAI, Ollama's ``/v1`` — any server of the chat-completions API.

It does what the Ollama backend does (:mod:`core.llm.served`): the window asked from the server
(:mod:`core.llm.openai_server`), a prompt that cannot fit refused, tool calls (the API's ``tool_calls`` and
those small models write as text), streaming, token counts from ``usage``. Beside them:

- **structured output**: ``chat(..., format=schema)`` sends ``response_format`` with the JSON schema, which
  llama.cpp, vLLM, LM Studio and Ollama turn into constrained decoding; a server that refuses it is asked
  again without it, and from then on never with it (:attr:`OpenAIBackend.constrained` turns False). Callers
  ask for the shape in the prompt too and read it from the text (:class:`~core.llm.backend.BackendGenerate`),
  so the same call works on either kind of server;
- **the prompt cache**: llama.cpp is asked to keep it (``cache_prompt``); the tokens the server took from it
  (``usage.prompt_tokens_details.cached_tokens``, llama.cpp's ``timings.cache_n``) are logged per call and
  summed in :attr:`~core.llm.served.ServedBackend.counts`;
- **the API key** from ``$AGENTOS_LLM_API_KEY``, else ``$OPENAI_API_KEY``; a local server needs none.

Messages arrive as Ollama chat dicts (the engine's shape) and are sent as the API's: an assistant's tool
calls with ids and their arguments as JSON text, each tool result answering its call by id.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections import deque
from typing import Any

import openai

from core.durable import load_json
from core.errors import PromptTooLongError, ToolArgumentError
from core.llm.backend import ChatReply, TextSink, ToolCall
from core.llm.model_window import RatioStore, prompt_chars
from core.llm.backend import DEFAULT_OPENAI_HOST, base_url
from core.llm.openai_server import ServerInfo, describe, openai_errors, status_error
from core.llm.served import DEFAULT_REPLY_TOKENS, ReplyParts, ServedBackend, WindowSource, tool_names

log = logging.getLogger(__name__)

KEY_VARIABLES = ("AGENTOS_LLM_API_KEY", "OPENAI_API_KEY")
NO_KEY = "not-needed"
"""Sent as the key to a server that wants none (the client insists on one)."""
PING_TIMEOUT_S = 2.0
_TOLD = re.compile(r"\((\d+) tokens\) exceeds|(?:has|requested) (\d+) (?:input )?tokens")


def api_key() -> str:
    """``$AGENTOS_LLM_API_KEY``, else ``$OPENAI_API_KEY``, else a placeholder (local servers check none)."""
    return next((os.environ[name] for name in KEY_VARIABLES if os.environ.get(name)), NO_KEY)


class OpenAIBackend(ServedBackend):
    """Chat with tool calling against an OpenAI-compatible server."""

    name = "openai"

    def __init__(self, model: str, host: str = DEFAULT_OPENAI_HOST, timeout_s: float = 120.0, *,
                 num_ctx: int = 16384, ratios: RatioStore | None = None,
                 max_reply_tokens: int | None = DEFAULT_REPLY_TOKENS) -> None:
        super().__init__(model, base_url(host), timeout_s, num_ctx=num_ctx, ratios=ratios,
                         max_reply_tokens=max_reply_tokens)
        self.client = openai.OpenAI(base_url=self.host, api_key=api_key(), timeout=timeout_s, max_retries=0)
        self.server: ServerInfo | None = None
        self.constrained = True
        """Whether ``response_format`` is sent for ``chat(..., format=...)``; False once the server refused
        it."""

    def ask_window(self) -> WindowSource:
        """The smaller of the server's window for the model and ``llm.num_ctx``."""
        server = self.info()
        if server.window is None:
            return WindowSource(self.num_ctx,
                                f"llm.num_ctx: {server.label} at {self.host} does not say its window; set "
                                "llm.num_ctx to it")
        if server.window <= self.num_ctx:
            return WindowSource(server.window, server.source)
        return WindowSource(self.num_ctx, f"llm.num_ctx; the server runs {server.window} ({server.source})")

    def info(self) -> ServerInfo:
        """What the server is and says (asked once)."""
        if self.server is None:
            self.server = describe(self.client, self.host, self.model)
            log.info("%s at %s serves %s", self.server.label, self.host,
                     ", ".join(self.server.models) or "(no list)")
        return self.server

    def ping(self) -> bool:
        """True if an OpenAI-compatible server answers ``/models`` at the host within a couple of seconds."""
        probe = self.client.with_options(timeout=PING_TIMEOUT_S)
        try:
            probe.get("/models", cast_to=object)
        except openai.APIError as exc:
            log.info("no OpenAI-compatible server at %s: %s", self.host, exc)
            return False
        return True

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
             on_text: TextSink | None = None, *, format: dict[str, Any] | str | None = None,
             max_tokens: int | None = None) -> ChatReply:
        """One streamed chat call; see :meth:`core.llm.backend.Backend.chat`.

        ``format`` asks for a reply of a shape: a JSON schema, or ``"json"`` for any JSON object.
        ``max_tokens`` stops the reply there (without it :attr:`max_reply_tokens`, as llama-server by default
        lets a model write until the window is full).

        Raises:
            PromptTooLongError: the prompt's estimate is over the window (nothing is sent), or the server said
                so.
        """
        log.info("LLM call: openai %s at %s, %d messages, %d tools", self.model, self.host, len(messages),
                 len(tools))
        self.refuse_overflow(messages, tools)
        request: dict[str, Any] = {"model": self.model, "messages": openai_messages(messages), "stream": True,
                                   "stream_options": {"include_usage": True}}
        if tools:
            request["tools"] = tools
        if self.info().flavour == "llamacpp":
            request["extra_body"] = {"cache_prompt": True}
        if format is not None and self.constrained:
            request["response_format"] = response_format(format)
        if (limit := self.reply_limit(max_tokens)) is not None:
            request["max_tokens"] = limit
        try:
            reply = self._send(request, on_text)
        except PromptTooLongError as exc:  # the estimate was low: the next prompts are sized smaller
            self.meter.refused(prompt_chars(messages, tools), told_tokens(str(exc)))
            raise
        self.meter.observe(prompt_chars(messages, tools), reply.usage.get("prompt_tokens"),
                           cuts=not self.info().refuses_overflow)
        answer = reply.finish(tool_names(tools))
        self.observe(answer, messages, tools)
        return answer

    def _send(self, request: dict[str, Any], on_text: TextSink | None) -> ReplyParts:
        """Send the request; a server that refuses ``response_format`` is asked again without it."""
        with openai_errors(self.host, self.model, self.timeout_s):
            try:
                return self._stream(request, on_text)
            except openai.APIStatusError as exc:
                if "response_format" not in request or not refused_format(exc, self.host, self.model):
                    raise
                log.warning("%s at %s refused response_format (%s): the reply's shape is asked in the prompt "
                            "from now on", self.info().label, self.host, exc.message)
                self.constrained = False
                del request["response_format"]
                return self._stream(request, on_text)

    def _stream(self, request: dict[str, Any], on_text: TextSink | None) -> ReplyParts:
        """Send ``request`` and read its stream (the ``openai`` client's errors are the caller's to
        convert)."""
        reply, calls = ReplyParts(), StreamedCalls()
        with self.client.chat.completions.create(**request) as stream:
            for chunk in stream:
                piece = add_chunk(reply, calls, chunk)
                if piece and on_text is not None:
                    on_text(piece)
        if on_text is not None and (rest := reply.thinking.flush()):
            on_text(rest)
        reply.calls.extend(calls.finish())
        return reply


def told_tokens(message: str) -> int | None:
    """The prompt's size in a server's refusal: llama.cpp's "request (N tokens) exceeds the available context
    size", vLLM's "your request has N input tokens" / "you requested N tokens"."""
    match = _TOLD.search(message)
    return int(match.group(1) or match.group(2)) if match else None


def refused_format(exc: openai.APIStatusError, host: str, model: str) -> bool:
    """Whether an error reply to a request with ``response_format`` is the server refusing that field (a 400
    or 422 that is not about the prompt's length)."""
    return (exc.status_code in (400, 422)
            and not isinstance(status_error(exc, host, model), PromptTooLongError))


def response_format(format: dict[str, Any] | str) -> dict[str, Any]:
    """The API's ``response_format`` for a JSON schema (or ``"json"``: any JSON object)."""
    if format == "json":
        return {"type": "json_object"}
    if not isinstance(format, dict):
        raise ValueError(f"format must be a JSON schema or 'json', not {format!r}")
    return {"type": "json_schema",
            "json_schema": {"name": str(format.get("title") or "reply"), "schema": format,
                                                   "strict": True}}


def add_chunk(reply: ReplyParts, calls: "StreamedCalls", chunk: Any) -> str:
    """Take one chunk of the stream; return its new text to show (thinking left out)."""
    usage = getattr(chunk, "usage", None)
    if usage is not None:
        reply.usage.update(usage_counts(usage, (chunk.model_extra or {}).get("timings")))
    shown = ""
    for choice in chunk.choices or ():
        delta = choice.delta
        for part in delta.tool_calls or ():
            calls.add(part)
        shown += reply.text(delta.content or "")
        if choice.finish_reason == "length":
            reply.cut = True
            log.warning("the model's reply was cut: it reached the window or the server's token limit")
    return shown


def usage_counts(usage: Any, timings: dict[str, Any] | None = None) -> dict[str, int]:
    """``prompt_tokens``, ``cached_tokens``, ``evaluated_tokens``, ``completion_tokens`` from the API's
    ``usage`` (and llama.cpp's ``timings``: ``cache_n`` from the cache, ``prompt_n`` evaluated)."""
    counts: dict[str, int] = {}
    if usage.prompt_tokens is not None:
        counts["prompt_tokens"] = usage.prompt_tokens
    if usage.completion_tokens is not None:
        counts["completion_tokens"] = usage.completion_tokens
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
        cached = timings["cache_n"]
    if isinstance(cached, int):
        counts["cached_tokens"] = cached
    if isinstance(timings, dict) and isinstance(timings.get("prompt_n"), int):
        counts["evaluated_tokens"] = timings["prompt_n"]
    elif "prompt_tokens" in counts:
        counts["evaluated_tokens"] = counts["prompt_tokens"] - counts.get("cached_tokens", 0)
    return counts


class StreamedCalls:
    """Tool calls put together from their streamed pieces (a name, then the arguments' JSON in fragments)."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.arguments: dict[int, list[str]] = {}

    def add(self, part: Any) -> None:
        index = part.index if part.index is not None else len(self.names)
        function = part.function
        if function is None:
            return
        if function.name:
            self.names[index] = self.names.get(index, "") + function.name
        self.arguments.setdefault(index, []).append(function.arguments or "")

    def finish(self) -> list[ToolCall]:
        """The calls, their arguments parsed.

        Raises:
            ToolArgumentError: a call's arguments are not a JSON object.
        """
        calls = []
        for index in sorted(self.names):
            text = "".join(self.arguments.get(index, [])).strip()
            try:
                arguments = load_json(text) if text else {}
            except json.JSONDecodeError as exc:
                raise ToolArgumentError(f"the model's call of {self.names[index]} has arguments that are not "
                                        f"JSON ({exc.msg}): {text[:200]!r}") from exc
            if not isinstance(arguments, dict):
                raise ToolArgumentError(f"the model's call of {self.names[index]} has arguments that are not "
                                        f"a JSON object: {text[:200]!r}")
            calls.append(ToolCall(name=self.names[index], arguments=arguments))
        return calls


def openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The engine's messages (Ollama chat dicts) as the chat-completions API takes them.

    An assistant's tool calls get ids made from the call itself (so a prompt renders the same on every call,
    for the server's prompt cache) and their arguments as JSON text; each tool result that follows answers
    the next call by its id. A tool result with no call before it (never sent by the engine) goes as a user
    message, which every server accepts.
    """
    out: list[dict[str, Any]] = []
    waiting: deque[str] = deque()
    for message in messages:
        role = message.get("role")
        content = str(message.get("content") or "")
        if role == "assistant" and message.get("tool_calls"):
            calls = [_call(part, n) for n, part in enumerate(message["tool_calls"])]
            waiting = deque(call["id"] for call in calls)
            out.append({"role": "assistant", "content": content, "tool_calls": calls})
        elif role == "tool":
            if waiting:
                out.append({"role": "tool", "tool_call_id": waiting.popleft(), "content": content})
            else:
                out.append({"role": "user",
                            "content": f"[result of {message.get('tool_name') or 'a tool'}]\n{content}"})
        else:
            waiting.clear()
            out.append({"role": role, "content": content})
    return out


def _call(part: dict[str, Any], position: int) -> dict[str, Any]:
    function = part.get("function", part)
    name = str(function.get("name") or "")
    arguments = function.get("arguments") or {}
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    # Nine letters and digits: the id some templates (mistral's) demand.
    digest = hashlib.sha256(f"{position}\0{name}\0{text}".encode()).hexdigest()[:9]
    return {"id": part.get("id") or digest, "type": "function", "function": {"name": name, "arguments": text}}
