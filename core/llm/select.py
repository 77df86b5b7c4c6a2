"""Choose the backend for a run: flags first, then the agent's config, then what answers."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from core.config import LLMConfig
from core.errors import ConfigError, shown
from core.llm.backend import Backend, resolve_host
from core.llm.model_window import RatioStore
from core.llm.window import ContextWindow
from core.llm.offline import NOTICE, OfflineBackend

log = logging.getLogger(__name__)

BACKENDS = ("auto", "ollama", "openai", "offline")


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
    from core.llm.ollama_backend import OllamaBackend  # the ollama client only when Ollama may be used

    ollama = OllamaBackend(model, resolve_host(host, config.host), config.timeout_s,
                           num_ctx=config.num_ctx, keep_alive=config.keep_alive, ratios=RatioStore())
    if kind == "ollama" or ollama.ping():
        return Choice(ollama, f"backend: ollama, model {ollama.model} at {ollama.host}")
    served = _openai(config, model, host)
    if served.ping():
        log.info("no Ollama at %s; an OpenAI-compatible server answers at %s", ollama.host, served.host)
        return Choice(served, f"backend: openai (no Ollama answers at {ollama.host}), model {served.model} "
                              f"at {served.host}")
    log.info("no Ollama at %s nor OpenAI-compatible server at %s; using the offline backend", ollama.host, served.host)
    return Choice(_offline(config), f"No Ollama answers at {ollama.host}, nor an OpenAI-compatible server at "
                                    f"{served.host}. {NOTICE}")


def _openai(config: LLMConfig, model: str, host: str | None):
    """The OpenAI-compatible backend at ``--host``, ``llm.host``, ``$OPENAI_BASE_URL`` or llama-server's address."""
    from core.llm.openai_backend import OpenAIBackend, resolve_openai_host  # the openai client only when used

    try:
        url = resolve_openai_host(host, config.host)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    return OpenAIBackend(model, url, config.timeout_s, num_ctx=config.num_ctx, ratios=RatioStore())


def _offline(config: LLMConfig) -> OfflineBackend:
    """The offline backend, with the configured window (it has no model to ask)."""
    backend = OfflineBackend()
    backend.window = ContextWindow(config.num_ctx or LLMConfig.num_ctx)
    return backend
