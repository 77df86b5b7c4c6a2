"""One record per thing in what a person reads: the records of the same words (a request kept in LOG.md and in
the conversation) are one recall hit or one listed memory, which knows its other records."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from core.memory.recall.docs import Doc
from core.memory.recall.views.folding import fold
from core.memory_manager import MemoryManager
from core.plugins.memory import open_provider
from core.memory.provider import Message, Session

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=timezone.utc)
LONG = ("Please compare the three hosting offers we received last week, list their monthly prices, the "
        "regions they serve and their support hours, and tell me which one fits a small team that deploys "
        "twice a day from Lisbon and needs someone to answer at night, then draft a short note to the team "
        "that explains the choice, what it costs a year and what we would have to change in the deploy "
        "scripts to move to it")


def doc(doc_id: str, text: str, kind: str = "log", speaker: str = "", minutes: float = 0,
        thread: str = "") -> Doc:
    at = (T0 + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")
    return Doc(id=doc_id, kind=kind, tier="warm", source=doc_id, text=text, occurred_at=at, created_at=at,
               speaker=speaker, thread=thread)


def ids(docs: list[Doc]) -> list[list[str]]:
    return [[docs[i].id for i in group] for group in fold(docs, 3600, 0.9)]


def test_a_request_and_its_reply_kept_in_log_md_and_the_conversation_are_one_each():
    """RUN_START, USER_FEEDBACK and the user message are one thing; the THOUGHT 'response: ...', RUN_END and
    the assistant message another (a leading one-word label and punctuation aside)."""
    docs = [doc("log:1", "What is my deploy target?", speaker="run start"),
            doc("log:2", "what is my deploy target", speaker="user feedback"),
            doc("log:4", "response: Your deploy target is fly.io.", speaker="thought", minutes=1),
            doc("log:6", "Your deploy target is fly.io.", speaker="run end", minutes=1),
            doc("msg:1", "What is my deploy target?", "message", "user", minutes=1,
                thread="conversation=main"),
            doc("msg:2", "Your deploy target is fly.io.", "message", "assistant", minutes=1,
                thread="conversation=main")]
    assert ids(docs) == [["log:1", "log:2", "msg:1"], ["log:4", "log:6", "msg:2"]]


def test_a_record_cut_short_is_a_record_of_the_whole_text():
    """The objective cut at 300 characters, a preview ending in '…' and the whole message are one; a short
    sentence that starts a longer one is something else said."""
    docs = [doc("log:1", LONG[:300], speaker="run start"),
            doc("log:3", f"response: {LONG[:250]}…", speaker="thought"),
            doc("msg:1", LONG, "message", "user", thread="conversation=main"),
            doc("msg:2", "Please compare the three hosting offers", "message", "user",
                thread="conversation=main")]
    assert ids(docs) == [["log:1", "log:3", "msg:1"], ["msg:2"]]


def test_the_same_words_by_two_people_or_hours_apart_are_two_memories():
    """Two speakers saying the same thing, or one saying it again the next day, are not folded; a LOG.md entry
    names no one, so it folds with either."""
    docs = [doc("note:a", "Sounds great, see you there!", "note", "Ada", thread="session=1"),
            doc("note:b", "Sounds great, see you there!", "note", "Bob", thread="session=1"),
            doc("note:c", "Sounds great, see you there!", "note", "Ada", minutes=24 * 60, thread="session=2"),
            doc("log:9", "Sounds great, see you there!", speaker="user feedback", minutes=2)]
    assert ids(docs) == [["note:a", "log:9"], ["note:b"], ["note:c"]]


def test_near_duplicates_of_one_speaker_and_session_still_fold():
    """90% of words in common, same speaker and session: one memory, as recall always collapsed them."""
    words = "we booked the cabin by the lake for the second weekend of june with the kids and grandma"
    docs = [doc("note:a", words, "note", "Ada", thread="s1"),
            doc("note:b", words + " too", "note", "Ada", thread="s1"),
            doc("note:c", words + " too", "note", "Ada", thread="s2")]
    assert ids(docs) == [["note:a", "note:b"], ["note:c"]]


@pytest.fixture
def kept_twice(manager):
    """A request and its reply recorded as the engine records them: LOG.md entries and conversation
    messages; then a note, newest by its recorded time: one millisecond after the reply's (times are kept to
    the millisecond, and a note stored just after the reply can fall in its millisecond, where the records
    indexed later, the reply's, are listed first)."""
    manager.append_system("RUN_START", "what is my deploy target", {"run_id": "r1"})
    manager.append_log("USER_FEEDBACK", "what is my deploy target")
    manager.append_log("THOUGHT", "response: Your deploy target is fly.io.")
    replied = manager.read_log(1)[0]["ts"]
    provider = open_provider(None, manager.paths.db_file)
    session = Session("finn:cli:main", agent_id="finn", user_id="ada")
    provider.bootstrap(session)
    provider.append(session, [Message("user", "what is my deploy target", created_at=replied),
                              Message("assistant", "Your deploy target is fly.io.", created_at=replied)])
    provider.close()
    later = datetime.fromisoformat(replied.replace("Z", "+00:00")) + timedelta(milliseconds=1)
    manager.store_memory("The cat sleeps on the sofa", occurred_at=later.isoformat())
    return manager


def test_recall_returns_each_request_once_with_its_other_records(kept_twice):
    """recall: one hit a request, whose ``also`` lists the other records; every record is in a hit or its
    also; explain counts the folded records as duplicates of the hit they repeat."""
    found = kept_twice.recall_memory("what is my deploy target", 5, min_score=0)
    texts = [" ".join(h["content"].lower().replace("response: ", "").split()) for h in found]
    assert len(texts) == len(set(texts)), texts
    asked = next(h for h in found if h["content"] == "what is my deploy target")
    assert len(asked["also"]) == 2 and {asked["id"], *asked["also"]} == {"log:1", "log:2", "msg:1"}
    explained = kept_twice.recall_memory("what is my deploy target", 5, min_score=0, explain=True)
    repeats = {e["id"]: e["repeats"] for e in explained["left_out"]["duplicate"]["examples"]}
    assert repeats[asked["also"][0]] == asked["id"]
    assert explained["left_out"]["duplicate"]["count"] == 3  # two of the request, one of the reply


def test_a_listed_window_shows_each_request_once_and_loses_no_record(kept_twice):
    """A time window lists one memory a request, newest record first; its ids and ``also`` together hold every
    record of the window, and LOG.md and the conversation keep them all."""
    listed = kept_twice.recall_memory(since="today", n_results=50)
    texts = [" ".join(h["content"].lower().replace("response: ", "").split()) for h in listed]
    assert sorted(texts) == sorted(set(texts)) and len(listed) == 3
    every = [i for h in listed for i in (h["id"], *h.get("also", []))]
    assert sorted(every) == sorted(kept_twice.cold.docs.ids())
    assert [e["type"] for e in kept_twice.read_log(10)] == ["RUN_START", "USER_FEEDBACK", "THOUGHT"]
    assert kept_twice.recall_memory(since="today", n_results=1)[0]["content"] == "The cat sleeps on the sofa"


def test_listing_reads_on_until_the_last_memory_has_all_its_records(manager):
    """More records than one read of the window holds: the listed memories still carry every record of
    theirs."""
    manager.store_memories([{"content": f"step {n} of the import is done",
                             "occurred_at": T0 + timedelta(hours=2 * n)}
                            for n in range(60)])
    manager.store_memories([{"content": "the import is done", "metadata": {"copy": n}, "occurred_at": T0}
                            for n in range(80)])
    listed = manager.recall_memory(since=T0, until=T0 + timedelta(days=30), n_results=60)
    assert len(listed) == 60 and listed[-1]["content"] == "the import is done"
    assert len(listed[-1]["also"]) == 79


def test_recall_through_a_new_manager_is_the_same(kept_twice, agents_home):
    """Folding is read from the index at each recall: another process sees the same hits."""
    before = kept_twice.recall_memory("what is my deploy target", 5, min_score=0)
    with MemoryManager("finn") as again:
        assert again.recall_memory("what is my deploy target", 5, min_score=0) == before
