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

BACKENDS = ("auto", "ollama", "offline")


@dataclass(frozen=True)
class Choice:
    """The backend chosen and the line telling the user which one it is."""

    backend: Backend
    notice: str
    """One line for the user; starts with ``WARNING`` when the offline backend is a fallback or forced."""


def choose_backend(
    config: LLMConfig, *, offline: bool = False, model: str | None = None, host: str | None = None
) -> Choice:
    """Return the backend: ``--offline`` or ``llm.backend: offline`` → offline; ``ollama`` → Ollama
    (no fallback); ``auto`` → Ollama if it answers a quick ping, else offline with a warning.

    Raises:
        ConfigError: ``llm.backend`` is not one of auto, ollama, offline.
    """
    kind = "offline" if offline else config.backend
    if kind not in BACKENDS:
        raise ConfigError(f"llm.backend must be one of {', '.join(BACKENDS)}, got {shown(kind)}")
    if kind == "offline":
        return Choice(_offline(config), NOTICE)
    from core.llm.ollama_backend import OllamaBackend  # the ollama client only when Ollama may be used

    ollama = OllamaBackend(model or config.model, resolve_host(host, config.host), config.timeout_s,
                           num_ctx=config.num_ctx, keep_alive=config.keep_alive, ratios=RatioStore())
    if kind == "ollama" or ollama.ping():
        return Choice(ollama, f"backend: ollama, model {ollama.model} at {ollama.host}")
    log.info("no Ollama at %s; using the offline backend", ollama.host)
    return Choice(_offline(config), f"No Ollama answers at {ollama.host}. {NOTICE}")


def _offline(config: LLMConfig) -> OfflineBackend:
    """The offline backend, with the configured window (it has no model to ask)."""
    backend = OfflineBackend()
    backend.window = ContextWindow(config.num_ctx or LLMConfig.num_ctx)
    return backend
