"""The window is asked from the model, sent on every call, and a window too small is a clear start-up
error."""

from __future__ import annotations

import pytest

from core.errors import ContextWindowTooSmallError
from tests.engine.conftest import run_cli
from tests.window.conftest import write_config


def test_window_is_the_smallest_of_model_modelfile_and_config(make_server, agents_home, make_engine):
    """A 128k model whose Modelfile sets num_ctx 6144 runs at 6144; keep_alive from the config goes on every
    call."""
    server = make_server(context_length=131072, modelfile_num_ctx=6144, default="Done.")
    write_config(agents_home, "llm:\n  backend: ollama\n  keep_alive: 10m\n")
    engine = make_engine()
    assert engine.backend.window.num_ctx == 6144
    assert engine.run("Say hello").ok
    assert [(b["options"]["num_ctx"], b["keep_alive"]) for b in server.chat_requests] == [(6144, "10m")]
    assert ("/api/show", {"model": "llama3.1"}) in server.requests


def test_config_num_ctx_caps_a_long_model(make_server, agents_home, make_engine):
    """llm.num_ctx below the model's own length wins."""
    server = make_server(context_length=131072, default="Done.")
    write_config(agents_home, "llm:\n  backend: ollama\n  num_ctx: 12000\n")
    engine = make_engine()
    assert engine.run("Say hello").ok
    assert server.chat_requests[0]["options"] == {"num_ctx": 12000, "num_predict": 2048}
    assert server.prompts[0].num_ctx == 12000 and not server.prompts[0].truncated


def test_summarizer_calls_send_num_ctx_and_keep_alive(make_server, agents_home, make_engine):
    """/compact's summarizer calls (no tools) carry the window and keep_alive like planner calls."""
    server = make_server(context_length=8192, default="Noted.")
    server.summarizer = lambda prompt: "- The user sent twelve notes."
    write_config(agents_home, "llm:\n  backend: ollama\ncompaction:\n  keep_tail: 2\n")
    engine = make_engine()
    for turn in range(12):
        assert engine.run(f"Note {turn}: " + "words and more words " * 20).ok
    from core.engine.cli import command

    text = command(engine, "/compact")
    assert "Compacted (lcm)" in text and "kept as they are" in text and "The user sent twelve notes" in text
    summarizer_calls = [b for b in server.chat_requests if not b.get("tools")]
    assert summarizer_calls and all(b["options"] == {"num_ctx": 8192, "num_predict": 2048}
                                    and b["keep_alive"] == "5m" for b in server.chat_requests)
    stored = engine.conversation.history(10**9, fresh_tail=0)
    assert [m["content"][:5] for m in stored[-2:]] == ["Note ",
                                                       "Noted"], "keep_tail: the newest 2 stay verbatim"
    assert stored[0]["content"].startswith("[summary ")


def test_a_window_too_small_for_the_fixed_parts_is_a_clear_error(make_server, agents_home):
    """A 1,024-token model, too small even for the core tool set: the engine refuses to start and says what
    is needed and what to set."""
    from core.engine import Engine

    server = make_server(context_length=1024)
    write_config(agents_home, "llm:\n  backend: ollama\n")
    with pytest.raises(ContextWindowTooSmallError) as caught:
        Engine("finn")
    message = str(caught.value)
    assert "1024 tokens is too small" in message and "llm.num_ctx" in message and "needed" in message
    assert ", the core set), the memory context" in message, "the error counts the smallest tool set"
    assert server.chat_requests == [], "nothing was sent to a model that cannot hold the prompt"
    result = run_cli("--agent", "finn", "hello")
    assert result.returncode != 0 and "too small" in result.stderr and "Traceback" not in result.stderr
