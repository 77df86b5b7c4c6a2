"""Fixtures of the cold-tier tests: agent finn with the real model, and a loopback Ollama serving
embeddings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_home_config
from tests.ollama_server import ScriptedOllama

EMBED_MODELS = ("fake-embed", "nomic-embed-text")


@pytest.fixture(scope="session")
def ollama_url():
    """URL of an Ollama-compatible server on 127.0.0.1 serving ``fake-embed``."""
    with ScriptedOllama(models=EMBED_MODELS) as server:
        yield server.host


@pytest.fixture
def finn(agents_home: Path, minilm):
    """Agent finn's memory with the real embedding model, an offline summarizer and no automatic
    compaction."""
    from core.memory_manager import MemoryManager

    write_config(agents_home, {"llm": {"backend": "offline"}, "memory": {"auto_compact": False}})
    with MemoryManager("finn") as manager:
        yield manager


@pytest.fixture
def ollama_home(agents_home: Path, ollama_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An agents home whose config embeds with the loopback Ollama and summarises offline."""
    monkeypatch.setenv("OLLAMA_HOST", ollama_url)
    write_config(agents_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"}})
    return agents_home


def write_config(home: Path, data: dict) -> None:
    """Write ``<home>/config.yaml`` (keeping the test's embedder unless ``data`` names one)."""
    write_home_config(home, data)
