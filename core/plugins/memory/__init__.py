"""Conversation-memory providers and the factory that picks one by config.

    provider = open_provider(None, paths.db_file, summarizer=DeterministicSummarizer())
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.config import ProviderConfig
from core.errors import ConfigError

PROVIDER_NAMES = ("lcm", "simple")


def open_provider(name: str | None, db_path: Path | str | Any, summarizer=None, config: ProviderConfig | None = None):
    """Open the provider ``name`` (``config.name`` when None; LCM by default) over memory.db at ``db_path``
    (or over an open database: ``core.memory.storage.backend.open_database``).

    Raises:
        ConfigError: the name is not a known provider.
    """
    config = config or ProviderConfig()
    name = name or config.name
    if name == "lcm":
        from core.plugins.memory.lcm import LCMProvider

        return LCMProvider(db_path, summarizer=summarizer, config=config)
    if name == "simple":
        from core.plugins.memory.simple import SimpleProvider

        return SimpleProvider(db_path, config=config)
    raise ConfigError(f"unknown memory provider {name!r}; set provider.name to one of: {', '.join(PROVIDER_NAMES)}")
