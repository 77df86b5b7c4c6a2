"""What an OpenAI-compatible server is and what it says about its model: which server (llama.cpp's
``llama-server``, vLLM, LM Studio, Ollama's ``/v1``, another), the models it serves, the window.

The chat API has no field for the context window, so each server is asked its own way:

- llama.cpp: ``GET /props`` → ``default_generation_settings.n_ctx`` (the tokens of one slot: ``--ctx-size``
  divided by ``--parallel``);
- vLLM (and others that copy it): ``GET /v1/models`` → the model's ``max_model_len``;
- LM Studio: ``GET /api/v0/models/<model>`` → ``loaded_context_length`` (the window it was loaded with),
  else ``max_context_length``;
- a server that says nothing (Ollama's ``/v1``, LocalAI, text-generation-webui): ``llm.num_ctx``.

The window used is the smaller of the server's and ``llm.num_ctx``; :class:`ServerInfo` says which. The
``openai`` client's errors become :mod:`core.errors` errors in :func:`openai_errors`.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator
from urllib.parse import urlsplit, urlunsplit

import openai

from core.errors import (BackendError, BackendUnavailableError, ModelNotFoundError, PromptTooLongError)

log = logging.getLogger(__name__)

FLAVOURS = {"llamacpp": "llama.cpp", "vllm": "vLLM", "lmstudio": "LM Studio", "ollama": "Ollama",
            "": "a server"}
_OVERFLOW = ("exceed_context_size", "context size", "maximum context length", "context length",
             "too many tokens",
             "context window")


@dataclass(frozen=True)
class ServerInfo:
    """What the server said about itself and the model."""

    flavour: str
    """``llamacpp``, ``vllm``, ``lmstudio``, ``ollama`` or ``""`` (another)."""
    window: int | None
    """The model's window as the server runs it, or None when it does not say."""
    source: str
    """Where :attr:`window` came from (``llama.cpp /props n_ctx``)."""
    models: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The server's name for the user (``llama.cpp``)."""
        return FLAVOURS[self.flavour]

    @property
    def refuses_overflow(self) -> bool:
        """True for a server that refuses a prompt over its window (llama.cpp, vLLM) rather than cut it (LM
        Studio, Ollama's ``/v1``): a count below the estimate then says the estimate was high, not a cut."""
        return self.flavour in ("llamacpp", "vllm")


def api_root(host: str) -> str:
    """The server's root URL: ``host`` without its ``/v1`` (``/props`` and LM Studio's API live there)."""
    parts = urlsplit(host)
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[:-3]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def describe(client: openai.OpenAI, host: str, model: str) -> ServerInfo:
    """Ask the server what it is, whether it serves ``model`` and with which window.

    Raises:
        BackendUnavailableError: nothing answers at ``host``.
        ModelNotFoundError: the server lists its models and ``model`` is not among them.
        BackendError: another failure.
    """
    entries = _models(client, host, model)
    ids = tuple(str(entry.get("id")) for entry in entries if entry.get("id"))
    entry = _served(entries, model)
    if ids and entry is None:
        served = ", ".join(repr(i) for i in ids[:8]) + (", ..." if len(ids) > 8 else "")
        raise ModelNotFoundError(f"the server at {host} does not serve {model!r}; it serves {served}: "
                                 "pass --model with one of them (or set llm.model)")
    entry = entry or {}
    root = api_root(host)
    props = _get(client, f"{root}/props", host, model)
    n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx") if props else None
    if isinstance(n_ctx, int) and n_ctx > 0:
        return ServerInfo("llamacpp", n_ctx, "llama.cpp /props n_ctx", ids)
    if isinstance(entry.get("max_model_len"), int):
        return ServerInfo("vllm", entry["max_model_len"], "vLLM /v1/models max_model_len", ids)
    studio = _get(client, f"{root}/api/v0/models/{entry.get('id') or model}", host, model)
    if studio:
        for key in ("loaded_context_length", "max_context_length"):
            if isinstance(studio.get(key), int) and studio[key] > 0:
                return ServerInfo("lmstudio", studio[key], f"LM Studio /api/v0/models {key}", ids)
    flavour = "ollama" if entry.get("owned_by") in ("library", "ollama") else ""
    for key in ("context_length", "context_window", "max_context_length"):
        if isinstance(entry.get(key), int) and entry[key] > 0:
            return ServerInfo(flavour, entry[key], f"/v1/models {key}", ids)
    return ServerInfo(flavour, None, "", ids)


def _models(client: openai.OpenAI, host: str, model: str) -> list[dict[str, Any]]:
    """The entries of ``/v1/models`` (none when the server has no such endpoint)."""
    with openai_errors(host, model, client.timeout):
        try:
            listing = client.get("/models", cast_to=object)
        except openai.NotFoundError:
            return []
    data = listing.get("data") if isinstance(listing, dict) else None
    return [entry for entry in data or [] if isinstance(entry, dict)]


def _served(entries: list[dict[str, Any]], model: str) -> dict[str, Any] | None:
    """The entry of ``model``: its id, or Ollama's ``name:latest``, or a llama.cpp file path's name."""
    for entry in entries:
        name = str(entry.get("id") or "")
        stem = name.rsplit("/", 1)[-1]
        if model in (name, stem, stem.removesuffix(".gguf")) or f"{model}:latest" == name:
            return entry
    return None


def _get(client: openai.OpenAI, url: str, host: str, model: str) -> dict[str, Any] | None:
    """The JSON object at ``url``, or None when the server has no such endpoint (or answers it otherwise)."""
    with openai_errors(host, model, client.timeout):
        try:
            value = client.get(url, cast_to=object)
        except (openai.NotFoundError, openai.BadRequestError, openai.UnprocessableEntityError,
                openai.PermissionDeniedError, openai.APIResponseValidationError) as exc:
            log.debug("%s: %s", url, exc)
            return None
        except openai.APIStatusError as exc:
            if exc.status_code in (405, 501):
                return None
            raise
    return value if isinstance(value, dict) else None


def server_message(exc: openai.APIError) -> str:
    """The server's own words in an error reply."""
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("detail") or body.get("error")
        if message:
            return str(message)
    return str(body) if body else str(exc.message)


@contextmanager
def openai_errors(host: str, model: str, timeout_s: Any) -> Iterator[None]:
    """Turn the ``openai`` client's errors inside the block into :mod:`core.errors` errors."""
    try:
        yield
    except openai.APITimeoutError as exc:
        raise BackendError(f"the model server at {host} did not answer within {_seconds(timeout_s)}: raise "
                           "llm.timeout_s or use a smaller model") from exc
    except openai.APIConnectionError as exc:
        raise BackendUnavailableError(
            f"no OpenAI-compatible server answers at {host}: start it (llama-server, LM Studio's server, "
            "vllm serve, ...), give its address with --host or llm.host (such as http://127.0.0.1:8080/v1), "
            "or run with --offline") from exc
    except openai.APIStatusError as exc:
        raise status_error(exc, host, model) from exc
    except openai.APIError as exc:  # an error event in the stream, or a reply that is not the API's shape
        raise BackendError(f"the model server at {host} failed: {server_message(exc)}") from exc


def status_error(exc: openai.APIStatusError, host: str, model: str) -> BackendError:
    """The error for an HTTP error reply of the server."""
    message = server_message(exc)
    lowered = message.lower()
    status = exc.status_code
    if status in (400, 413) and any(word in lowered for word in _OVERFLOW):
        return PromptTooLongError(f"the model server at {host} refused a prompt too long for the window of "
                                  f"{model!r}: {message}")
    if status == 404 and "model" in lowered:
        return ModelNotFoundError(f"the server at {host} does not serve {model!r} ({message}): pass --model "
                                  "with a model it serves (or set llm.model)")
    if status == 404:
        return BackendError(f"the server at {host} has no OpenAI chat API there (HTTP 404: {message}): "
                            "give the address of its /v1, such as http://127.0.0.1:8080/v1")
    if status in (401, 403):
        return BackendError(f"the server at {host} refused the request (HTTP {status}: {message}): set its "
                            "API key in AGENTOS_LLM_API_KEY (or OPENAI_API_KEY)")
    if status == 503:
        return BackendError(f"the server at {host} is not ready (HTTP 503: {message}): it may still be "
                            "loading the model; try again in a moment")
    return BackendError(f"the model server at {host} failed (HTTP {status}): {message}")


def _seconds(timeout: Any) -> str:
    value = getattr(timeout, "read", timeout)
    return f"{value:g}s" if isinstance(value, (int, float)) else "the timeout"
