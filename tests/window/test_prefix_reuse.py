"""Consecutive planner prompts share most of their tokens, so the model server's prompt cache spares
re-evaluating them."""

from __future__ import annotations

import statistics

import pytest

from tests.window.conversation import FACT_TURNS, TURNS, consecutive_pairs, in_run, replies

TARGET = 0.85
"""Median share of a planner prompt that the previous one left in the server's cache, at every window."""
MIN_STEP_SHARE = 0.9
"""Of each step of a run's prompt, from the cache: the step adds its tool call and result to the previous
prompt."""
# LOG.md compaction runs in a background thread, whose SUMMARY entry would enter the memory message at a
# moment that depends on the machine's load: the test keeps it off to stay exact.
CONFIG = "  auto_compact: false\n"


@pytest.mark.parametrize(("context_length", "api"), [
    (4096, "ollama"), (8192, "ollama"), (16384, "ollama"), (131072, "ollama"), (8192, "openai")])
def test_consecutive_planner_prompts_share_most_of_their_tokens(long_conversation, context_length, api,
                                                                capsys):
    """Over the 42-turn conversation (three runs of two steps: a save_fact call, then the answer), the planner
    prompts that follow one another with no summary call between take a median of at least 85% of their tokens
    from the server's cache, at every window: a prompt repeats the previous one (its earlier turns and memory
    message) and adds the reply and the new turn, so only those are evaluated, as the server's count reports.
    Only a compaction (which replaces older turns with summaries) and NOW's first resume hint (the second
    turn: the memory message is read again) lay the prompt's start again; a run's second step takes at least
    90% from the cache; no compaction comes between the steps of a run, and LCM compacts every few turns."""
    server, engine = long_conversation(context_length, CONFIG, replies(), api=api)

    pairs = consecutive_pairs(server)
    planner = server.planner_prompts()
    assert len(planner) == TURNS + len(FACT_TURNS)
    compactions = len(planner) - 1 - len(pairs)
    assert compactions <= TURNS // 2, "LCM compacts every few turns"
    shares = [after.cached_share for _, after in pairs]
    assert statistics.median(shares) >= TARGET, [round(s, 3) for s in shares]
    extended = [(before, after) for before, after in pairs if after.rendered.startswith(before.rendered)]
    assert len(pairs) - len(extended) <= 1, (
        "the prompt's start is laid again only when NOW's resume hint appears"
    )
    for before, after in extended:
        assert after.cached_tokens >= before.rendered_tokens - 1, (before.rendered[-2000:],
                                                                   after.rendered[-2000:])
    steps = [after.cached_share for before, after in pairs if in_run((before, after))]
    assert len(steps) == len(FACT_TURNS), "no compaction comes between the two steps of a run"
    assert min(steps) >= MIN_STEP_SHARE, [round(s, 3) for s in steps]
    assert server.truncated == []
    last = planner[-1]
    assert last.evaluated == last.rendered_tokens - last.cached_tokens
    if api == "ollama":  # prompt_eval_count: the tokens evaluated
        assert engine.backend.meter.last.reported == last.evaluated
    else:  # usage: the whole prompt, and the part from the cache
        assert engine.backend.meter.last.reported == last.rendered_tokens
        assert engine.backend.calls[-1].usage["cached_tokens"] == last.cached_tokens
    every = [p.cached_share for p in planner[1:]]
    with capsys.disabled():
        print(f"\n{context_length} tokens ({api}): consecutive planner prompts' cached share median "
              f"{statistics.median(shares):.1%} (min {min(shares):.1%}, {len(pairs)} pairs); every planner "
              "prompt after the first, summary calls between taking the one cache slot: median "
              f"{statistics.median(every):.1%}; {compactions} compactions")
