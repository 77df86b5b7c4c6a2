"""Fixtures of the secret-leak tests: an agent whose cold store embeds through a loopback Ollama."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.memory.storage.backend import open_database
from tests.conftest import write_home_config
from tests.ollama_server import ScriptedOllama


@pytest.fixture
def ollama(monkeypatch: pytest.MonkeyPatch):
    """A scripted Ollama-compatible server serving a chat model and ``fake-embed``; ``OLLAMA_HOST`` points at
    it."""
    with ScriptedOllama(models=("llama3.1", "fake-embed")) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.host)
        yield server


@pytest.fixture
def home(agents_home: Path, ollama: ScriptedOllama) -> Path:
    """An agents home embedding with the loopback Ollama, summarising LOG.md deterministically (on SQLite)."""
    write_config(agents_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"compact_summarizer": "deterministic"}})
    return agents_home


@pytest.fixture
def finn(storage_backend: str, home: Path, manager):
    """The MemoryManager of agent finn in ``home``, its tables in memory.db, then in a PostgreSQL schema."""
    return manager


def write_config(home: Path, data: dict) -> None:
    """Write ``<home>/config.yaml``, keeping the storage section a fixture chose (``pg_home``) and the
    embedder."""
    write_home_config(home, data)


def database_of(manager):
    """A database object of its own over the agent's memory tables, for a provider to own and close."""
    return open_database(manager.paths, manager.config.storage)


def save_unscrubbed(manager, key: str, value: str) -> None:
    """Save a secret straight into memory.db and drop its scrub, as if the scrub had not run yet: what a
    boundary does on its own is then all that keeps the value out."""
    with manager.db.transaction() as conn:
        conn.execute("INSERT INTO user_facts (key, value, category, created_at, updated_at)"
                     " VALUES (?, ?, 'secret', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
                     (key, value))
        conn.execute("DELETE FROM secret_scrubs")
