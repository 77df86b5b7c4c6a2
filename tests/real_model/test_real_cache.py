"""The conversation of the window tests on a real server: its own counts of the prompt tokens it took from its
cache and evaluated, call by call, beside what the scripted server reports for the same prompts.

The 42 turns run at 8,192 and at 4,096 tokens (``AGENTOS_REAL_TURNS`` tells fewer); ``scripts/bench_engine.py
--backend openai`` measures the same on any server (its figures are in docs/benchmarks.md)."""

from __future__ import annotations

import logging
import os
import resource
import statistics
import time

import pytest

from tests.real_model.conftest import configure
from tests.window.conversation import TURNS, record_requests, replay, tell_notes

pytestmark = pytest.mark.timeout(3600)  # a real model on 2 cores: minutes, not seconds

REPLY_TOKENS = 48
"""Replies capped short: the conversation is about the prompts; a 135M model's notes-taking replies ramble."""
CACHE_RAM_MIB = 256
"""llama-server's ``--cache-ram``: prompts kept in memory beside the one slot, so that a summary call does not
cost the next planner prompt its cache (each of SmolLM2's tokens takes 23 KB of cache: a 8,192-token prompt
about 180 MB)."""
TARGET = 0.85
"""Median share of a planner prompt that the server took from its cache, over those that follow another
planner prompt with no summary call between."""
TRACKING = 0.10
"""Most a planner prompt's cached share on the real server may differ from the scripted server's for the same
prompt: both reuse the previous prompt up to the first differing token, and only the tokenizers and chat
templates differ."""


@pytest.mark.parametrize("ctx_size", [8192, 4096])
def test_the_servers_cache_counts_follow_the_prompts_structure(llama_server, agents_home, make_engine,
                                                               ctx_size,
                                                              caplog, capsys):
    """The 42 turns of ~1,200-character notes told to SmolLM2 on llama-server: every call reports the prompt's
    tokens and those from the cache (usage.prompt_tokens_details.cached_tokens), no prompt is cut or refused,
    the planner prompts that follow one another with no summary call between take a median of at least 85%
    from the server's cache, and each of them the share the scripted server's model of a prompt cache gives
    the same prompt, within 10 points. The figures are printed."""
    server = llama_server(ctx_size, cache_ram=CACHE_RAM_MIB, max_reply=REPLY_TOKENS)
    server.erase_cache()
    configure(agents_home, server, memory={"compact_summarizer": "deterministic"})
    engine = make_engine()
    requests = record_requests(engine.backend)
    caplog.set_level(logging.WARNING, logger="core")
    turns = int(os.environ.get("AGENTOS_REAL_TURNS", TURNS))
    started, server_cpu, own_cpu = time.monotonic(), server.cpu_seconds(), _cpu_seconds()

    def progress(turn: int) -> None:
        if turn % 6 == 0 or turn == turns:
            with capsys.disabled():
                print(f"\n{ctx_size} tokens: turn {turn} of {turns}, {len(requests)} calls, "
                      f"{time.monotonic() - started:.0f} s", end="")

    results = tell_notes(engine, turns, check=False, progress=progress)
    elapsed = time.monotonic() - started
    server_cpu, own_cpu = server.cpu_seconds() - server_cpu, _cpu_seconds() - own_cpu

    calls = list(engine.backend.calls)[-len(requests):]
    scripted = replay(requests, engine.backend.window.num_ctx)
    assert len(calls) == len(scripted) == len(requests) >= turns
    assert all(c.usage.get("prompt_tokens") and "cached_tokens" in c.usage for c in calls)
    problems = [r.getMessage() for r in caplog.records if "cut it" in r.getMessage()
                or "refused" in r.getMessage()]
    assert problems == []
    share = [c.usage["cached_tokens"] / c.usage["prompt_tokens"] for c in calls]
    pairs = [i for i in range(1, len(calls)) if calls[i].tools and calls[i - 1].tools]
    planner = [i for i in range(len(calls)) if calls[i].tools][1:]
    assert pairs, "some planner prompts follow one another"
    real, model = (statistics.median(share[i] for i in pairs),
                   statistics.median(scripted[i].cached_share for i in pairs))
    off = {i: (round(share[i], 3), round(scripted[i].cached_share, 3)) for i in pairs
           if abs(share[i] - scripted[i].cached_share) > TRACKING}
    with capsys.disabled():
        print(f"\n{ctx_size} tokens: {sum(r.ok for r in results)} of {turns} runs done, {len(calls)} calls "
              f"({sum(not c.tools for c in calls)} summaries) in {elapsed:.0f} s (CPU: the server "
              f"{server_cpu:.0f} s, the engine {own_cpu:.0f} s); planner pairs {len(pairs)}: cached share "
              f"median {real:.1%}, min {min(share[i] for i in pairs):.1%} (scripted {model:.1%}); every "
              f"planner prompt after the first: median {statistics.median(share[i] for i in planner):.1%}; "
              f"evaluated per turn {sum(c.usage['evaluated_tokens'] for c in calls) / turns:.0f} of "
              f"{sum(c.usage['prompt_tokens'] for c in calls) / turns:.0f}, generated "
              f"{sum(c.usage.get('completion_tokens', 0) for c in calls) / turns:.0f}")
    assert off == {}, off
    assert real >= TARGET, [round(share[i], 3) for i in pairs]


def _cpu_seconds() -> float:
    """CPU time of this process so far: the engine's work, whatever else the machine runs."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
