"""A long conversation on a model with a small window: nothing is cut, the first turn's fact stays in
reach."""

from __future__ import annotations

from core.engine.toolbox.toolbox import CORE_TOOLS
from tests.window.conversation import TURNS


def test_forty_two_long_turns_fit_the_window_and_keep_the_first_fact(long_conversation, api):
    """42 turns of ~1,200-character notes on an 8,192-token model: no request is truncated (nor refused),
    every call to Ollama sends num_ctx and keep_alive, LCM compacts in the loop, and the last prompt holds the
    turn-1 fact (raw or summarised) without any tool call."""
    server, engine = long_conversation(8192, api=api)
    server.enqueue("Your locker code is 4417, in hall B.")
    result = engine.run("What is my locker code?")

    assert result.ok and "4417" in result.response and result.tool_calls == 0
    assert server.truncated == [] == server.refused, [(p.full_tokens, p.num_ctx,
                                                       p.tools) for p in server.truncated]
    chats = server.chat_requests
    assert len(chats) > TURNS + 1 and all(
        body["options"]["num_ctx"] == 8192 and body["keep_alive"] == "5m" for body in chats
        if api == "ollama")
    summaries = server.summarizer_prompts()
    assert summaries, "the LCM provider never compacted while the engine ran"
    last = server.planner_prompts()[-1]
    assert "4417" in last.text
    assert any("[summary " in str(m.get("content"))
               for m in last.messages), "older turns live on as summaries"
    assert not any(m.get("role") == "tool" for m in last.messages)
    assert max(p.tokens for p in server.planner_prompts()) > 4096, "the window was used, not Ollama's default"


def test_a_4096_token_model_runs_the_long_conversation_with_the_core_tools(long_conversation, api):
    """The same 42 turns on a 4,096-token model (Ollama's default window): the engine offers the core tool
    set, says so once in the run's notice, and no request is truncated (nor refused); the turn-1 fact is still
    answered."""
    server, engine = long_conversation(4096, api=api)
    assert engine.notice.count("core set") == 1 and all(name in engine.notice for name in CORE_TOOLS)
    server.enqueue("Your locker code is 4417, in hall B.")
    result = engine.run("What is my locker code?")

    assert result.ok and "4417" in result.response and result.tool_calls == 0
    assert server.truncated == [] == server.refused, [(p.full_tokens, p.num_ctx,
                                                       p.tools) for p in server.truncated]
    planner = [body for body in server.chat_requests if body.get("tools")]
    assert len(planner) > TURNS and all(p.num_ctx == 4096 for p in server.prompts)
    assert all(sorted(t["function"]["name"] for t in body["tools"]) == sorted(CORE_TOOLS) for body in planner)
    assert server.summarizer_prompts(), "the LCM provider never compacted while the engine ran"
    last = server.planner_prompts()[-1]
    assert "4417" in last.text and not any(m.get("role") == "tool" for m in last.messages)
    assert max(p.tokens for p in server.planner_prompts()) > 2048, "the window was used"
