"""An OpenAI-compatible server's window: asked from the server its own way, said where it came from, and a
prompt that cannot fit refused rather than cut."""

from __future__ import annotations

import json
import logging

import pytest

from core.errors import PromptTooLongError
from core.llm.openai_backend import OpenAIBackend, told_tokens
from tests.window.conftest import write_config
from tests.window.test_token_ratio import PROSE


@pytest.mark.parametrize(("flavour", "num_ctx", "window", "source"), [
    ("llamacpp", 16384, 6144, "llama.cpp /props n_ctx"),
    ("vllm", 16384, 6144, "vLLM /v1/models max_model_len"),
    ("lmstudio", 16384, 6144, "LM Studio /api/v0/models loaded_context_length"),
    ("plain", 12000, 12000, "llm.num_ctx: a server at http://127.0.0.1:"),
    ("llamacpp", 4096, 4096, "llm.num_ctx; the server runs 6144 (llama.cpp /props n_ctx)"),
])
def test_the_window_comes_from_the_server_and_the_notice_says_which(make_server, agents_home, make_engine,
                                                                    flavour,
                                                                      num_ctx, window, source):
    """llama.cpp's /props, vLLM's max_model_len, LM Studio's loaded length, else llm.num_ctx (the smaller of
    the server's and llm.num_ctx): the run's notice and /status say which."""
    make_server(context_length=32768, n_ctx=6144, flavour=flavour, default="Done.")
    write_config(agents_home, f"llm:\n  backend: openai\n  num_ctx: {num_ctx}\n")
    engine = make_engine()
    assert engine.backend.window.num_ctx == window
    assert f"window: {window} tokens ({source}" in engine.notice
    assert engine.run("Say hello").ok
    assert f"window from {source}" in engine.window_status()


def test_a_prompt_over_the_window_is_refused_before_it_is_sent(make_server):
    """A request whose estimate is over the window is refused with the sizes named; the server never sees
    it."""
    server = make_server(context_length=8192)
    backend = OpenAIBackend("llama3.1", server.host)
    with pytest.raises(PromptTooLongError, match=r"~\d+ tokens does not fit llama3.1's window of 8192 tokens "
                                                 r"\(llama.cpp /props n_ctx\); it was not sent"):
        backend.chat([{"role": "user", "content": PROSE * 300}], [])
    assert server.chat_requests == []


def test_a_prompt_the_server_refuses_lowers_the_ratio_and_the_run_goes_on(make_server, agents_home,
                                                                          make_engine,
                                                                          caplog):
    """A wrong learned ratio (8 chars/token) lets a long request past the estimate; llama-server refuses it
    (HTTP 400, the prompt's size named) instead of cutting it: a warning with both numbers, the ratio lowered,
    and the model call retried with the request shortened to fit."""
    server = make_server(context_length=8192, default="Noted.")
    write_config(agents_home, "llm:\n  backend: openai\n")
    (agents_home / "token_ratios.json").write_text(json.dumps({"llama3.1": 8.0}))
    engine = make_engine()
    caplog.set_level(logging.WARNING, logger="core.llm.model_window")
    result = engine.run("Read this. " + PROSE * 150 + " What is it about?")

    assert result.ok, result
    [refused] = server.refused
    warnings = [r.getMessage() for r in caplog.records if "refused a prompt" in r.getMessage()]
    assert warnings and f"of {refused.full_tokens} tokens estimated at" in warnings[0]
    assert engine.backend.window.chars_per_token < 8.0 / 1.5  # lowered well below the wrong ratio
    assert server.truncated == [] and len(server.planner_prompts()) == 1
    request = [m for m in server.planner_prompts()[0].messages
               if str(m.get("content")).startswith("Read this.")]
    assert request[0]["content"].rstrip().endswith("What is it about?")
    assert "left out to fit the model's window" in request[0]["content"]


@pytest.mark.parametrize("message", [
    "request (9001 tokens) exceeds the available context size (8192 tokens), try increasing it",
    "This model's maximum context length is 8192 tokens. However, your request has 9001 input tokens.",
    "This model's maximum context length is 8192 tokens. However, you requested 9001 tokens (8001 in the "
    "messages, 1000 in the completion).",
])
def test_the_prompts_size_is_read_from_each_servers_refusal(message):
    assert told_tokens(message) == 9001


def test_each_run_sums_the_cache_counts_the_server_reported(make_server, agents_home, make_engine, caplog):
    """Every call's usage (prompt tokens, those from the cache, those evaluated) is logged, and the run's sum
    is the server's own counts added up."""
    server = make_server(context_length=8192, default="Noted.")
    write_config(agents_home, "llm:\n  backend: openai\n")
    engine = make_engine()
    assert engine.run("First note: " + PROSE).ok
    caplog.set_level(logging.INFO, logger="core")
    before = len(server.prompts)
    from tests.ollama_server import tool_call

    server.enqueue(tool_call("save_fact", key="colour", value="teal", category="personal"), "Saved.")
    result = engine.run("Remember that my colour is teal. " + PROSE)

    prompts = server.prompts[before:]
    assert result.ok and len(prompts) == 2
    usage = result.usage
    assert usage.calls == 2
    assert usage.prompt_tokens == sum(p.rendered_tokens for p in prompts)
    assert usage.cached_tokens == sum(p.cached_tokens for p in prompts) > 0
    assert usage.evaluated_tokens == sum(p.evaluated for p in prompts)
    lines = [r.getMessage() for r in caplog.records]
    assert sum("from the server's cache" in line and line.startswith("LLM reply") for line in lines) == 2
    assert any(line == f"run {result.run_id}: {usage.describe()}" for line in lines)
    assert all(body["openai"]["cache_prompt"] is True for body in server.chat_requests)
