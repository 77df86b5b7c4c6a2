"""Fixtures of the window tests: an Ollama-like server with a given window, engines on it, a summarising
model, and the long conversation of ~1,200-character notes that several tests hold on it."""

from __future__ import annotations

import pytest

from tests.engine.conftest import api, write_config  # noqa: F401 - shared by the tests of this folder
from tests.ollama_server import ScriptedOllama
from tests.window.conversation import summarising_model, tell_notes


@pytest.fixture
def make_server(monkeypatch: pytest.MonkeyPatch):
    """Start ``ScriptedOllama(**kwargs)``; ``OLLAMA_HOST`` and ``OPENAI_BASE_URL`` point at the last one
    started."""
    started = []

    def make(**kwargs) -> ScriptedOllama:
        server = ScriptedOllama(**kwargs).start()
        started.append(server)
        monkeypatch.setenv("OLLAMA_HOST", server.host)
        monkeypatch.setenv("OPENAI_BASE_URL", server.host + "/v1")
        return server

    yield make
    for server in started:
        server.stop()



@pytest.fixture
def long_conversation(make_server, agents_home, make_engine):
    """``run(context_length, config="", replies=())``: the server for a model of that trained length (the
    summarising model answers LCM's summary calls), an engine on it, and the ``TURNS`` notes told to it (the
    first with ``FACT``); returns ``(server, engine)``. LOG.md compaction summarises deterministically,
    without the model; ``config`` adds lines under ``memory:``; ``replies`` are the planner's first replies
    ("Noted." after them); ``api`` is the backend's (``ollama`` or ``openai``)."""

    def run(context_length: int, config: str = "", replies: tuple = (), api: str = "ollama"):
        server = make_server(context_length=context_length, default="Noted.")
        server.summarizer = summarising_model
        server.enqueue(*replies)
        write_config(agents_home,
                     f"llm:\n  backend: {api}\nmemory:\n  compact_summarizer: deterministic\n" + config)
        engine = make_engine()
        tell_notes(engine)
        return server, engine

    return run
