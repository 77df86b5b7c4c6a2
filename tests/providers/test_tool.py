"""The generated memory tool and the tracing wrapper."""

from __future__ import annotations

import json

import pytest

from core.errors import ProviderError, SummaryNotFoundError, ToolArgumentError
from core.memory.provider import (
    ChangeSource,
    Message,
    CompactionMode,
    Searcher,
    Session,
    bind,
    build_tool,
    capabilities,
    unwrap,
    with_tracing,
)
from tests.providers.conftest import conversation

ADA = Session("s-ada", agent_id="finn", user_id="ada")
BOB = Session("s-bob", agent_id="finn", user_id="bob")


def call(tool, session, **arguments):
    with bind(session=session):
        return json.loads(tool.call(arguments))


def test_actions_follow_options(lcm):
    """actions_only and the read-only flags remove actions from the enum and the schema."""
    assert build_tool(lcm, actions_only=["status", "search"]).actions == ("status", "search")
    read_only = build_tool(lcm, read_only_profile=True, read_only_soul=True)
    assert not {"profile_update", "soul_update", "profile_rollback"} & set(read_only.actions)
    assert "content" not in read_only.parameters["properties"]
    with pytest.raises(ToolArgumentError):
        build_tool(lcm, actions_only=["fly"])


def test_unknown_action_lists_available(provider):
    """An unknown action is a ToolArgumentError that lists the available actions."""
    tool = build_tool(provider)
    with pytest.raises(ToolArgumentError, match="available: status"):
        call(tool, ADA, action="teleport")


def test_identity_comes_from_context_not_arguments(lcm):
    """The profile read and written is the bound user's; a user_id argument is refused."""
    tool = build_tool(lcm)
    call(tool, ADA, action="profile_update", content="Ada likes tea")
    call(tool, BOB, action="profile_update", content="Bob likes coffee")
    assert call(tool, ADA, action="profile_get") == {"profile": "Ada likes tea"}
    with pytest.raises(ToolArgumentError, match="user_id"):
        call(tool, ADA, action="profile_get", user_id="bob")
    with pytest.raises(ProviderError):
        tool.call({"action": "profile_get"})


def test_argument_types_checked(lcm):
    """Missing or mistyped arguments are ToolArgumentErrors that name the argument."""
    tool = build_tool(lcm)
    with pytest.raises(ToolArgumentError, match="query"):
        call(tool, ADA, action="search")
    with pytest.raises(ToolArgumentError, match="limit"):
        call(tool, ADA, action="search", query="x", limit="ten")
    with pytest.raises(ToolArgumentError, match="scope"):
        call(tool, ADA, action="search", query="x", scope="everywhere")


def test_explore_through_tool_is_scoped_to_session(lcm):
    """search, describe and expand work for the bound session and cannot reach another session's summaries."""
    for messages in conversation(20):
        lcm.append(ADA, messages)
    lcm.compact(ADA, CompactionMode.FULL)
    tool = build_tool(lcm)
    summary_id = next(m.summary_id for m in lcm.assemble(ADA, 10**6, 4) if m.summary_id)
    assert call(tool, ADA, action="describe", id=summary_id)["summary_id"] == summary_id
    assert call(tool, ADA, action="expand", id=summary_id, token_cap=1000)["summary_id"] == summary_id
    assert call(tool, ADA, action="search", query="module", limit=3)
    with pytest.raises(SummaryNotFoundError):
        call(tool, BOB, action="expand", id=summary_id)


def test_search_action_scores_are_meaningful(lcm):
    """The tool's search hits carry a score in [0, 1], best first: the text that repeats the words leads."""
    lcm.append(ADA, [Message("user", "the deploy failed with error 137"),
                     Message("assistant",
                             "error 137: the deploy ran out of memory; error 137 again after the retry"),
                     Message("user", "thanks, that helps")])
    hits = call(build_tool(lcm), ADA, action="search", query="error 137")
    assert [hit["source_id"] for hit in hits] == ["msg_2", "msg_1"]
    assert 0.4 < hits[1]["score"] < hits[0]["score"] < 1


def test_constraints_history_and_rollback(lcm):
    """Constraint actions, the history and a rollback all act on the bound user, logged with the change
    source."""
    tool = build_tool(lcm)
    added = call(tool, ADA, action="constraint_add", text="never run rm -rf")["constraints"]
    call(tool, ADA, action="profile_update", content="first")
    call(tool, ADA, action="profile_update", content="second")
    call(tool, ADA, action="profile_rollback", version=2)
    assert call(tool, ADA, action="profile_get") == {"profile": "first"}
    with bind(session=ADA, change_source=ChangeSource.USER):
        tool.call({"action": "constraint_remove", "id": added[0]["id"]})
    history = call(tool, ADA, action="profile_history", limit=10)["changes"]
    assert history[0]["scope"] == "constraint" and history[0]["source"] == "user"
    assert history[1]["source"] == "agent" and history[1]["session_id"] == ADA.id
    assert lcm.get_or_create_session_snapshot(ADA.id, "ada", "finn").version == lcm.profiles.version("ada",
                                                                                                     "finn")


def test_tracing_reports_calls_and_keeps_capabilities(lcm, provider):
    """The tracing wrapper reports op, duration, counts and errors, and has the inner provider's
    capabilities."""
    events = []
    traced = with_tracing(provider, events.append)
    assert capabilities(traced) == capabilities(provider) and unwrap(with_tracing(traced, print)) is provider
    messages = conversation(1)[0]
    traced.append(ADA, messages)
    traced.assemble(ADA, 1000, 10)
    assert [e.op for e in events] == ["append",
                                      "assemble"] and events[0].counts["messages_in"] == len(messages)
    assert events[1].counts["results"] == len(messages) and events[1].duration_s >= 0
    with pytest.raises(Exception):
        traced.assemble(ADA, -5, 1)
    assert events[-1].error.startswith("ValidationError")
    assert isinstance(with_tracing(lcm, print), Searcher)
