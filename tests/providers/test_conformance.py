"""The provider contract: every rule here holds for every provider in PROVIDER_FACTORIES."""

from __future__ import annotations

import pytest

from core.errors import SessionNotFoundError, ValidationError
from core.memory.provider import (
    ChangelogReader,
    Compactor,
    CompactionMode,
    ConstraintStore,
    Explorer,
    ListOptions,
    Message,
    ProfileStore,
    Provider,
    Reviewer,
    SearchQuery,
    Searcher,
    Session,
    SessionInfo,
    SessionManager,
    SessionSnapshotStore,
    SessionStats,
    VersionedProfileStore,
    build_tool,
    capabilities,
)
from tests.providers.conftest import conversation, same, turn


def fill(provider, session, turns: int = 12) -> list[Message]:
    sent = []
    for messages in conversation(turns):
        provider.append(session, messages)
        sent += messages
    return sent


def needs(provider, capability) -> None:
    if not isinstance(provider, capability):
        pytest.skip(f"{provider.name} has no {capability.__name__}")


def test_name(provider):
    """A provider has a short, non-empty, lower-case name and satisfies the Provider protocol."""
    assert isinstance(provider, Provider)
    assert provider.name and provider.name == provider.name.lower()


def test_bootstrap_is_idempotent(provider, session):
    """Bootstrapping twice creates one empty conversation and no messages."""
    provider.bootstrap(session)
    provider.bootstrap(session)
    assert provider.stats(session).message_count == 0
    assert provider.assemble(session, 1000, 4) == []


def test_append_keeps_order(provider, session):
    """Messages come back in the order they were appended, unchanged."""
    sent = fill(provider, session, 5)
    got = provider.assemble(session, 10_000, 100)
    assert len(got) == len(sent) and all(same(a, b) for a, b in zip(sent, got))
    assert all(m.created_at for m in got)


def test_fresh_tail_is_honoured_over_budget(provider, session):
    """The last fresh_tail messages are returned even when the budget is zero."""
    sent = fill(provider, session, 10)
    got = provider.assemble(session, 0, 4)
    assert len(got) >= 4
    assert all(same(a, b) for a, b in zip(sent[-len(got):], got))


def test_fresh_tail_with_fewer_messages_than_tail(provider, session):
    """A session with fewer messages than the tail returns all of them, whatever the budget."""
    provider.append(session, turn(0))
    got = provider.assemble(session, 0, 20)
    assert [m.content for m in got] == [m.content for m in turn(0)]


def test_budget_is_honoured(provider, session):
    """Beyond the fresh tail, the assembled context stays within the budget."""
    fill(provider, session, 20)
    for budget in (0, 50, 200, 800):
        got = provider.assemble(session, budget, 0)
        assert sum(m.tokens() for m in got) <= budget


def test_tool_results_never_orphaned(provider, session):
    """Every tool result in assembled context follows the assistant message that called it."""
    fill(provider, session, 30)
    for budget in range(0, 600, 37):
        for tail in (0, 1, 2, 3, 5):
            got = provider.assemble(session, budget, tail)
            for index, message in enumerate(got):
                if message.role == "tool":
                    before = got[index - 1] if index else None
                    assert before is not None and (before.tool_calls or before.role == "tool")


def test_stats_count_messages(provider, session):
    """Stats count the stored messages, their tokens and time range."""
    sent = fill(provider, session, 4)
    stats = provider.stats(session)
    assert stats.message_count == len(sent)
    assert stats.token_count == sum(m.tokens() for m in sent)
    assert stats.oldest_at <= stats.newest_at and stats.oldest_at


def test_unknown_session_has_zero_stats(provider):
    """An unknown session gives zero stats and an empty context, not an error."""
    ghost = Session("nobody")
    assert provider.stats(ghost) == SessionStats()
    assert provider.assemble(ghost, 1000, 10) == []


def test_invalid_message_stores_nothing(provider, session):
    """A turn with one malformed message is refused whole with ValidationError."""
    provider.append(session, turn(0))
    bad = Message("user", "ok")
    object.__setattr__(bad, "content", "bad \udcff surrogate")
    with pytest.raises(ValidationError):
        provider.append(session, [Message("user", "first"), bad])
    with pytest.raises(ValidationError):
        Message("robot", "hi")
    assert provider.stats(session).message_count == len(turn(0))


def test_messages_and_ids_over_the_documented_limits_are_refused(provider, session):
    """A message over MAX_MESSAGE_BYTES, an id over MAX_ID_CHARS or with a control character: ValidationError,
    nothing stored."""
    from core.memory.provider.messages import MAX_ID_CHARS, MAX_MESSAGE_BYTES

    provider.append(session, turn(0))
    with pytest.raises(ValidationError, match="1 MiB"):
        provider.append(session, [Message("user", "x" * (MAX_MESSAGE_BYTES + 1))])
    with pytest.raises(ValidationError, match="1 MiB"):
        Message.from_ollama({"role": "assistant", "tool_calls": [
            {"function": {"name": "write_file", "arguments": {"content": "y" * MAX_MESSAGE_BYTES}}}]})
    for bad in (Session("s" * (MAX_ID_CHARS + 1)), Session("finn:cli:\x00main"),
                Session(session.id, user_id="u" * (MAX_ID_CHARS + 1)), Session(session.id, channel="cli\n")):
        with pytest.raises(ValidationError):
            provider.append(bad, turn(1))
    provider.append(session, [Message("user", "z" * (MAX_MESSAGE_BYTES - 10))])  # just under: stored
    assert provider.stats(session).message_count == len(turn(0)) + 1


def test_bad_window_arguments(provider, session):
    """A negative budget or tail is a ValidationError."""
    with pytest.raises(ValidationError):
        provider.assemble(session, -1, 2)
    with pytest.raises(ValidationError):
        provider.assemble(session, 10, -2)


def test_ollama_round_trip(provider, session):
    """Ollama chat dicts appended come back as the same dicts."""
    dicts = [
        {"role": "user", "content": "weather in Oslo?"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Oslo"}}}]},
        {"role": "tool", "content": "4°C, rain", "tool_name": "weather"},
        {"role": "assistant", "content": "It is 4°C and raining."},
    ]
    provider.append(session, [Message.from_ollama(d) for d in dicts])
    assert [m.to_ollama() for m in provider.assemble(session, 1000, 10)] == dicts


def test_close_twice(provider):
    """close() may be called twice."""
    provider.close()
    provider.close()


def test_tool_matches_capabilities(provider):
    """The memory tool offers status plus exactly the actions the provider's capabilities allow."""
    tool = build_tool(provider)
    caps = capabilities(provider)
    assert tool.parameters["properties"]["action"]["enum"] == list(tool.actions)
    assert "status" in tool.actions
    assert ("search" in tool.actions) == ("searcher" in caps)
    assert ("expand" in tool.actions) == ("explorer" in caps)
    assert ("profile_update" in tool.actions) == ("profile" in caps)
    assert ("constraint_add" in tool.actions) == ("constraints" in caps)


# -- one spec per capability -----------------------------------------------------------


def test_profile_store(provider):
    """Profile and soul are stored per (user, agent) and replaced whole; unset reads as ""."""
    needs(provider, ProfileStore)
    assert provider.get_profile("ada", "finn") == ""
    provider.set_profile("ada", "finn", "likes tea")
    provider.set_agent_soul("ada", "finn", "calm and precise")
    provider.set_profile("ada", "finn", "likes coffee")
    assert provider.get_profile("ada", "finn") == "likes coffee"
    assert provider.get_agent_soul("ada", "finn") == "calm and precise"
    assert provider.get_profile("bob", "finn") == "" and provider.get_profile("ada", "other") == ""


def test_session_manager(provider, session):
    """Session info is saved, loaded, listed with filters; history is the full message list."""
    needs(provider, SessionManager)
    sent = fill(provider, session, 3)
    info = provider.load_info(session.id)
    assert info.title.startswith("Question 0") and info.agent_id == "finn"
    provider.save_info(SessionInfo("other", agent_id="finn", user_id="bob", title="t", archived=True))
    assert [i.id for i in provider.list_info(ListOptions(agent_id="finn"))] == [session.id]
    assert len(provider.list_info(ListOptions(include_archived=True))) == 2
    assert all(same(a, b) for a, b in zip(sent, provider.load_history(session.id)))
    with pytest.raises(SessionNotFoundError):
        provider.load_info("missing")


def test_compactor(provider, session):
    """Compaction shrinks the context below its size before, and needs_compaction sees the threshold."""
    needs(provider, Compactor)
    fill(provider, session, 30)
    before = provider.stats(session).context_tokens
    assert provider.needs_compaction(session, budget=before, threshold=0.5)
    result = provider.compact(session, CompactionMode.FULL)
    assert result.tokens_after < before and result.leaf_summaries_created > 0
    assert provider.stats(session).context_tokens == result.tokens_after


def test_searcher(provider, session):
    """Search finds the message holding all the words, best first, with a marked snippet."""
    needs(provider, Searcher)
    fill(provider, session, 10)
    hits = provider.search(session, SearchQuery("module m7", limit=5))
    assert hits and "m7" in hits[0].content and "[" in hits[0].content
    assert provider.search(Session("nobody"), SearchQuery("module")) == []


def test_search_scores_are_a_share_of_the_best_possible(provider, session):
    """A search score is BM25 as a share of the most the words could score: in [0, 1], best first, the
    same for any query and database (a text of average length holding each word once: 1 / 2.2), never
    collapsed to ~1e-6 by words found in every message."""
    needs(provider, Searcher)
    provider.append(session, [Message("user", "apple one"), Message("assistant", "apple two"),
                              Message("user", "apple six")])
    hits = provider.search(session, SearchQuery("APPLE", limit=5))
    assert len(hits) == 3 and all(hit.score == pytest.approx(1 / 2.2) for hit in hits)
    provider.append(session, [Message("user", "apple apple apple pie"), Message("assistant", "a long answer "
                              "about the orchard, its trees, the weather this spring and, once, an apple")])
    hits = provider.search(session, SearchQuery("apple", limit=10))
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert all(0 < hit.score < 1 for hit in hits)
    assert hits[0].content.startswith("[apple] [apple] [apple]") and "orchard" in hits[-1].content
    two_words = provider.search(session, SearchQuery("apple pie", limit=10))
    assert len(two_words) == 1 and 0.4 < two_words[0].score < 1


def test_explorer(provider, session):
    """Every summary in context can be described and expanded."""
    needs(provider, Explorer)
    fill(provider, session, 30)
    provider.compact(session, CompactionMode.FULL)
    ids = [m.summary_id for m in provider.assemble(session, 100_000, 4) if m.summary_id]
    assert ids
    for summary_id in ids:
        assert provider.describe(summary_id).summary_id == summary_id
        expanded = provider.expand(summary_id, 100_000)
        assert expanded.messages or expanded.children


def test_constraint_store(provider):
    """Constraints are added with ids, listed in order, and removed by id."""
    needs(provider, ConstraintStore)
    provider.add_constraint("ada", "finn", "never delete files")
    listed = provider.add_constraint("ada", "finn", "answer in English")
    assert [c.text for c in listed] == ["never delete files", "answer in English"]
    remaining = provider.remove_constraint("ada", "finn", listed[0].id)
    assert [c.text for c in remaining] == ["answer in English"]
    with pytest.raises(ValidationError):
        provider.remove_constraint("ada", "finn", "con_missing")


def test_versioned_reads_and_changelog(provider):
    """Profile, soul and constraints share one version counter; past versions read back from the changelog."""
    needs(provider, VersionedProfileStore)
    needs(provider, ChangelogReader)
    provider.set_profile("ada", "finn", "v1")          # version 1
    provider.set_agent_soul("ada", "finn", "soul")     # version 2
    provider.set_profile("ada", "finn", "v3")          # version 3
    assert provider.get_profile_at("ada", "finn", 2) == "v1"
    assert provider.get_profile_at("ada", "finn", 0) == "v3"
    log = provider.read_changelog("ada", "finn", "profile")
    assert [e.after_text for e in log] == ["v3", "v1"] and log[0].version_after == 3


def test_session_snapshots(provider):
    """A snapshot freezes the version at first use and advances on request."""
    needs(provider, SessionSnapshotStore)
    provider.set_profile("ada", "finn", "v1")
    assert provider.get_or_create_session_snapshot("s", "ada", "finn").version == 1
    provider.set_profile("ada", "finn", "v2")
    assert provider.get_or_create_session_snapshot("s", "ada", "finn").version == 1
    provider.advance_session_snapshot("s", "ada", "finn")
    assert provider.get_or_create_session_snapshot("s", "ada", "finn").version == 2


def test_reviewer(provider, session):
    """The review context holds the conversation; an unknown session gives ""."""
    needs(provider, Reviewer)
    fill(provider, session, 3)
    assert "Question 2" in provider.build_review_context(session)
    assert provider.build_review_context(Session("nobody")) == ""
