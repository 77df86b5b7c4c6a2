"""``llm.max_reply_tokens``: every model call carries a reply limit, a reply cut there is kept and the user is
told once which setting to raise."""

from __future__ import annotations

import pytest

from core.config import LLMConfig
from core.llm import choose_backend
from tests.engine.conftest import run_cli, write_config
from tests.ollama_server import count_tokens, tool_call

RUNAWAY = "Status: working on it. " * 400
"""A small model that repeats itself: far more tokens than any limit below."""


def _limits(server) -> list[int | None]:
    """The reply limit of each chat request as the server read it (``num_predict`` or ``max_tokens``)."""
    return [(body.get("options") or {}).get("num_predict", (body.get("openai") or {}).get("max_tokens"))
            for body in server.chat_requests]


def test_every_engine_call_sends_the_default_limit(server, api, make_engine):
    """Without the option set, each call of a run (tool call, then answer) asks for at most 2,048 tokens."""
    server.enqueue(tool_call("get_fact", key="city"), "Not saved yet.")
    result = make_engine(backend_name=api).run("Where do I live?")
    assert result.ok and result.warnings == ()
    assert _limits(server) == [LLMConfig.max_reply_tokens] * 2 == [2048, 2048]


def test_a_runaway_reply_stops_at_the_limit_and_the_run_says_what_to_raise(agents_home, server, api,
                                                                          make_engine):
    write_config(agents_home, f"llm:\n  backend: {api}\n  max_reply_tokens: 40\n")
    server.enqueue(RUNAWAY)
    result = make_engine().run("How is it going?")
    assert _limits(server) == [40]
    assert server.generated == [40], "the server stopped at the limit"
    assert result.ok and result.response.startswith("Status: working on it.")
    assert count_tokens(result.response) < 40
    assert result.warnings == ("the model's reply stopped at llm.max_reply_tokens (40 tokens): raise "
                               "llm.max_reply_tokens in config.yaml for longer replies",)


def test_the_command_tells_a_cut_reply_once(agents_home, server):
    """Two cut replies in one run (a tool call written as text, then a runaway remark; the answer): one note
    on stderr."""
    write_config(agents_home, "llm:\n  backend: ollama\n  max_reply_tokens: 60\n")
    server.enqueue('<tool_call>{"name": "get_fact", "arguments": {"key": "city"}}</tool_call>' + RUNAWAY,
                   RUNAWAY)
    ran = run_cli("--agent", "finn", "How is it going?")
    assert ran.returncode == 0, ran.stderr
    assert "Status: working on it." in ran.stdout
    assert ran.stderr.count("llm.max_reply_tokens") == 2  # the note names it twice, in one line
    assert ran.stderr.count("note: the model's 2 replies stopped at llm.max_reply_tokens (60 tokens)") == 1


def test_a_reply_cut_by_the_window_names_the_window_not_the_option(server, make_engine):
    """A reply that stopped before the limit (the window was full, the server's own limit) does not blame
    llm.max_reply_tokens."""
    server.enqueue(lambda body: {"content": "Half an ans", "cut": True})
    result = make_engine(backend_name="ollama").run("How is it going?")
    assert result.warnings and "llm.max_reply_tokens" not in result.warnings[0]
    assert "llm.num_ctx" in result.warnings[0]


@pytest.mark.parametrize("value, ok", [(15, False), (16, True), (2**24, True), (2**24 + 1, False)])
def test_the_option_has_a_range(agents_home, value, ok):
    from core.config import load_config
    from core.errors import ConfigError

    write_config(agents_home, f"llm:\n  max_reply_tokens: {value}\n")
    if ok:
        assert load_config().llm.max_reply_tokens == value
    else:
        with pytest.raises(ConfigError, match="llm.max_reply_tokens must be a whole number from 16 to"):
            load_config()


def test_a_summary_call_is_capped_too_and_a_call_s_own_limit_wins(server):
    """The summarizers' calls set no limit of their own: they get the option's; reflection's own is kept."""
    from core.llm import generate_with

    config = LLMConfig(backend="ollama", max_reply_tokens=64)
    backend = choose_backend(config).backend
    server.enqueue("A summary.", "Another.")
    generate_with(backend)("Summarise: the user lives in Porto.")
    backend.chat([{"role": "user", "content": "hi"}], [], max_tokens=500)
    assert _limits(server) == [64, 500]


@pytest.mark.parametrize("stream", [True, False])
def test_the_scripted_servers_stop_at_the_limit_as_the_real_ones_do(server, stream):
    """Both faces of the test server, asked through the real clients, stream or not: the reply cut at the
    limit, finish reason ``length``, the tokens generated counted."""
    import ollama
    import openai

    server.enqueue(RUNAWAY, RUNAWAY)
    client = ollama.Client(host=server.host)
    messages = [{"role": "user", "content": "hi"}]
    if stream:
        chunks = list(client.chat(model="llama3.1", messages=messages, stream=True,
                                  options={"num_predict": 12}))
        last, text = chunks[-1], "".join(c.message.content or "" for c in chunks)
    else:
        last = client.chat(model="llama3.1", messages=messages, options={"num_predict": 12})
        text = last.message.content or ""
    assert (last.done_reason, last.eval_count) == ("length", 12)
    assert text.startswith("Status:") and count_tokens(text) == 11
    api = openai.OpenAI(base_url=server.host + "/v1", api_key="not-needed", max_retries=0)
    if stream:
        parts = list(api.chat.completions.create(model="llama3.1", messages=messages, max_tokens=12,
                                                 stream=True, stream_options={"include_usage": True}))
        finish = [c.choices[0].finish_reason for c in parts if c.choices and c.choices[0].finish_reason]
        usage = parts[-1].usage
    else:
        answer = api.chat.completions.create(model="llama3.1", messages=messages, max_tokens=12)
        finish, usage = [answer.choices[0].finish_reason], answer.usage
    assert finish == ["length"] and usage.completion_tokens == 12
    client._client.close()
    api.close()
