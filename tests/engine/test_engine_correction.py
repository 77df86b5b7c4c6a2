"""The Correction Test: a secret told once is recalled 50+ turns later and never leaks into NOW, prompts'
facts or the fact skills' log."""

from __future__ import annotations

import json

from tests.engine.conftest import write_config
from tests.ollama_server import tool_call

SECRET = "12345"
FILLER_TURNS = 52
GARDEN = "Tomatoes want sun, deep watering and stakes; basil likes warmth and pinching. " * 4


def _facts_section(memory_message: str) -> str:
    return memory_message.split("## Facts", 1)[1]


def _memory_messages(server) -> list[str]:
    """The memory message of every chat request (a user-side message headed "# Memory")."""
    return [m["content"] for body in server.chat_requests for m in body["messages"]
            if m["role"] == "user" and m["content"].startswith("# Memory")]


def test_secret_is_recalled_after_fifty_turns_and_never_leaks(server, agents_home, make_engine):
    """"My API key is 12345" → save_fact; 52 turns later get_fact answers 12345; the secret stays out of
    NOW.md, prompts' facts and the fact skills' LOG entries."""
    # LOG.md is compacted during the run: its summaries are deterministic so the script only serves
    # chat turns.
    write_config(agents_home, "llm:\n  backend: ollama\nengine:\n  context_budget: 3000\n"
                              "memory:\n  compact_summarizer: deterministic\n")
    engine = make_engine()
    now_file = engine.paths.now_file
    # Past the history budget the LCM provider compacts before a planner call: its summaries come from here.
    server.summarizer = lambda prompt: (
        "Summary: the user listed unrelated gardening points; the assistant noted them."
    )

    def reply_checking_now(text):
        def reply(body):
            assert SECRET not in now_file.read_text(encoding="utf-8"), "the secret reached NOW.md"
            return text
        return reply

    server.enqueue(tool_call("save_fact", key="api_key", value=SECRET, category="secret"),
                   reply_checking_now("Saved your API key."))
    assert engine.run(f"My API key is {SECRET}").ok
    for turn in range(FILLER_TURNS):
        server.enqueue(reply_checking_now(f"Noted point {turn}."))
        assert engine.run(f"Here is unrelated point number {turn} about gardening. " + GARDEN).ok
    server.enqueue(tool_call("get_fact", key="api_key"),
                   lambda body: f"Your API key is {_tool_value(body)}.")
    result = engine.run("What is my API key?")

    assert result.ok and SECRET in result.response
    last_request = server.chat_requests[-1]
    assert all(SECRET not in m["content"] for m in last_request["messages"] if m["role"] == "user"), \
        "the answer must come from get_fact, not from the first message still in context"
    assert any(m["role"] == "tool" and SECRET in m["content"] for m in last_request["messages"])
    assert len(server.chat_requests) >= FILLER_TURNS + 4
    for prompt in _memory_messages(server):
        assert SECRET not in _facts_section(prompt)
    for request in server.chat_requests[2:-1]:  # every filler turn: the conversation carries no secret
        assert SECRET not in json.dumps(request["messages"]), "a later prompt replayed the secret"
    leaking = [m for m in last_request["messages"] if SECRET in json.dumps(m)]
    assert [m["role"] for m in leaking] == ["tool"], "only get_fact's reply may hold the secret"
    assert SECRET not in (
        memory_dir := agents_home / "finn" / "memory" / "checkpoints.db"
    ).read_bytes().decode("latin-1"), f"{memory_dir} keeps the raw turn after it finished"
    assert "api_key (secret): [REDACTED]" in _facts_section(_memory_messages(server)[-1])
    assert SECRET not in now_file.read_text(encoding="utf-8")
    # A LOG.md compaction may still run in the background: it writes its archive before it rewrites LOG.md,
    # so the files are read once it is done (closing the memory waits for it).
    engine.close()
    engine.manager.close()
    memory_dir = agents_home / "finn" / "memory"
    log_files = [memory_dir / "LOG.md", *sorted((memory_dir / "archive").glob("LOG-*.md"))]
    fact_lines = [line for path in log_files for line in path.read_text(encoding="utf-8").splitlines()
                  if '"tool":"save_fact"' in line or '"tool":"get_fact"' in line]
    assert len(fact_lines) == 2, "LOG.md and its archives hold both fact skill calls"
    assert all(SECRET not in line for line in fact_lines)
    assert all(SECRET not in path.read_text(encoding="utf-8") for path in log_files)


def _tool_value(body) -> str:
    tool = [m for m in body["messages"] if m["role"] == "tool"][-1]
    return json.loads(tool["content"])["value"]
