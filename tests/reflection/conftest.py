"""Fixtures of the reflection tests: a scripted model server that reflects (tests/reflection/model.py), and
agent finn configured to read with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_home_config
from tests.ollama_server import ScriptedOllama
from tests.reflection.model import ReflectingModel

MODEL = "qwen2.5"


@pytest.fixture
def model() -> ReflectingModel:
    """The scripted model: every reply valid unless a test sets ``model.mix``."""
    return ReflectingModel()


@pytest.fixture
def server(model: ReflectingModel, monkeypatch: pytest.MonkeyPatch):
    """A started scripted Ollama whose every unscripted reply is ``model``'s; ``OLLAMA_HOST`` points at it."""
    with ScriptedOllama(models=(MODEL,), default=model) as scripted:
        monkeypatch.setenv("OLLAMA_HOST", scripted.host)
        yield scripted
        model.release()


def reflect_config(**reflect) -> dict:
    """The config of a test that reflects with the scripted server: a 4,096-token window, no automatic
    compaction."""
    return {"llm": {"backend": "ollama", "model": MODEL, "num_ctx": 4096, "timeout_s": 10.0},
            "memory": {"auto_compact": False},
            "reflect": {"enabled": "true", "timeout_s": 2.0, "interval_s": 3600.0, **reflect}}


@pytest.fixture
def reflecting(agents_home: Path, server: ScriptedOllama) -> Path:
    """The agents home configured to reflect with the scripted server."""
    write_home_config(agents_home, reflect_config())
    return agents_home


@pytest.fixture
def finn(reflecting: Path):
    """Agent finn's memory, reflecting with the scripted server."""
    from core.memory_manager import MemoryManager

    with MemoryManager("finn") as manager:
        yield manager


@pytest.fixture
def backend(server: ScriptedOllama):
    """The Ollama backend of the scripted server, as the engine would hand it over."""
    from core.llm.ollama_backend import OllamaBackend

    return OllamaBackend(MODEL, server.host, timeout_s=10.0, num_ctx=4096)
