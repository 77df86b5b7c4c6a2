"""Fixtures of the secret-leak tests: an agent whose cold store embeds through a loopback Ollama."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.ollama_server import ScriptedOllama


@pytest.fixture
def ollama(monkeypatch: pytest.MonkeyPatch):
    """A scripted Ollama-compatible server serving a chat model and ``fake-embed``; ``OLLAMA_HOST`` points at it."""
    with ScriptedOllama(models=("llama3.1", "fake-embed")) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.host)
        yield server


@pytest.fixture
def home(agents_home: Path, ollama: ScriptedOllama) -> Path:
    """An agents home embedding with the loopback Ollama, summarising LOG.md deterministically."""
    write_config(agents_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"compact_summarizer": "deterministic"}})
    return agents_home


@pytest.fixture
def finn(home: Path, manager):
    """The MemoryManager of agent finn in ``home``."""
    return manager


def write_config(home: Path, data: dict) -> None:
    """Write ``<home>/config.yaml``."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")


def save_unscrubbed(manager, key: str, value: str) -> None:
    """Save a secret straight into memory.db and drop its scrub, as if the scrub had not run yet: what a
    boundary does on its own is then all that keeps the value out."""
    with manager.db.transaction() as conn:
        conn.execute("INSERT INTO user_facts (key, value, category, created_at, updated_at)"
                     " VALUES (?, ?, 'secret', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')", (key, value))
        conn.execute("DELETE FROM secret_scrubs")
