"""Torture fixtures: a loopback Ollama for the cold store's embeddings.

The campaigns' table is printed at the end of every pytest run that ran a campaign (with or
without ``-s``, from xdist's workers too), under "torture campaigns", and written to
``torture.md`` in pytest's temp folder: see ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ollama_server import ScriptedOllama


@pytest.fixture(scope="session")
def torture_ollama():
    """An Ollama-compatible server on 127.0.0.1 serving the ``fake-embed`` embedding model."""
    with ScriptedOllama(models=("fake-embed",)) as server:
        server.forget_requests()
        yield server


@pytest.fixture
def campaign_folder(torture_ollama, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder for one campaign, with ``$OLLAMA_HOST`` pointing at the loopback server."""
    monkeypatch.setenv("OLLAMA_HOST", torture_ollama.host)
    yield tmp_path
    torture_ollama.forget_requests()

