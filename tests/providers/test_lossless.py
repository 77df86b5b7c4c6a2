"""The LCM guarantee as a property: after full compaction every original message is reachable exactly once."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.config import ProviderConfig
from core.memory.provider import CompactionMode, Message, Session, ToolCall
from core.plugins.memory.lcm import DeterministicSummarizer, LCMProvider

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=120)


@st.composite
def turns(draw) -> list[list[Message]]:
    """Random turns: user text, sometimes a tool call with its result, an assistant reply."""
    result = []
    for n in range(draw(st.integers(1, 40))):
        turn = [Message(draw(st.sampled_from(["user", "system"])), draw(TEXT))]
        if draw(st.booleans()):
            args = draw(st.dictionaries(st.text(min_size=1, max_size=5), st.integers() | TEXT, max_size=3))
            turn.append(Message("assistant", draw(TEXT), tool_calls=(ToolCall(f"tool{n}", args),)))
            turn.append(Message("tool", draw(TEXT), tool_name=f"tool{n}"))
        turn.append(Message("assistant", draw(TEXT)))
        result.append(turn)
    return result


def expand_all(provider: LCMProvider, message: Message) -> list[Message]:
    """The original messages behind one context message, by expanding summaries recursively."""
    if not message.summary_id:
        return [message]
    return expand_id(provider, message.summary_id)


def expand_id(provider: LCMProvider, summary_id: str) -> list[Message]:
    result = provider.expand(summary_id, 10**9)
    assert not result.truncated
    if result.messages:
        return [m.message for m in result.messages]
    return [m for child in result.children for m in expand_id(provider, child.id)]


def key(message: Message) -> tuple:
    return (message.role, message.content, message.tool_calls, message.tool_name)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversation=turns(),
    fresh_tail=st.integers(0, 8),
    chunk=st.integers(2, 10),
    chunk_tokens=st.integers(20, 400),
    budget=st.integers(0, 3000),
)
def test_every_message_reachable_exactly_once(conversation, fresh_tail, chunk, chunk_tokens, budget):
    """After full compaction, expanding the context yields every original message once, in order,
    byte-identical."""
    config = ProviderConfig(fresh_tail=fresh_tail, leaf_chunk_size=chunk, leaf_chunk_max_tokens=chunk_tokens,
                            leaf_target_tokens=40, condensed_target_tokens=60)
    with tempfile.TemporaryDirectory() as folder:
        provider = LCMProvider(Path(folder) / "memory.db", summarizer=DeterministicSummarizer(),
                               config=config)
        session = Session("s")
        original = []
        for turn in conversation:
            provider.append(session, turn)
            original += turn
        provider.compact(session, CompactionMode.FULL)

        everything = [m for item in provider.assemble(session, 10**9,
                                                      fresh_tail) for m in expand_all(provider, item)]
        assert [key(m) for m in everything] == [key(m) for m in original]

        # Within a budget, the context is a suffix of the history and still holds the fresh tail.
        window = [m for item in provider.assemble(session, budget, fresh_tail)
                  for m in expand_all(provider, item)]
        assert [key(m) for m in window] == [key(m) for m in original[len(original) - len(window):]]
        assert len(window) >= min(fresh_tail, len(original))
        provider.close()
