"""Consecutive planner prompts share most of their text, so the model server's prompt cache spares re-evaluating it."""

from __future__ import annotations

import pytest

from tests.ollama_server import Prompt, count_tokens
from tests.window.conversation import FACT_TURNS, TURNS, consecutive_pairs, in_run, replies

MIN_SHARE = 0.885
"""Of each step of a run's prompt, from the cache (87.9% when the memory showed the run's own log entries)."""
# LOG.md compaction runs in a background thread, whose SUMMARY entry would enter the memory message at a
# moment that depends on the machine's load: the test keeps it off to stay exact.
CONFIG = "  auto_compact: false\n"


def before_memory(prompt: Prompt) -> int:
    """Tokens of the prompt's rendering before its memory message (which comes right before the turn)."""
    rendered = prompt.rendered
    return count_tokens(rendered[: rendered.rindex("# Memory")].rstrip())


@pytest.mark.parametrize(("context_length", "api"), [(8192, "ollama"), (131072, "ollama"), (8192, "openai")])
def test_every_prompt_between_compactions_reuses_all_the_previous_one_held_but_its_memory(
        long_conversation, context_length, api):
    """Over the 42-turn conversation (three runs of two steps: a save_fact call, then the answer), every
    planner prompt that follows another without a compaction between takes from the server's cache all
    that the previous one held before its memory message, which comes right before the turn: only the
    memory, the turn and what follows are evaluated, and the server's count reports just those. Within a
    run the memory changes only where the step changed it (the fact saved) and at least 88.5% of each prompt
    comes from the cache; no compaction comes between the steps of a run, and on an 8k model LCM compacts
    every few turns, not every turn."""
    server, engine = long_conversation(context_length, CONFIG, replies(), api=api)

    pairs = consecutive_pairs(server)
    planner = server.planner_prompts()
    assert len(planner) == TURNS + len(FACT_TURNS)
    compactions = len(planner) - 1 - len(pairs)
    assert compactions <= TURNS // 3, "LCM compacts every few turns"
    for before, after in pairs:
        assert after.cached_tokens >= before_memory(before) - 2, (before.rendered[-3000:], after.rendered[-3000:])
    steps = [after.cached_share for before, after in pairs if in_run((before, after))]
    assert len(steps) == len(FACT_TURNS), "no compaction comes between the two steps of a run"
    assert min(steps) >= MIN_SHARE, [round(s, 3) for s in steps]
    assert server.truncated == []
    last = planner[-1]
    assert last.evaluated == last.rendered_tokens - last.cached_tokens
    if api == "ollama":  # prompt_eval_count: the tokens evaluated
        assert engine.backend.meter.last.reported == last.evaluated
    else:  # usage: the whole prompt, and the part from the cache
        assert engine.backend.meter.last.reported == last.rendered_tokens
        assert engine.backend.calls[-1].usage["cached_tokens"] == last.cached_tokens
