"""End to end with the real all-MiniLM-L6-v2 model: facts, notes and compacted log recalled by meaning."""

from __future__ import annotations

import pytest

from core.errors import ToolArgumentError, ValidationError


def test_recall_finds_compacted_log_facts_and_notes_by_meaning(finn):
    """After compaction, a paraphrased question finds the archived entry; facts and notes are found too."""
    finn.append_log("USER_FEEDBACK", "I am interested in Tesla and Nvidia shares this week")
    for i in range(10):
        finn.append_log("TOOL_USE", f"downloaded price table {i}")
    finn.compact_log()
    finn.save_fact("preferred_currency", "USD", "preference")
    note = finn.store_memory("The quarterly report must be sent to Maria every Friday")
    hits = finn.recall_memory("Which stocks did the user ask about?", n_results=3)
    assert any("Tesla and Nvidia" in h["content"] for h in hits)
    assert set(hits[0]) >= {"content", "metadata", "score", "source", "created_at"}
    assert hits == sorted(hits, key=lambda h: -h["score"])
    assert finn.recall_memory("what money unit does the user like", 1, kind="fact")[0]["content"] == (
        "preferred_currency: USD")
    assert finn.recall_memory("who receives the report?", 1, kind="note")[0]["id"] == note


def test_secret_facts_are_never_indexed_and_changes_follow_the_fact(finn):
    """A secret fact is never in the cold store; re-saving updates and deleting removes a fact's chunk."""
    finn.save_fact("api_key", "sk-live-12345", "secret")
    finn.save_fact("home_city", "Porto", "personal")
    results = finn.recall_memory("api key credential", n_results=10)
    assert all("sk-live-12345" not in r["content"] for r in results)
    finn.save_fact("home_city", "Lisbon", "personal")
    assert finn.recall_memory("where does the user live", 1, kind="fact")[0]["content"] == "home_city: Lisbon"
    finn.delete_fact("home_city")
    assert finn.recall_memory("where does the user live", 5, kind="fact") == []


def test_recall_memory_skill_matches_the_seed_call(finn):
    """execute(agent_name="finn", query=..., n_results=3) returns at most 3 results; bad args are refused."""
    from core.skills.memory.scripts.recall_memory import SKILL_METADATA, execute

    finn.store_memory("The user's favourite programming language is Rust")
    memories = execute(agent_name="finn", query="What language does the user like?", n_results=3)
    assert 1 <= len(memories) <= 3 and "Rust" in memories[0]["content"]
    assert "agent_name" not in SKILL_METADATA["parameters"]["properties"]
    # optional: without it, since/until list a window
    assert "query" in SKILL_METADATA["parameters"]["properties"]
    with pytest.raises(ToolArgumentError):
        execute(agent_name="finn", query="  ", n_results=3)


def test_bad_recall_and_store_input_is_refused(finn):
    """Empty queries, bad n_results, unknown kinds and empty notes raise ValidationError."""
    for call in (lambda: finn.recall_memory(""), lambda: finn.recall_memory("x", n_results=0),
                 lambda: finn.recall_memory("x", kind="secret"), lambda: finn.store_memory(" "),
                 lambda: finn.store_memory("x", kind="fact"),
                 lambda: finn.recall_memory("x", since="the day after never")):
        with pytest.raises(ValidationError):
            call()
