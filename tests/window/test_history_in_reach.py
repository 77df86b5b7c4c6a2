"""The assembled context never loses a turn silently: summarised by LCM, or reported once by Simple."""

from __future__ import annotations

import logging

import pytest

from tests.ollama_server import Error
from tests.window.conftest import write_config

NOTE = "This note is about the orchard and the harbour, with lanterns, gravel and copper. " * 15


def _overflow_entries(engine) -> int:
    """LOG.md entries (and archived ones) reporting left-out history."""
    memory = engine.paths.memory_dir
    files = [memory / "LOG.md", *sorted((memory / "archive").glob("LOG-*.md"))]
    return sum(f.read_text(encoding="utf-8").count("context_overflow") for f in files if f.exists())


def test_simple_provider_reports_what_does_not_fit_once(make_server, agents_home, make_engine, caplog):
    """Simple has no summaries: once the history passes the window, one WARNING and one LOG entry say so."""
    server = make_server(context_length=8192, default="Noted.")
    write_config(agents_home, "llm:\n  backend: ollama\nprovider:\n  name: simple\n"
                              "memory:\n  compact_summarizer: deterministic\n")
    engine = make_engine()
    caplog.set_level(logging.WARNING, logger="core.engine.prompting.context_builder")
    for turn in range(16):
        assert engine.run(f"Note {turn}. {NOTE}").ok
    warnings = [r for r in caplog.records if "fit the model's window" in r.getMessage()]
    assert len(warnings) == 1 and _overflow_entries(engine) == 1
    assert server.truncated == []


def test_a_failing_compaction_warns_and_the_turn_goes_on(make_server, agents_home, make_engine, caplog):
    """The summarizer's model fails: every turn still answers, the failure is logged, nothing is cut."""
    server = make_server(context_length=8192, default="Noted.")
    server.summarizer = lambda prompt: Error(500, "model runner crashed")
    write_config(agents_home, "llm:\n  backend: ollama\nmemory:\n  compact_summarizer: deterministic\n")
    engine = make_engine()
    caplog.set_level(logging.WARNING)
    for turn in range(14):
        assert engine.run(f"Note {turn}. {NOTE}").ok
    assert server.summarizer_prompts(), "compaction was attempted"
    assert any("compaction" in r.getMessage() and "failed" in r.getMessage() for r in caplog.records)
    assert [p for p in server.truncated if p.tools] == []


@pytest.mark.parametrize("provider", ["lcm", "simple"])
def test_a_forgotten_message_is_not_taken_for_history_left_out(provider, storage_backend, make_server,
                                                               agents_home,
                                                                make_engine, caplog):
    """After a message is forgotten the conversation is counted as the prompt shows it (the message as
    "[forgotten]"): a session whose every turn fits the window says nothing about turns left out."""
    make_server(context_length=16384, default="Noted.")
    write_config(agents_home, f"llm:\n  backend: ollama\nprovider:\n  name: {provider}\n")
    engine = make_engine()
    for turn in range(3):
        assert engine.run(f"Note {turn}. {NOTE[:400]}").ok
    first = engine.manager.recall_memory("Note 0 orchard", n_results=10, kind="message")
    assert engine.manager.forget_memory(next(h["id"] for h in first if h["content"].startswith("Note 0.")))
    engine.close()
    caplog.set_level(logging.WARNING, logger="core.engine.prompting.context_builder")

    later = make_engine()
    assert later.run("What did I note?").ok
    stats = later.provider.stats(later.session)
    assert later.conversation.tokens() < stats.token_count  # the forgotten message counts as shown
    assert [r for r in caplog.records if "fit the model's window" in r.getMessage()] == []
    assert _overflow_entries(later) == 0
