"""The Ollama backend, through the official ``ollama`` client.

The client is always built explicitly with ``ollama.Client(host=..., timeout=...)``:
the module-level client reads ``OLLAMA_HOST`` once at import and would ignore
a host chosen later. Vendor errors become :mod:`core.errors` errors here.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Any, Iterator

import httpx
import ollama
import pydantic

from core.errors import BackendError, BackendUnavailableError, ModelNotFoundError, ToolArgumentError
from core.llm import text_tool_calls
from core.llm.backend import DEFAULT_HOST, ChatReply, TextSink, ToolCall
from core.llm.structured import ThinkFilter, strip_think
from core.llm.model_window import RatioStore, WindowMeter, choose_num_ctx, initial_ratio, model_limits
from core.llm.window import ContextWindow

log = logging.getLogger(__name__)

PING_TIMEOUT_S = 2.0


class OllamaBackend:
    """Chat with tool calling against an Ollama server."""

    name = "ollama"
    structured = True
    """Takes a reply shape: ``chat(..., format=schema)`` (Ollama's ``format``)."""

    def __init__(self, model: str, host: str = DEFAULT_HOST, timeout_s: float = 120.0, *,
                 num_ctx: int = 16384, keep_alive: str = "5m", ratios: RatioStore | None = None) -> None:
        self.model = model
        self.host = host
        self.timeout_s = timeout_s
        self.num_ctx = num_ctx
        """The configured window (``llm.num_ctx``); the model's own limits may lower it."""
        self.keep_alive = keep_alive
        self.ratios = ratios
        self.client = ollama.Client(host=host, timeout=timeout_s)
        self._meter: WindowMeter | None = None

    @property
    def window(self) -> ContextWindow:
        """The model's window, asked from ``/api/show`` on first use.

        Raises:
            BackendUnavailableError, ModelNotFoundError, BackendError: the server cannot tell.
        """
        return self.meter.window

    @property
    def meter(self) -> WindowMeter:
        """The window and the comparison of estimates with the server's counts."""
        if self._meter is None:
            with ollama_errors(self.host, self.model, self.timeout_s):
                show = self.client.show(self.model)
            length, modelfile = model_limits(show)
            num_ctx = choose_num_ctx(self.num_ctx, length, modelfile)
            log.info("window of %s: %d tokens (model %s, Modelfile num_ctx %s, llm.num_ctx %d)",
                     self.model, num_ctx, length, modelfile, self.num_ctx)
            window = ContextWindow(num_ctx, initial_ratio(self.ratios, self.model))
            self._meter = WindowMeter(window, self.model, self.ratios)
        return self._meter

    def describe_window(self) -> str:
        """The window, the last prompt's size and the estimate's error, for ``/status``."""
        if self._meter is None:
            return f"window: not asked yet (llm.num_ctx {self.num_ctx})"
        return self._meter.describe()

    def options(self) -> dict[str, Any]:
        """What every chat call sends besides the messages: the window and how long the model stays loaded."""
        return {"options": {"num_ctx": self.window.num_ctx}, "keep_alive": self.keep_alive}

    def ping(self) -> bool:
        """True if a server answers at the host within a couple of seconds."""
        probe = ollama.Client(host=self.host, timeout=PING_TIMEOUT_S)
        try:
            probe.list()
        except (ConnectionError, httpx.HTTPError, ollama.ResponseError, pydantic.ValidationError) as exc:
            log.info("no Ollama at %s: %s", self.host, exc)
            return False
        finally:
            probe.close()
        return True

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
             on_text: TextSink | None = None, *, format: dict[str, Any] | str | None = None) -> ChatReply:
        """One streamed chat call; see :meth:`core.llm.backend.Backend.chat`.

        ``format`` asks for a reply of a shape: a JSON schema, or ``"json"`` for any JSON.
        """
        log.info("LLM call: ollama %s at %s, %d messages, %d tools", self.model, self.host, len(messages), len(tools))
        extra = self.options()
        if format is not None:
            extra["format"] = format
        reply = StreamedReply()
        with ollama_errors(self.host, self.model, self.timeout_s):
            try:
                for chunk in self.client.chat(model=self.model, messages=messages, tools=tools or None,
                                              stream=True, **extra):
                    piece = reply.add(chunk)
                    if piece and on_text is not None:
                        on_text(piece)
                if on_text is not None and (rest := reply.thinking.flush()):
                    on_text(rest)
            except pydantic.ValidationError as exc:
                raise ToolArgumentError(
                    f"the model's reply could not be read (tool call arguments must be a JSON object): "
                    f"{_first_error(exc)}"
                ) from exc
        self.meter.observe_prompt(messages, tools, reply.prompt_eval_count)
        return reply.finish(tool_names(tools))


@contextmanager
def ollama_errors(host: str, model: str, timeout_s: float,
                  fix: str = "set OLLAMA_HOST, or run with --offline") -> Iterator[None]:
    """Turn the ``ollama`` client's errors inside the block into :mod:`core.errors` errors.

    ``fix`` ends the message of an unreachable server: what else the user can do.
    """
    try:
        yield
    except ConnectionError as exc:
        raise BackendUnavailableError(
            f"no Ollama server answers at {host}: start it with `ollama serve`, {fix}"
        ) from exc
    except httpx.TimeoutException as exc:
        raise BackendError(
            f"Ollama at {host} did not answer within {timeout_s:g}s: raise llm.timeout_s or use a smaller model"
        ) from exc
    except httpx.HTTPError as exc:
        raise BackendUnavailableError(f"cannot talk to Ollama at {host}: {exc}") from exc
    except ollama.ResponseError as exc:
        raise _response_error(exc, model) from exc


def _response_error(exc: ollama.ResponseError, model: str) -> BackendError:
    message = str(exc.error)
    if exc.status_code == 404 or "not found" in message.lower():
        return ModelNotFoundError(f"Ollama has no model {model!r}: run `ollama pull {model}` or pass --model")
    if "tool call" in message.lower():
        return ToolArgumentError(f"the model produced a malformed tool call: {message}")
    return BackendError(f"Ollama failed (HTTP {exc.status_code}): {message}")


def _first_error(exc: pydantic.ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc)
    first = errors[0]
    return f"{'.'.join(map(str, first.get('loc', ())))}: {first.get('msg', '')}"


class StreamedReply:
    """A reply put together from the chunks of a streamed chat call."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.calls: list[ToolCall] = []
        self.prompt_eval_count: int | None = None
        self.eval_count: int | None = None
        self.thinking = ThinkFilter()
        """Keeps ``<think>`` blocks out of the text shown as it streams."""

    def add(self, chunk: ollama.ChatResponse) -> str:
        """Take one chunk; return its new text to show (thinking left out)."""
        message = chunk.message
        self.calls.extend(ToolCall(name=call.function.name, arguments=dict(call.function.arguments or {}))
                          for call in (message.tool_calls or ()))
        if chunk.done:
            self.prompt_eval_count = chunk.prompt_eval_count
            self.eval_count = chunk.eval_count
        piece = message.content or ""
        if piece:
            self.parts.append(piece)
        return self.thinking.feed(piece) if piece else ""

    def finish(self, offered: list[str]) -> ChatReply:
        """The whole reply; a tool call the model wrote as text becomes a tool call."""
        text = strip_think("".join(self.parts))
        calls = tuple(self.calls)
        if not calls:
            text, calls = text_tool_calls.parse(text, offered)
            if calls:
                log.info("the model wrote %d tool call(s) as text: %s", len(calls), ", ".join(c.name for c in calls))
        usage = {}
        if self.prompt_eval_count is not None:
            usage["prompt_tokens"] = self.prompt_eval_count
        if self.eval_count is not None:
            usage["completion_tokens"] = self.eval_count
        return ChatReply(text=text, tool_calls=calls, usage=usage)


def tool_names(tools: list[dict[str, Any]]) -> list[str]:
    """The names of the offered tool definitions."""
    return [tool.get("function", {}).get("name", "") for tool in tools]
