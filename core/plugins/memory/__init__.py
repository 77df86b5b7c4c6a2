"""Conversation-memory providers and the registry that picks one by name.

    provider = open_provider(None, paths.db_file, summarizer=DeterministicSummarizer())

To add a provider: write a class that meets the contract of :mod:`core.memory.provider`, constructed as
``YourProvider(database, summarizer=None, config=None)``, and add one line to :data:`PROVIDERS`. The
config's ``provider.name`` then selects it, and the conformance suite (``tests/providers/``) runs
every rule against it: both read this registry.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from core.config import ProviderConfig
from core.errors import ConfigError

__all__ = ["PROVIDERS", "open_provider", "provider_class"]

PROVIDERS: dict[str, str] = {
    "lcm": "core.plugins.memory.lcm:LCMProvider",
    "simple": "core.plugins.memory.simple:SimpleProvider",
}
"""Every provider by the name ``provider.name`` gives it, as ``module:class`` (imported when opened)."""


def provider_class(name: str) -> type:
    """The class registered as ``name``.

    Raises:
        ConfigError: the name is not in :data:`PROVIDERS`.
    """
    if name not in PROVIDERS:
        raise ConfigError(
            f"unknown memory provider {name!r}; set provider.name to one of: {', '.join(PROVIDERS)}"
        )
    module, _, cls = PROVIDERS[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def open_provider(name: str | None, db_path: Path | str | Any, summarizer=None,
                  config: ProviderConfig | None = None):
    """Open the provider ``name`` (``config.name`` when None; LCM by default) over memory.db at ``db_path``
    (or over an open database: ``core.memory.storage.backend.open_database``).

    ``summarizer`` (see :class:`core.memory.compaction.Summarizer`) writes the summaries of a provider that
    keeps them; one that keeps none ignores it.

    Raises:
        ConfigError: the name is not a known provider.
    """
    config = config or ProviderConfig()
    return provider_class(name or config.name)(db_path, summarizer=summarizer, config=config)
