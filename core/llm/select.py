"""Choose the backend for a run: flags first, then the agent's config, then what answers."""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from core.config import LLMConfig
from core.errors import ConfigError, shown
from core.llm.backend import Backend, resolve_host, resolve_openai_host
from core.llm.model_window import RatioStore
from core.llm.window import ContextWindow
from core.llm.offline import NOTICE, OfflineBackend

log = logging.getLogger(__name__)

BACKENDS = ("auto", "ollama", "openai", "offline")
OLLAMA_PORT = 11434
"""Ollama's port, for an address that names none (``OLLAMA_HOST=1.2.3.4``)."""
PROBE_TIMEOUT_S = 2.0
"""How long ``auto`` waits for a server's port to accept a connection (the clients' pings wait as long)."""
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@dataclass(frozen=True)
class Choice:
    """The backend chosen and the line telling the user which one it is."""

    backend: Backend
    notice: str
    """One line for the user; starts with ``WARNING`` when the offline backend is a fallback or forced."""


def choose_backend(
    config: LLMConfig, *, offline: bool = False, model: str | None = None, host: str | None = None,
    kind: str | None = None,
) -> Choice:
    """Return the backend: ``--offline`` or ``offline`` → offline; ``ollama`` → Ollama and ``openai`` → the
    OpenAI-compatible server (no fallback); ``auto`` → Ollama if it answers a quick ping, else an
    OpenAI-compatible server at the configured host if one answers, else offline with a warning.

    ``kind`` (``--backend``) overrides ``llm.backend``.

    Raises:
        ConfigError: the backend is not one of auto, ollama, openai, offline, or its host is not a URL.
    """
    kind = "offline" if offline else (kind or config.backend)
    if kind not in BACKENDS:
        raise ConfigError(f"llm.backend must be one of {', '.join(BACKENDS)}, got {shown(kind)}")
    if kind == "offline":
        return Choice(_offline(config), NOTICE)
    model = model or config.model
    if kind == "openai":
        backend = _openai(config, model, host)
        return Choice(backend, f"backend: openai, model {backend.model} at {backend.host}")
    ollama_host = resolve_host(host, config.host)
    # An address with a path (http://host:8080/v1) is an OpenAI-compatible server's base URL: Ollama's has
    # none.
    served_only = kind == "auto" and _has_path(ollama_host)
    # A client library is imported only for a server that may answer: the two take about a second of CPU,
    # which an agent's first automatic compaction would otherwise spend holding the GIL its writers need.
    if kind == "ollama" or (not served_only and _listening(ollama_host, OLLAMA_PORT)):
        from core.llm.ollama_backend import OllamaBackend  # the ollama client only when Ollama may be used

        ollama = OllamaBackend(model, ollama_host, config.timeout_s,
                               num_ctx=config.num_ctx, keep_alive=config.keep_alive, ratios=RatioStore(),
                               max_reply_tokens=config.max_reply_tokens)
        if kind == "ollama" or ollama.ping():
            return Choice(ollama, f"backend: ollama, model {ollama.model} at {ollama.host}")
    served_host = _openai_host(config, host)
    if _listening(served_host, 80):
        served = _openai(config, model, host)
        if served.ping():
            log.info("no Ollama at %s; an OpenAI-compatible server answers at %s", ollama_host, served.host)
            skipped = "" if served_only else f" (no Ollama answers at {ollama_host})"
            return Choice(served, f"backend: openai{skipped}, model {served.model} at {served.host}")
    log.info("no Ollama at %s nor OpenAI-compatible server at %s; using the offline backend", ollama_host,
             served_host)
    if served_only:
        return Choice(_offline(config), f"No OpenAI-compatible server answers at {served_host}. {NOTICE}")
    return Choice(_offline(config), f"No Ollama answers at {ollama_host}, nor an OpenAI-compatible server at "
                                    f"{served_host}. {NOTICE}")


def _has_path(address: str) -> bool:
    """True for an address with a path beyond ``/`` (``http://127.0.0.1:8080/v1``)."""
    return urlsplit(address if "://" in address else f"//{address}").path.strip("/") != ""


def _listening(address: str, default_port: int) -> bool:
    """False when nothing accepts a connection at ``address``'s host and port (refused, unreachable, or silent
    for ``PROBE_TIMEOUT_S``): no client need be imported to ask it. True when something does, when a proxy
    is configured (the clients go through it), or when the address cannot be read here (the client says
    why)."""
    if any(os.environ.get(name) for name in _PROXY_VARIABLES):
        return True
    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        port = parts.port
    except ValueError:
        return True
    if port is None:  # as Ollama reads an address: a scheme's own port, else the default one
        port = {"http": 80, "https": 443}.get(parts.scheme, default_port)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=PROBE_TIMEOUT_S).close()
    except OSError:
        return False
    return True


def _openai_host(config: LLMConfig, host: str | None) -> str:
    """The OpenAI-compatible server's base URL (see :func:`core.llm.backend.resolve_openai_host`)."""
    try:
        return resolve_openai_host(host, config.host)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def _openai(config: LLMConfig, model: str, host: str | None):
    """The OpenAI-compatible backend at ``--host``, ``llm.host``, ``$OPENAI_BASE_URL`` or llama-server's
    address."""
    from core.llm.openai_backend import OpenAIBackend  # the openai client only when used

    return OpenAIBackend(model, _openai_host(config, host), config.timeout_s, num_ctx=config.num_ctx,
                         ratios=RatioStore(), max_reply_tokens=config.max_reply_tokens)


def _offline(config: LLMConfig) -> OfflineBackend:
    """The offline backend, with the configured window (it has no model to ask)."""
    backend = OfflineBackend()
    backend.window = ContextWindow(config.num_ctx or LLMConfig.num_ctx)
    return backend
