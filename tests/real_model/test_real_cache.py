"""The conversation of the window tests on a real server: its own counts of the prompt tokens it took from its
cache and evaluated, call by call, beside what the scripted server reports for the same prompts.

The suite tells the first :data:`CI_TURNS` turns at a 4,096-token window (compactions included); the whole
42-turn conversation at 8,192 and 4,096 tokens is ``scripts/bench_engine.py --backend openai`` (its figures
are in docs/benchmarks.md) or this test with ``AGENTOS_REAL_TURNS=42``."""

from __future__ import annotations

import logging
import os
import statistics

import pytest

from tests.real_model.conftest import configure
from tests.window.conversation import record_requests, replay, tell_notes

pytestmark = pytest.mark.timeout(3600)  # a real model on 2 cores: minutes, not seconds

CI_TURNS = 14
"""Turns enough for the history to outgrow a 4,096-token window and be summarised (35 calls, 21 of them
summaries, in about 10 minutes on 2 cores)."""

REPLY_TOKENS = 48
"""Replies capped short: the conversation is about the prompts; a 135M model's notes-taking replies ramble."""
TRACKING = 0.10
"""Most a planner prompt's cached share on the real server may differ from the scripted server's for the same
prompt: both keep one prompt cache and reuse it up to the first differing token, and only the tokenizers and
chat templates differ."""


@pytest.mark.parametrize("ctx_size", [4096])
def test_the_servers_cache_counts_follow_the_prompts_structure(llama_server, agents_home, make_engine,
                                                               ctx_size,
                                                              caplog, capsys):
    """Turns of ~1,200-character notes told to SmolLM2 on llama-server (one slot, no memory cache beside it,
    as Ollama with OLLAMA_NUM_PARALLEL=1): every call reports the prompt's tokens and those from the cache
    (usage.prompt_tokens_details.cached_tokens), no prompt is cut or refused, and each planner prompt that
    follows another with no summary call between takes from the cache the share the scripted server's model
    of a prompt cache gives the same prompt, within 10 points. The figures are printed."""
    server = llama_server(ctx_size, max_reply=REPLY_TOKENS)
    server.erase_cache()
    configure(agents_home, server, memory={"compact_summarizer": "deterministic"})
    engine = make_engine()
    requests = record_requests(engine.backend)
    caplog.set_level(logging.WARNING, logger="core")
    turns = int(os.environ.get("AGENTOS_REAL_TURNS", CI_TURNS))
    results = tell_notes(engine, turns, check=False)

    calls = list(engine.backend.calls)[-len(requests):]
    scripted = replay(requests, engine.backend.window.num_ctx)
    assert len(calls) == len(scripted) == len(requests) >= turns
    assert all(c.usage.get("prompt_tokens") and "cached_tokens" in c.usage for c in calls)
    problems = [r.getMessage() for r in caplog.records if "cut it" in r.getMessage()
                or "refused" in r.getMessage()]
    assert problems == []
    pairs = [i for i in range(1, len(calls)) if calls[i].tools and calls[i - 1].tools]
    real = {i: calls[i].usage["cached_tokens"] / calls[i].usage["prompt_tokens"] for i in pairs}
    model = {i: scripted[i].cached_share for i in pairs}
    assert pairs, "some planner prompts follow one another"
    off = {i: (round(real[i], 3), round(model[i], 3)) for i in pairs if abs(real[i] - model[i]) > TRACKING}
    assert off == {}, off
    with capsys.disabled():
        print(f"\n{ctx_size} tokens: {sum(r.ok for r in results)} of {turns} runs done, {len(calls)} calls "
              f"({sum(not c.tools for c in calls)} summaries); planner pairs {len(pairs)}: cached share "
              f"median "
              f"{statistics.median(real.values()):.1%} (scripted {statistics.median(model.values()):.1%}); "
              f"evaluated "
              f"per turn {sum(c.usage['evaluated_tokens'] for c in calls) / turns:.0f} of "
              f"{sum(c.usage['prompt_tokens'] for c in calls) / turns:.0f}")
