"""Consecutive planner prompts share most of their text, so the model server's prompt cache spares re-evaluating it."""

from __future__ import annotations

import pytest

from tests.ollama_server import Prompt, count_tokens, tool_call
from tests.window.conversation import TURNS, consecutive_pairs

MIN_SHARE = 0.85
FACT_TURNS = (5, 17, 30)
"""Turns in which the model first saves a fact, then answers: two planner calls in one run."""
# LOG.md compaction runs in a background thread, whose SUMMARY entry would enter the memory message at a
# moment that depends on the machine's load: the test keeps it off to stay exact.
CONFIG = "  auto_compact: false\n"


def script() -> tuple:
    """The planner's replies, in order: "Noted.", except in ``FACT_TURNS`` a save_fact call first."""
    replies: list = []
    for turn in range(1, max(FACT_TURNS) + 1):
        if turn in FACT_TURNS:
            replies.append(tool_call("save_fact", key=f"project_{turn}", value=f"harbour {turn}", category="general"))
        replies.append("Noted.")
    return tuple(replies)


def before_memory(prompt: Prompt) -> int:
    """Tokens of the prompt's rendering before its memory message (the last message)."""
    rendered = prompt.rendered
    return count_tokens(rendered[: rendered.rindex("# Memory")].rstrip())


@pytest.mark.parametrize("context_length", [8192, 131072])
def test_every_prompt_between_compactions_reuses_all_the_previous_one_held_but_its_memory(
        long_conversation, context_length):
    """Over the 42-turn conversation (three runs of two steps: a save_fact call, then the answer), every
    planner prompt that follows another without a compaction between takes from the server's cache all
    that the previous one held before its memory message, which comes last, and so at least 85% of its
    tokens; prompt_eval_count reports only the rest. On an 8k model LCM compacts every few turns, not every turn."""
    server, engine = long_conversation(context_length, CONFIG, script())

    pairs = consecutive_pairs(server)
    planner = server.planner_prompts()
    assert len(planner) == TURNS + len(FACT_TURNS)
    compactions = len(planner) - 1 - len(pairs)
    assert compactions <= len(planner) // 2, "LCM compacts less often than every other turn"
    for before, after in pairs:
        assert after.cached_tokens >= before_memory(before) - 2, (before.rendered[-3000:], after.rendered[-3000:])
    shares = [after.cached_share for _, after in pairs]
    assert min(shares) >= MIN_SHARE, [round(s, 3) for s in shares]
    in_runs = [after for _, after in pairs if after.messages[-2].get("role") == "tool"]
    assert len(in_runs) == len(FACT_TURNS), "no compaction comes between the two steps of a run"
    assert server.truncated == []
    last = planner[-1]
    assert last.evaluated == last.rendered_tokens - last.cached_tokens
    assert engine.backend.meter.last.reported == last.evaluated
