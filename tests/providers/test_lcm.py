"""LCM-specific rules: lineage, chunk caps, escalation, guards, search escaping, switching providers."""

from __future__ import annotations

import time

import pytest

from core.config import ProviderConfig
from core.memory.provider import (
    CompactionMode,
    Message,
    SearchQuery,
    SearchScope,
    Session,
    SummarizeOptions,
)
from core.errors import SummaryNotFoundError, ValidationError
from core.llm import estimate_tokens
from core.plugins.memory import open_provider
from core.plugins.memory.lcm import DeterministicSummarizer, LCMProvider, LLMSummarizer
from core.plugins.memory.lcm.summarizer import build_prompt
from tests.providers.conftest import SMALL_CONFIG, conversation, same


def fill(provider, session, turns: int) -> list[Message]:
    sent = []
    for messages in conversation(turns):
        provider.append(session, messages)
        sent += messages
    return sent


def first_leaf(lcm) -> str:
    return lcm.db.conn.execute("SELECT id FROM ctx_summaries WHERE kind = 'leaf' ORDER BY rowid LIMIT "
                               "1").fetchone()[0]


def test_expand_of_condensed_returns_its_children(lcm, session):
    """A condensed summary expands to the summaries it was built from, and they name it as parent."""
    fill(lcm, session, 60)
    result = lcm.compact(session, CompactionMode.FULL)
    assert result.condensed_summaries_created > 0
    top = next(m.summary_id for m in lcm.assemble(session, 100_000, 4) if m.summary_id)
    described = lcm.describe(top)
    assert described.kind == "condensed" and described.child_ids
    children = lcm.expand(top, 100_000).children
    assert [c.id for c in children] == list(described.child_ids)
    for child in children:
        assert top in lcm.describe(child.id).parent_ids
    assert described.descendant_count == sum(lcm.describe(c.id).descendant_count for c in children)


def test_expand_of_leaf_returns_source_messages(lcm, session):
    """A leaf summary expands to its source messages, byte for byte, and describe lists them."""
    sent = fill(lcm, session, 8)
    lcm.compact(session, CompactionMode.INCREMENTAL)
    leaf = first_leaf(lcm)
    expanded = lcm.expand(leaf, 100_000)
    assert expanded.messages and lcm.describe(leaf).child_ids == tuple(m.id for m in expanded.messages)
    assert all(same(a, b.message) for a, b in zip(sent, expanded.messages))


def test_expand_respects_token_cap(lcm, session):
    """Expand stops at the token cap (keeping at least one child) and says it was truncated."""
    fill(lcm, session, 20)
    lcm.compact(session, CompactionMode.INCREMENTAL)
    leaf = first_leaf(lcm)
    capped = lcm.expand(leaf, 30)
    assert capped.truncated and 1 <= len(capped.messages) < len(lcm.expand(leaf, 100_000).messages)


def test_summaries_in_context_name_their_id(lcm, session):
    """Assembled summaries are messages whose text names the summary id, so the model can expand it."""
    fill(lcm, session, 20)
    lcm.compact(session, CompactionMode.FULL)
    rendered = [m for m in lcm.assemble(session, 100_000, 4) if m.summary_id]
    assert rendered and all(f"[summary {m.summary_id}" in m.content for m in rendered)


def test_unknown_summary_and_other_session(lcm, session):
    """Describe of an unknown id, or of another session's summary, is SummaryNotFoundError."""
    fill(lcm, session, 10)
    lcm.compact(session, CompactionMode.INCREMENTAL)
    leaf = first_leaf(lcm)
    with pytest.raises(SummaryNotFoundError):
        lcm.describe("sum_missing")
    with pytest.raises(SummaryNotFoundError):
        lcm.expand(leaf, 100, session=Session("someone-else"))


def test_leaf_chunks_are_token_capped(db_path, session):
    """No leaf summary covers more source tokens than the chunk cap (plus one tool result)."""
    config = ProviderConfig(fresh_tail=2, leaf_chunk_size=3, leaf_chunk_max_tokens=120)
    provider = LCMProvider(db_path, summarizer=DeterministicSummarizer(), config=config)
    fill(provider, session, 30)
    provider.compact(session, CompactionMode.INCREMENTAL)
    rows = provider.db.conn.execute(
        "SELECT SUM(m.token_count) FROM ctx_summary_messages sm JOIN ctx_messages m ON m.id = sm.message_id"
        " GROUP BY sm.summary_id").fetchall()
    assert len(rows) > 3 and max(r[0] for r in rows) <= 120 + 20
    provider.close()


def test_no_summarizer_means_no_compaction(db_path, session):
    """Without a summarizer nothing is compacted and no summary (empty or not) is written."""
    provider = LCMProvider(db_path, summarizer=None, config=SMALL_CONFIG)
    fill(provider, session, 20)
    assert not provider.needs_compaction(session, budget=10)
    result = provider.compact(session, CompactionMode.FULL)
    assert result.stopped == "no_summarizer" and provider.stats(session).summary_count == 0
    provider.close()


def test_fallback_summarizes_the_source(session):
    """When the model stays too long twice, the deterministic extract of the SOURCE is used, not the model's
    text."""
    prompts = []
    def verbose(prompt: str) -> str:
        prompts.append(prompt)
        return "MODEL " * 2000
    source = "\n".join(f"[user] Fact {n} is important. Filler words follow here." for n in range(40))
    summary = LLMSummarizer(verbose).summarize(source, SummarizeOptions(target_tokens=50))
    assert len(prompts) == 2 and "MODEL" not in summary and "Fact 0 is important." in summary
    assert estimate_tokens(summary) <= 75 and "Compress" in prompts[1]


def test_llm_summarizer_accepts_short_answer():
    """A model answer within 150% of the target is used as is, after one call."""
    calls = []
    summarizer = LLMSummarizer(lambda p: calls.append(p) or "The user wants tea.")
    assert summarizer.summarize("x " * 400, SummarizeOptions()) == "The user wants tea."
    assert len(calls) == 1 and "x x" in calls[0]


def test_prompts_are_markdown_files():
    """Prompts come from the Markdown files and carry the text and the target."""
    prompt = build_prompt("hello there",
                          SummarizeOptions(is_condensed=True, target_tokens=77, previous="before"))
    assert "hello there" in prompt and "77" in prompt and "before" in prompt and "{{" not in prompt


def test_deterministic_summary_is_short_extract():
    """The deterministic summary is a non-empty extract within its target, even for blank input."""
    text = "\n".join(f"Line {n} says something. And more." for n in range(200))
    summary = DeterministicSummarizer().summarize(text, SummarizeOptions(target_tokens=60))
    assert summary and estimate_tokens(summary) <= 61 and "Line 0 says something." in summary
    assert DeterministicSummarizer().summarize("  \n ", SummarizeOptions()) == "(no text)"


def test_search_escapes_special_characters(lcm, session):
    """Search text with quotes, wildcards and operators is matched literally, never as syntax."""
    lcm.append(session, [Message("user", 'path is 100% "done" with under_score AND NOT* (x)')])
    lcm.append(session, [Message("user", "unrelated text")])
    for text in ('100%', '"done"', "under_score", "AND NOT*", "(x", "'; DROP TABLE ctx_messages; --"):
        hits = lcm.search(session, SearchQuery(text, SearchScope.MESSAGES))
        assert all("unrelated" not in h.content for h in hits)
    assert lcm.search(session, SearchQuery("under_score"))
    with pytest.raises(ValidationError):
        lcm.search(session, SearchQuery("%%% ***"))


def test_search_scopes(lcm, session):
    """Scope messages finds only messages; scope summaries only summaries."""
    fill(lcm, session, 20)
    lcm.compact(session, CompactionMode.INCREMENTAL)
    msgs = lcm.search(session, SearchQuery("Question", SearchScope.MESSAGES))
    sums = lcm.search(session, SearchQuery("Question", SearchScope.SUMMARIES))
    assert msgs and all(h.source_type == "message" for h in msgs)
    assert sums and all(h.source_type == "summary" and h.source_id.startswith("sum_") for h in sums)


def test_changelog_is_ordered_by_time(lcm):
    """The changelog lists writes newest first, in the order they happened."""
    for n in range(12):
        lcm.set_profile("ada", "finn", f"v{n}")
    assert ([e.after_text for e in lcm.read_changelog("ada", "finn", limit=5)]
            == [f"v{n}" for n in (11, 10, 9, 8, 7)])


def test_round_limit_stops_full_compaction(db_path, session):
    """A full compaction runs no more rounds than configured."""
    config = ProviderConfig(fresh_tail=2, leaf_chunk_size=2, leaf_chunk_max_tokens=150, leaf_target_tokens=30,
                            max_rounds=1)
    provider = LCMProvider(db_path, summarizer=DeterministicSummarizer(), config=config)
    fill(provider, session, 40)
    result = provider.compact(session, CompactionMode.FULL)
    assert result.rounds == 1 and result.stopped == "round_limit"
    provider.close()


def test_deadline_stops_compaction(db_path, session):
    """A compaction starts no new summary after its deadline: each takes at least 0.15 s, so no more than
    four start before a deadline of 0.3 s, however slow the machine (no bound on the time itself)."""
    class Slow(DeterministicSummarizer):
        def summarize(self, text, options):
            time.sleep(0.15)
            return super().summarize(text, options)

    config = ProviderConfig(fresh_tail=2, leaf_chunk_size=2, leaf_chunk_max_tokens=150, leaf_target_tokens=30,
                            deadline_s=0.3)
    provider = LCMProvider(db_path, summarizer=Slow(), config=config)
    fill(provider, session, 40)
    result = provider.compact(session, CompactionMode.FULL)
    assert result.stopped == "deadline" and result.summarizer_calls <= 4
    provider.close()


def test_no_progress_guard(db_path, session):
    """When a round does not shrink the context, full compaction stops instead of looping."""
    class Barely:
        def summarize(self, text, options):
            return text[: int(len(text) * 0.97)]

    config = ProviderConfig(fresh_tail=2, leaf_chunk_size=2, leaf_chunk_max_tokens=200, max_rounds=50)
    provider = LCMProvider(db_path, summarizer=Barely(), config=config)
    fill(provider, session, 6)
    result = provider.compact(session, CompactionMode.FULL)
    assert result.stopped in ("no_progress", "done") and result.rounds < 50
    provider.close()


def test_compaction_never_grows_the_context(db_path, session):
    """A summary that would cost more context than the items it replaces is not committed."""
    config = ProviderConfig(fresh_tail=2, leaf_chunk_size=2, leaf_chunk_max_tokens=40)
    provider = LCMProvider(db_path, summarizer=DeterministicSummarizer(), config=config)
    fill(provider, session, 20)
    result = provider.compact(session, CompactionMode.FULL)
    assert result.tokens_after <= result.tokens_before
    provider.close()


def test_switching_providers_keeps_messages(db_path, session):
    """Messages appended through Simple are assembled by LCM and vice versa."""
    simple = open_provider("simple", db_path, config=SMALL_CONFIG)
    sent = fill(simple, session, 3)
    lcm = open_provider(None, db_path, summarizer=DeterministicSummarizer(), config=SMALL_CONFIG)
    assert lcm.name == "lcm"
    more = conversation(2)[1]
    lcm.append(session, more)
    assert all(same(a, b) for a, b in zip(sent + more, simple.assemble(session, 100_000, 100)))
    assert all(same(a, b) for a, b in zip(sent + more, lcm.assemble(session, 100_000, 100)))
    simple.close()
    lcm.close()


def test_unknown_provider_name_is_config_error(db_path):
    """open_provider names the valid providers when given an unknown one."""
    from core.errors import ConfigError
    with pytest.raises(ConfigError, match="lcm, simple"):
        open_provider("fancy", db_path)


def test_tool_results_not_orphaned_after_compaction(lcm, session):
    """After compaction, tool results in context still follow their call at every budget and tail."""
    fill(lcm, session, 40)
    lcm.compact(session, CompactionMode.INCREMENTAL)
    for budget in range(0, 900, 53):
        for tail in (0, 1, 2, 3, 7):
            got = lcm.assemble(session, budget, tail)
            for index, message in enumerate(got):
                if message.role == "tool":
                    assert index and (got[index - 1].tool_calls or got[index - 1].role == "tool")


def test_a_provider_added_to_the_registry_opens_by_name(db_path, monkeypatch):
    """One line in PROVIDERS makes a provider openable by provider.name (and part of the conformance
    suite)."""
    from core.errors import ConfigError
    from core.plugins.memory import PROVIDERS
    from core.plugins.memory.simple import SimpleProvider
    from tests.providers.conftest import PROVIDER_FACTORIES

    assert sorted(PROVIDER_FACTORIES) == sorted(PROVIDERS)  # the suite runs what the code can open
    monkeypatch.setitem(PROVIDERS, "window", "core.plugins.memory.simple:SimpleProvider")
    opened = open_provider(None, db_path, config=ProviderConfig(name="window"))
    assert isinstance(opened, SimpleProvider)
    opened.close()
    with pytest.raises(ConfigError, match="lcm, simple, window"):
        open_provider("fancy", db_path)
