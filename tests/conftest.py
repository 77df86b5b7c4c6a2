"""Shared fixtures: every test gets its own agents home and a one-thread torch."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Torch threads collapse when the other core is busy; child processes inherit these.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


from faults import full_disk  # noqa: E402,F401 - a fixture for every test: the agents home on a small tmpfs


@pytest.fixture(autouse=True)
def agents_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point ``AGENTOS_HOME`` at a fresh folder and keep Ollama unreachable unless a test says so."""
    home = tmp_path / "agents"
    monkeypatch.setenv("AGENTOS_HOME", str(home))
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    return home


@pytest.fixture(scope="session")
def minilm():
    """The real all-MiniLM-L6-v2 model, loaded once for the whole session."""
    from core.llm.embedders import load_minilm

    return load_minilm()


@pytest.fixture
def manager(agents_home: Path):
    """A MemoryManager for agent ``finn`` in the test's home."""
    from core.memory_manager import MemoryManager

    mm = MemoryManager("finn")
    yield mm
    mm.close()
