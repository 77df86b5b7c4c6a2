"""The secrets sweep: exercise every public path of an agent around a secret saved late, then look for its
value in every file, table and prompt. Only get_fact's replies may hold it."""

from __future__ import annotations

import pytest

from core.engine import Engine
from core.memory_manager import MemoryManager
from core.llm.backend import generate_with
from core.memory.provider.types import CompactionMode
from core.skills.memory.scripts import log_activity, recall_memory, save_fact, update_status
from tests.leaks.conftest import write_config
from tests.leaks.leak_check import leaks, prompt_leaks
from tests.ollama_server import tool_call, tool_calls

VALUE = "Zk7-cred-5566-7788"
VARIANT = "ｚｋ７\u200b-CRED-5566-7788"  # full width, a zero-width space, other case: the same secret
LONG = "The bank portal checklist: log in, check the statement, pay the card, download the receipt. " * 3


def echo_summary(prompt: str) -> str:
    """A summarizer that repeats what it was shown of the bank portal (a model that copies a code it sees)."""
    words = [w for w in prompt.split() if "5566" in w or "portal" in w.lower()]
    return "Summary: the user talked about the bank portal " + " ".join(words[:6])


def _engine(home, provider: str, session: str = "main", offline: bool = False) -> Engine:
    write_config(home, {"llm": {"backend": "ollama"}, "provider": {"name": provider},
                        "memory": {"compact_summarizer": "llm"},
                        "compaction": {"max_tokens": -1, "keep_tail": 2}})
    return Engine("finn", session=session, offline=offline)


# The real model (minilm): once the value is scrubbed, recall finds the texts around it by meaning only.
@pytest.mark.slow
def test_every_public_path_around_a_secret_saved_late(minilm, agents_home, storage_backend, ollama):
    """Told as plain text, written everywhere, then saved as a secret and used again through every path:
    afterwards no file, table, index or prompt holds the value in any form but get_fact's replies."""
    server = ollama
    server.summarizer = echo_summary
    server.default = "Noted."

    # 1. The value is plain text: a turn writes it to LOG.md, NOW.md and the conversation.
    engine = _engine(agents_home, "lcm")
    manager = engine.manager
    server.enqueue(tool_calls(("log_activity", {"content": f"bank portal code {VALUE}"}),
                              ("update_status", {"new_status": f"Paying with {VALUE}",
                                                 "next_steps": [f"enter {VARIANT} at the portal"]})),
                   f"Noted {VALUE}.")
    assert engine.run(f"For the bank portal use {VALUE} from now on. {LONG}").ok
    for n in range(4):
        assert engine.run(f"Portal step {n}: {LONG} The code was {VALUE}.").ok
    manager.store_memory(f"bank portal code {VALUE}", {"code": VALUE})
    save_fact.execute(agent_name="finn", key="portal_hint", value=f"the code is {VARIANT}")
    assert manager.compact_log().summary_method == "llm"  # an LLM summary that repeats the code
    assert engine.compact().method == "lcm"  # LCM summaries that repeat it
    engine.close()

    # 2. A Simple session on the same agent, handed off with a summary that repeats the value.
    side = _engine(agents_home, "simple", session="side")
    for n in range(4):
        assert side.run(f"Side question {n} about the portal code {VALUE}. {LONG}").ok
    assert side.compact().method == "handoff"
    side.close()
    with MemoryManager("finn") as memory:
        memory.cold.catch_up()  # every memory gets its vector: the value is in LanceDB too

    held = leaks(agents_home / "finn", VALUE)
    for place in ("memory/LOG.md", "memory/NOW.md", "memory/archive/", "memory/sessions/",
                  "ctx_messages.content",
                  "ctx_summaries.content", "cold_notes.text", "compaction_history.summary", "lancedb row"):
        assert any(place in where for where in held), f"the sweep never wrote the value to {place}"

    # 3. The value becomes a secret, through the model's save_fact.
    engine = _engine(agents_home, "lcm")
    saved_at: list[int] = []
    server.enqueue(tool_call("save_fact", key="bank_portal_code", value=VALUE, category="secret"),
                   lambda body: saved_at.append(len(server.chat_requests) - 1) or "Saved it as a secret.")
    assert engine.run("Please keep that bank portal code as a secret.").ok

    # 4. Every path again, the secret known.
    server.enqueue(tool_call("get_fact", key="bank_portal_code"), f"It is {VALUE}.")
    assert engine.run("What is my bank portal code?").ok
    for n in range(3):
        server.enqueue(tool_calls(("log_activity",
                                   {"content": f"used {VALUE} again", "metadata": {VALUE: n}}),
                                  ("recall_memory", {"query": "bank portal code"})), "Done.")
        assert engine.run(f"Pay bill {n} on the portal. {LONG}").ok
    log_activity.execute(agent_name="finn", content=f"direct log {VARIANT}")
    update_status.execute(agent_name="finn", new_status="Checking", next_steps=[f"type {VALUE}"])
    manager.store_memory(f"again the code {VALUE}")
    assert recall_memory.execute(agent_name="finn", query=VALUE, n_results=5)
    manager.compaction.summary_llm = generate_with(engine.backend)
    assert manager.compact_log().summary_method == "llm"
    manager.append_log("THOUGHT", f"one more {VALUE}")
    engine.provider.compact(engine.session, CompactionMode.FULL, fresh_tail=2)
    engine.close()
    offline = _engine(agents_home, "lcm", offline=True)
    assert offline.run("what is my bank portal code?").ok
    assert offline.run("remember that my backup pin is 9911-4455").ok
    offline.close()
    side = _engine(agents_home, "simple", session="side")
    # the user types the secret again: that request may show it
    typed = f"Last side question about {VALUE}. {LONG}"
    assert side.run(typed).ok
    assert side.compact().method == "handoff"
    side.close()
    write_config(agents_home,
                 {"llm": {"backend": "offline"}, "memory": {"compact_summarizer": "deterministic"}})

    with MemoryManager("finn") as deterministic:
        assert deterministic.compact_log().summary_method == "deterministic"
        assert deterministic.get_fact("bank_portal_code") == VALUE
    manager.close()

    root = agents_home / "finn"
    assert leaks(root, VALUE) == [] and leaks(root, VARIANT) == []
    after = server.chat_requests[saved_at[0]:]
    assert len(after) > 10 and any(not r.get("tools")
                                   for r in after), "summarizer prompts were sent after the save"
    assert prompt_leaks(after, VALUE, (typed,)) == [] and prompt_leaks(after, VARIANT, (typed,)) == []
    fact_replies = [m for r in after for m in r["messages"] if m.get("tool_name") == "get_fact"
                    and VALUE in m["content"]]
    assert fact_replies, "get_fact's reply carried the value to the model"
