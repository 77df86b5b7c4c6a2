"""forget_memories(query=...) takes the memories that say every word of the query (stop words aside, stemmed
as the word index stems), or with meaning_above those closer in meaning; each comes with why, on both
databases."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from core.errors import ToolArgumentError, ValidationError
from core.memory_manager import MemoryManager


@pytest.fixture
def ada(agents_home, storage_backend):
    """Agent ada in memory.db, then in a PostgreSQL schema, with a few memories."""
    with MemoryManager("ada") as manager:
        manager.store_memories([
            {"content": "My deploy target is fly.io", "occurred_at": "2024-03-01"},
            {"content": "She deploys the app every Friday", "metadata": {"speaker": "Maria"},
             "occurred_at": "2024-03-02"},
            *({"content": f"Notes on topic number {n}: caching layers",
               "occurred_at": "2024-03-03"} for n in (1, 2, 3, 30)),
            {"content": "Ada's cat is called Pixel", "occurred_at": "2024-03-04"},
            {"content": "Maria bought a new bicycle", "occurred_at": "2024-03-05"},
        ])
        yield manager


def contents(manager, ids) -> list[str]:
    return sorted(doc.text for doc in manager.cold.docs.get(ids).values())


def test_every_word_of_the_query_must_be_said(ada):
    """'topic number 3' takes topic 3 only (not 1, 2 or 30, which share two of its words); stems match
    ('deploying' finds 'deploys' and 'deploy'); a word said by none takes nothing."""
    three = ada.forget_memories(query="topic number 3", dry_run=True)
    assert contents(ada, three) == ["Notes on topic number 3: caching layers"]
    assert three.matched[0]["why"] == {"words": ["topic", "number", "3"]} and three.more == 0
    assert contents(ada, ada.forget_memories(query="deploying", dry_run=True)) == [
        "My deploy target is fly.io", "She deploys the app every Friday"]
    assert ada.forget_memories(query="asyncio", dry_run=True) == []
    assert contents(ada,
                    ada.forget_memories(query="Ada's cat", dry_run=True)) == ["Ada's cat is called Pixel"]


def test_context_words_do_not_count_and_before_kind_and_limit_narrow(ada):
    """A speaker's name or a date is context, not what the memory says ('Maria' takes only the memory that
    says it); before and kind narrow a query; the limit cuts and says how many more match."""
    assert contents(ada, ada.forget_memories(query="Maria", dry_run=True)) == ["Maria bought a new bicycle"]
    assert contents(ada,
                    ada.forget_memories(query="Friday", dry_run=True)) == ["She deploys the app every Friday"]
    assert contents(ada, ada.forget_memories(query="topic number", before="2024-03-03", dry_run=True)) == []
    assert ada.forget_memories(query="topic number", kind="fact", dry_run=True) == []
    cut = ada.forget_memories(query="caching topic", limit=3, dry_run=True)
    assert len(cut) == 3 and cut.more == 1 and cut.as_dict()["more"] == 1


def test_a_query_forgets_what_it_lists_and_the_rest_stays(ada):
    """Without dry_run the listed memories are forgotten (FORGET names their ids) and the others are still
    recalled."""
    forgotten = ada.forget_memories(query="topic number 3")
    assert len(forgotten) == 1 and not forgotten.dry_run
    entry = [e for e in ada.scan_log().entries if e.type == "FORGET"][-1]
    assert entry.metadata["ids"] == list(forgotten) and entry.metadata["by"] == "query"
    recalled = {h["content"] for h in ada.recall_memory("topic number caching", 10, min_score=0)}
    assert {f"Notes on topic number {n}: caching layers" for n in (1, 2, 30)} <= recalled
    assert "Notes on topic number 3: caching layers" not in recalled


def test_common_words_alone_name_nothing_and_meaning_needs_a_query(ada):
    """A query of stop words is refused with what to do; meaning_above must be a similarity in (0, 1) and goes
    with a query; nothing is forgotten by a refused call."""
    with pytest.raises(ValidationError, match="only common words"):
        ada.forget_memories(query="what is it about")
    with pytest.raises(ValidationError, match="meaning_above goes with a query"):
        ada.forget_memories(before="2025-01-01", meaning_above=0.5)
    for bad in (0, 1, 1.5, "0.5", True):
        with pytest.raises(ValidationError, match="meaning_above must be"):
            ada.forget_memories(query="deploy", meaning_above=bad)
    assert not [e for e in ada.scan_log().entries if e.type == "FORGET"]


def test_by_meaning_takes_what_is_closer_than_asked_with_its_similarity(ada):
    """meaning_above: every memory taken is closer in meaning to the query than the threshold, and says so."""
    close = ada.forget_memories(query="my deploy target", meaning_above=0.3, dry_run=True)
    assert close and all(entry["why"]["meaning"] > 0.3 for entry in close.matched)
    assert "My deploy target is fly.io" in contents(ada, close)
    assert ada.forget_memories(query="my deploy target", meaning_above=0.999, dry_run=True) == []


def test_the_forget_skill_takes_the_same_rule_and_lists_why(ada):
    """forget_memory (the skill the engine and MCP offer): a query takes what says every word, dry_run only
    lists; memory_id with a query is refused."""
    from core.skills.memory.scripts.forget_memory import execute as forget_memory

    listed = forget_memory(agent_name="ada", query="topic number 3", dry_run=True)
    assert listed["dry_run"] and listed["forgotten"] == [] and len(listed["matched"]) == 1
    assert listed["matched"][0]["content"] == "Notes on topic number 3: caching layers"
    done = forget_memory(agent_name="ada", query="topic number 3")
    assert done["count"] == 1 and done["forgotten"] == [listed["matched"][0]["id"]]
    with pytest.raises(ToolArgumentError, match="not both"):
        forget_memory(agent_name="ada", memory_id=done["forgotten"][0], query="topic")


def test_before_takes_a_period_as_recall_since_does(agents_home):
    """``before="30 days ago"`` (or "yesterday", "last week") is before that period's first moment, as
    recall's ``since`` reads it; a phrase that is neither a date nor a period is refused, naming both
    forms."""
    now = datetime.now(timezone.utc)
    with MemoryManager("ada") as manager:
        manager.store_memories([{"content": f"Standup notes from {days} days back",
                                 "occurred_at": (now - timedelta(days=days)).isoformat()}
                                for days in (40, 10)])
        assert contents(manager, manager.forget_memories(before="30 days ago", dry_run=True)) == [
            "Standup notes from 40 days back"]
        assert len(manager.forget_memories(before="yesterday", dry_run=True)) == 2
        with pytest.raises(ValidationError, match="or a period such as 'last week'"):
            manager.forget_memories(before="30 dais ago", dry_run=True)
