"""Fixtures of the tests on a real model: llama.cpp's llama-server running SmolLM2-135M-Instruct (the
``llama_server`` fixture of tests/conftest.py), agents configured for it, and engines on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_home_config


def configure(home: Path, server, **sections) -> None:
    """``llm`` of the agents home for ``server`` (backend openai, its URL, its model), plus ``sections``."""
    write_home_config(home, {"llm": {"backend": "openai", "host": server.url, "model": server.model}, **sections})


@pytest.fixture
def make_engine():
    """Open engines for agent finn; closed after the test."""
    from core.engine import Engine

    opened = []

    def make(**kwargs):
        engine = Engine("finn", **kwargs)
        opened.append(engine)
        return engine

    yield make
    for engine in opened:
        engine.close()
        engine.manager.close()
