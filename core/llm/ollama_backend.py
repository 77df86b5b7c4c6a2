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
from core.llm.backend import DEFAULT_HOST, ChatReply, TextSink, ToolCall
from core.llm.model_window import RatioStore, choose_num_ctx, model_limits
from core.llm.served import DEFAULT_REPLY_TOKENS, ReplyParts, ServedBackend, WindowSource, tool_names

log = logging.getLogger(__name__)

PING_TIMEOUT_S = 2.0


class OllamaBackend(ServedBackend):
    """Chat with tool calling against an Ollama server."""

    name = "ollama"
    structured = True
    """Takes a reply shape: ``chat(..., format=schema)`` (Ollama's ``format``)."""

    def __init__(self, model: str, host: str = DEFAULT_HOST, timeout_s: float = 120.0, *,
                 num_ctx: int = 16384, keep_alive: str = "5m", ratios: RatioStore | None = None,
                 max_reply_tokens: int | None = DEFAULT_REPLY_TOKENS) -> None:
        super().__init__(model, host, timeout_s, num_ctx=num_ctx, ratios=ratios,
                         max_reply_tokens=max_reply_tokens)
        self.keep_alive = keep_alive
        self.client = ollama.Client(host=host, timeout=timeout_s)

    def ask_window(self) -> WindowSource:
        """The smallest of the model's trained length and its Modelfile's ``num_ctx`` (``/api/show``) and
        ``llm.num_ctx``: the window sent with every call."""
        with ollama_errors(self.host, self.model, self.timeout_s):
            show = self.client.show(self.model)
        length, modelfile = model_limits(show)
        num_ctx = choose_num_ctx(self.num_ctx, length, modelfile)
        source = next(name for value,
                      name in ((self.num_ctx, "llm.num_ctx"), (length, "the model's context length"),
                                               (modelfile, "the Modelfile's num_ctx")) if value == num_ctx)
        return WindowSource(num_ctx,
                            f"{source}; Ollama /api/show: model {length}, Modelfile num_ctx {modelfile}")

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
             on_text: TextSink | None = None, *, format: dict[str, Any] | str | None = None,
             max_tokens: int | None = None) -> ChatReply:
        """One streamed chat call; see :meth:`core.llm.backend.Backend.chat`.

        ``format`` asks for a reply of a shape: a JSON schema, or ``"json"`` for any JSON. ``max_tokens``
        stops the reply there (``num_predict``; without it :attr:`max_reply_tokens`, as Ollama by default lets
        a model write until the window is full).

        Raises:
            PromptTooLongError: the prompt's estimate is over the window (nothing is sent).
        """
        log.info("LLM call: ollama %s at %s, %d messages, %d tools", self.model, self.host, len(messages),
                 len(tools))
        self.refuse_overflow(messages, tools)
        extra = self.options()
        if format is not None:
            extra["format"] = format
        if (limit := self.reply_limit(max_tokens)) is not None:
            extra["options"] = {**extra["options"], "num_predict": limit}
        reply = ReplyParts()
        with ollama_errors(self.host, self.model, self.timeout_s):
            try:
                for chunk in self.client.chat(model=self.model, messages=messages, tools=tools or None,
                                              stream=True, **extra):
                    piece = add_chunk(reply, chunk)
                    if piece and on_text is not None:
                        on_text(piece)
                if on_text is not None and (rest := reply.thinking.flush()):
                    on_text(rest)
            except pydantic.ValidationError as exc:
                raise ToolArgumentError(
                    "the model's reply could not be read (tool call arguments must be a JSON object): "
                    f"{_first_error(exc)}"
                ) from exc
        self.meter.observe_prompt(messages, tools, reply.usage.get("evaluated_tokens"))
        answer = reply.finish(tool_names(tools))
        self.observe(answer, messages, tools)
        return answer


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
            f"Ollama at {host} did not answer within {timeout_s:g}s: raise llm.timeout_s or use a smaller "
            "model"
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


def add_chunk(reply: ReplyParts, chunk: ollama.ChatResponse) -> str:
    """Take one chunk of Ollama's stream into ``reply``; return its new text to show (thinking left out).

    Ollama counts in ``prompt_eval_count`` only the prompt's tokens after the prefix its cache held.
    """
    message = chunk.message
    reply.calls.extend(ToolCall(name=call.function.name, arguments=dict(call.function.arguments or {}))
                       for call in (message.tool_calls or ()))
    if chunk.done:
        reply.cut = chunk.done_reason == "length"
        if chunk.prompt_eval_count is not None:
            reply.usage["evaluated_tokens"] = chunk.prompt_eval_count
        if chunk.eval_count is not None:
            reply.usage["completion_tokens"] = chunk.eval_count
    return reply.text(message.content or "")
