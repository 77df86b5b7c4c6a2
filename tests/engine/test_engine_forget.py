"""Forgetting in a running session: after a fact is forgotten, neither the handoff summary of `/compact`
nor any later prompt shows its value, though the user said it earlier in the session."""

from __future__ import annotations

import json

from core.memory.secrets.redaction import REDACTED
from tests.engine.conftest import write_config
from tests.engine.test_engine_compaction import LONG, scripted
from tests.leaks.leak_check import holds, prompt_leaks

VALUE = "teal with copper trim"


def test_compact_and_later_prompts_hide_a_forgotten_fact(server, agents_home, make_engine):
    """The user tells the value, the fact is saved, then forgotten: `/compact`'s handoff prompt lacks it,
    the stored handoff hides it even when the model writes it, and the next turn's prompt shows it nowhere."""
    write_config(agents_home, "llm:\n  backend: ollama\nprovider:\n  name: simple\n"
                              "compaction:\n  max_tokens: -1\n  keep_tail: 2\n")
    server.default = scripted(summary_reply=f"## Goal\nPaint the hallway {VALUE}\n## Next Steps\n- buy paint")
    engine = make_engine()
    assert engine.run(f"My favourite colour is {VALUE}. {LONG}").ok
    engine.manager.save_fact("favourite_colour", VALUE)
    for turn in range(3):
        assert engine.run(f"Step {turn}: {LONG}").ok
    assert engine.manager.forget_memory("fact:favourite_colour")
    server.forget_requests()

    report = engine.compact()

    summary_prompts = [r for r in server.chat_requests if not r.get("tools")]
    assert summary_prompts and not any(holds(json.dumps(r).encode(), VALUE) for r in summary_prompts)
    assert report.summary and not holds(report.summary.encode(), VALUE) and REDACTED in report.summary
    assert not holds(engine.conversation.handoff_file.read_bytes(), VALUE)
    server.forget_requests()
    assert engine.run("What should I buy next?").ok
    assert prompt_leaks(server.chat_requests, VALUE) == []
