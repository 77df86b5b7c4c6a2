"""The start of the planner prompts (the earlier turns, then the memory message) stays as it was from turn to
turn, and is laid again, with the memory read fresh right before the turn, when the memory has news the turns
do not show."""

from __future__ import annotations

import statistics

from tests.ollama_server import tool_call
from tests.window.conftest import write_config
from tests.window.conversation import TURNS

TURN_TEXTS = ("Plan the orchard harvest: the north rows ripen first.",
              "The pickers arrive on Monday at seven.",
              "The cider press needs a new belt before Thursday.", "Book the van for Friday morning.")


def _engine(make_server, agents_home, make_engine, api: str):
    server = make_server(context_length=8192, default="Noted.")
    write_config(agents_home, f"llm:\n  backend: {api}\nmemory:\n  auto_compact: false\n")
    return server, make_engine()


def _memory(messages: list[dict]) -> str:
    found = [m["content"] for m in messages if m["role"] == "user"
             and str(m["content"]).startswith("# Memory")]
    assert len(found) == 1, "one memory message a prompt"
    return found[0]


def test_a_fact_saved_by_another_writer_is_read_into_the_next_turn(make_server, agents_home, make_engine,
                                                                   api):
    """Another writer (the memory's own API, as the MCP server or the CLI would) saves a fact between two
    turns:
    the next prompt's memory message is read again and shows it, after every earlier turn and right before the
    request. A fact the model saves itself (its call and the result are in the conversation) leaves the start
    of the next turn's prompt as it was: that prompt is the run's last one with the reply and the new
    request."""
    server, engine = _engine(make_server, agents_home, make_engine, api)
    for text in TURN_TEXTS[:2]:
        assert engine.run(text).ok
    engine.manager.save_fact("city", "Lisbon", "personal")
    server.enqueue(tool_call("save_fact", key="van", value="the big one", category="general"), "Saved.")
    for text in TURN_TEXTS[2:]:
        assert engine.run(text).ok

    chats = [body["messages"] for body in server.chat_requests]
    third, third_step, fourth = chats[2], chats[3], chats[4]
    assert third[-2]["content"].startswith("# Memory") and "city (personal): Lisbon" in third[-2]["content"]
    assert [m["content"] for m in third[1:-2]] == [TURN_TEXTS[0], "Noted.", TURN_TEXTS[1], "Noted."]
    assert third[-1]["content"] == TURN_TEXTS[2]
    assert third_step[:len(third)] == third
    assert fourth[:len(third_step)] == third_step and fourth[-1]["content"] == TURN_TEXTS[3]
    assert "van (general)" not in _memory(fourth), "the model's own save is in the conversation, not news"
    assert server.prompts[4].cached_tokens >= server.prompts[3].rendered_tokens - 1


def test_a_forgotten_fact_leaves_the_next_prompt(make_server, agents_home, make_engine, api):
    """A fact the memory message shows is forgotten between turns: the next prompt's memory is read again, and
    the value is nowhere in that prompt."""
    server, engine = _engine(make_server, agents_home, make_engine, api)
    engine.manager.save_fact("locker", "hall B, code 4417", "personal")
    for text in TURN_TEXTS[:3]:
        assert engine.run(text).ok
    assert "4417" in _memory(server.chat_requests[2]["messages"])
    assert engine.manager.forget_memory("fact:locker")
    assert engine.run(TURN_TEXTS[3]).ok

    last = server.chat_requests[-1]["messages"]
    assert last[-2]["content"].startswith("# Memory") and last[-1]["content"] == TURN_TEXTS[3]
    assert "4417" not in str(last) and "locker (personal)" not in last[-2]["content"]


def test_a_forgotten_log_entry_leaves_the_next_prompt(make_server, agents_home, make_engine, api):
    """A LOG.md entry the memory message shows is forgotten, here by the model's own forget_memory call in a
    run:
    the run's next prompt has the memory read again, and the entry's text is nowhere in it but in the result
    of that call (which says what it forgot)."""
    server, engine = _engine(make_server, agents_home, make_engine, api)
    seq = engine.manager.append_log("THOUGHT", "The gate code of the orchard is 2468.")
    for text in TURN_TEXTS[:2]:
        assert engine.run(text).ok
    server.enqueue(tool_call("forget_memory", memory_id=f"log:{seq}"), "Forgotten.")
    assert engine.run("Forget the note about the gate code, please.").ok

    before, after = (body["messages"] for body in server.chat_requests[-2:])
    assert "2468" in _memory(before) and [m["role"] for m in after[-3:]] == ["user", "assistant", "tool"]
    assert after[-4]["content"].startswith("# Memory") and "2468" not in str(after[:-1])


def test_a_log_entry_of_another_writer_is_read_into_the_next_turn(make_server, agents_home, make_engine, api):
    """An entry another writer adds to LOG.md between turns lays the prompt's start again, the memory showing
    it; the engine's own entries of a turn (its run and step markers, NOW's updates) do not."""
    server, engine = _engine(make_server, agents_home, make_engine, api)
    for text in TURN_TEXTS[:3]:
        assert engine.run(text).ok
    engine.manager.append_log("THOUGHT", "The van's brakes were fixed on Tuesday.")
    assert engine.run(TURN_TEXTS[3]).ok

    second, third, fourth = (body["messages"] for body in server.chat_requests[1:])
    assert third[:len(second)] == second, "the engine's own entries are no news"
    assert fourth[-2]["content"].startswith("# Memory") and "van's brakes were fixed" in fourth[-2]["content"]
    assert fourth[-1]["content"] == TURN_TEXTS[3]


def test_the_simple_provider_lets_older_turns_go_in_blocks(long_conversation, capsys):
    """With the Simple provider (no summaries), older turns leave the prompt half a history budget at once, so
    the prompts of the turns after that start with the same turns: over the 42 turns on an 8,192-token model
    the prompt's start is laid again every few turns, not at every turn, and the planner prompts take a median
    of at least 85% from the cache; that turns are left out is said once."""
    server, engine = long_conversation(8192, "  auto_compact: false\nprovider:\n  name: simple\n")

    planner = server.planner_prompts()
    laid = [after for before,
            after in zip(planner, planner[1:]) if not after.rendered.startswith(before.rendered)]
    shares = [p.cached_share for p in planner[1:]]
    assert server.summarizer_prompts() == [] and server.truncated == []
    assert 2 <= len(laid) <= TURNS // 6, len(laid)
    assert statistics.median(shares) >= 0.85
    overflow = [e for e in engine.manager.scan_log().entries if e.metadata.get("kind") == "context_overflow"]
    assert len(overflow) == 1
    with capsys.disabled():
        print(f"\nsimple provider, 8192 tokens: start laid again {len(laid)} times in {TURNS} turns, cached "
              f"share median {statistics.median(shares):.1%}")
