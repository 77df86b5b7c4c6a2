"""Consecutive planner prompts share most of their text, so the model server's prompt cache spares re-evaluating it."""

from __future__ import annotations

import random
import statistics

from tests.ollama_server import ScriptedOllama
from tests.window.conftest import summarising_model, write_config
from tests.window.test_long_conversation import FACT, TURNS, note

MIN_SHARE = 0.85


def reuse_shares(server: ScriptedOllama) -> list[float]:
    """For each planner prompt that directly follows another (no summary call between: a compaction takes
    the model's one cache slot), the share of its tokens the server took from its cache."""
    shares, previous_was_planner = [], False
    for prompt in list(server.prompts):
        if prompt.tools and previous_was_planner:
            shares.append(prompt.cached_tokens / prompt.tokens)
        previous_was_planner = prompt.tools
    return shares


def test_consecutive_prompts_of_a_long_conversation_share_their_prefix(make_server, agents_home, make_engine):
    """Over the 42-turn conversation on a 131k model, a planner prompt that follows another without a
    compaction between has, at the median, at least 85% of its tokens in the server's prompt cache (the
    memory context comes after the older turns), and prompt_eval_count reports only the rest."""
    server = make_server(context_length=131072, default="Noted.")
    server.summarizer = summarising_model
    write_config(agents_home, "llm:\n  backend: ollama\nmemory:\n  compact_summarizer: deterministic\n")
    engine = make_engine()
    rng = random.Random(9)
    assert engine.run(f"{FACT} " + note(1, rng)).ok
    for turn in range(2, TURNS + 1):
        assert engine.run(note(turn, rng)).ok

    shares = reuse_shares(server)
    assert len(shares) >= TURNS // 2, "most turns follow one another without a compaction"
    assert statistics.median(shares) >= MIN_SHARE, [round(s, 2) for s in shares]
    assert server.truncated == []
    last = server.planner_prompts()[-1]
    assert last.evaluated == last.tokens - last.cached_tokens
    assert engine.backend.meter.last.reported == last.evaluated
