"""Memory spaces through the Python API: publish, recall with attribution, membership, secrets, forget,
rebuild."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import (
    AgentOSError, CorruptionError, NotFoundError, PermissionDeniedError, SecretContentError,
    UnknownAgentError, UnknownSpaceError,
    ValidationError,
)
from core.memory.files.log_file import scan_bytes
from core.memory.spaces import Space, list_spaces
from core.memory.spaces.opened import close_all
from core.memory_manager import MemoryManager
from core.paths import list_agents
from tests.spaces.team import research_team


@pytest.fixture
def team(agents_home: Path):
    with research_team() as agents:
        yield agents


def journal_bytes(home: Path, space: str = "research") -> bytes:
    return (home / "spaces" / space / "LOG.md").read_bytes()


def test_a_published_memory_is_recalled_by_every_member_with_its_space_and_author(team):
    memory_id = team["researcher"].publish("research", "The asyncio event loop runs one coroutine at a time",
                                           {"topic": "python"})
    assert memory_id == "space:research:1"
    team["writer"].store_memory("My article on asyncio is due on Friday")
    hits = team["writer"].recall_memory("asyncio event loop coroutine", n_results=5, min_score=0.0)
    shared = [h for h in hits if h["space"] == "research"]
    assert ([(h["id"], h["author"], h["metadata"]) for h in shared]
            == [(memory_id, "researcher", {"topic": "python"})])
    assert shared[0]["where"] == {"space": "research", "seq": 1}
    own = [h for h in hits if h["space"] is None]
    assert own and all(h["author"] == "writer" for h in own)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_an_explained_recall_explains_the_hits_of_a_space_too(team):
    """With explain=True a space's hit carries why it ranked, like the agent's own hits."""
    team["researcher"].publish("research", "The asyncio event loop runs one coroutine at a time")
    team["writer"].store_memory("My article on asyncio is due on Friday")
    found = team["writer"].recall_memory("asyncio event loop coroutine", n_results=5, min_score=0.0,
                                         explain=True)
    shared = next(h for h in found["results"] if h["space"] == "research")
    assert {"asyncio", "event", "loop", "coroutine"} <= set(shared["why"]["words"])
    assert shared["why"]["score"] == shared["score"] and all("why" in h for h in found["results"])


def test_spaces_list_selects_what_is_searched(team):
    team["researcher"].publish("research", "Tantivy is a full-text search engine library")
    team["writer"].store_memory("Tantivy notes of my own")
    assert {h["space"] for h in team["writer"].recall_memory("tantivy", spaces=[])} == {None}
    assert "research" in {h["space"] for h in team["writer"].recall_memory("tantivy", spaces=["research"])}
    assert "research" in {h["space"] for h in team["writer"].recall_memory("tantivy")}


def test_a_space_the_agent_is_not_a_member_of_is_refused_never_empty(team):
    team["researcher"].publish("research", "Tantivy is a full-text search engine library")
    with pytest.raises(PermissionDeniedError, match="not a member"):
        team["outsider"].recall_memory("tantivy", spaces=["research"])
    assert all(h["space"] is None for h in team["outsider"].recall_memory("tantivy"))  # not one of its spaces
    with pytest.raises(UnknownSpaceError, match="agentos space create"):
        team["writer"].recall_memory("tantivy", spaces=["nowhere"])
    with pytest.raises(ValidationError):
        team["writer"].recall_memory("tantivy", spaces="research")
    assert issubclass(PermissionDeniedError, AgentOSError)


def test_only_read_write_members_publish_and_a_refusal_writes_nothing(team, agents_home):
    before = journal_bytes(agents_home)
    with pytest.raises(PermissionDeniedError, match="may only read"):
        team["writer"].publish("research", "a draft")
    with pytest.raises(PermissionDeniedError, match="not a member"):
        team["outsider"].publish("research", "an intrusion")
    with pytest.raises(ValidationError):
        team["researcher"].publish("research", "   ")
    assert journal_bytes(agents_home) == before


def test_a_removed_member_can_neither_read_nor_publish_and_an_added_one_can(team):
    space = Space("research")
    space.remove_member("researcher")
    with pytest.raises(PermissionDeniedError):
        team["researcher"].publish("research", "still here?")
    with pytest.raises(PermissionDeniedError):
        team["researcher"].recall_memory("here", spaces=["research"])
    space.add_member("outsider", "read-write")
    assert team["outsider"].publish("research", "Welcome aboard") == "space:research:1"
    with pytest.raises(ValidationError, match="last member"):
        Space("research").remove_member("writer") and Space("research").remove_member("outsider")


def test_content_holding_any_members_secret_is_refused_and_never_stored(team, agents_home):
    team["writer"].save_fact("db_password", "hunter2-correct-horse", "secret")
    before = journal_bytes(agents_home)
    with pytest.raises(SecretContentError, match="secret fact"):
        team["researcher"].publish("research", "the database password is hunter2-correct-horse")
    with pytest.raises(SecretContentError):
        team["researcher"].publish("research", "metadata leak", {"note": "hunter2-correct-horse"})
    assert journal_bytes(agents_home) == before
    assert b"hunter2" not in b"".join(p.read_bytes() for p in (agents_home / "spaces").rglob("*")
                                      if p.is_file())
    # A non-member's secret is not the space's business.
    team["outsider"].save_fact("token", "outsider-only-token-99", "secret")
    assert team["researcher"].publish("research", "outsider-only-token-99 is a string") == "space:research:1"


def test_space_names_obey_the_agent_name_rules_and_members_must_exist(agents_home):
    MemoryManager("finn").close()
    for bad in ("../etc", "Research", "", "a/b"):
        with pytest.raises(ValidationError):
            Space.create(bad, {"finn": "read-write"})
    with pytest.raises(UnknownAgentError):
        Space.create("research", {"ghost": "read-write"})
    with pytest.raises(ValidationError):
        Space.create("research", {"finn": "admin"})
    Space.create("research", {"finn": "read-write"})
    with pytest.raises(ValidationError, match="exists already"):
        Space.create("research", {"finn": "read-write"})
    assert list_spaces() == ["research"] and list_agents() == ["finn"]  # spaces/ is not an agent
    with pytest.raises(ValidationError):
        MemoryManager("spaces")


def test_forget_by_the_author_or_an_admin_and_a_rebuilt_index_honours_it(team, agents_home):
    space = Space("research", config=None)
    space.add_member("writer", "read-write")
    first = team["researcher"].publish("research", "Quokkas live on Rottnest Island")
    second = team["writer"].publish("research", "Quokkas are marsupials")
    with pytest.raises(PermissionDeniedError, match="only what it published"):
        space.forget("researcher", [second])
    with pytest.raises(PermissionDeniedError):
        space.forget("outsider", [first])
    assert space.forget("researcher", [first]) == [first]
    assert [h["id"] for h in team["writer"].recall_memory("quokkas", spaces=["research"])] == [second]
    assert space.forget(None, [second]) == [second]
    with pytest.raises(NotFoundError):
        space.forget(None, [second])
    space.close()
    (agents_home / "spaces" / "research" / "index.db").unlink()
    assert team["writer"].recall_memory("quokkas", spaces=["research"]) == []
    entries = scan_bytes(journal_bytes(agents_home), "journal").entries
    assert [e.type for e in entries] == ["PUBLISH", "PUBLISH", "FORGET", "FORGET"]


def test_a_damaged_index_is_rebuilt_from_the_journal(team, agents_home, caplog):
    ids = [team["researcher"].publish("research",
                                      f"Finding {n}: penguins huddle in winter storms") for n in range(5)]
    expected = sorted(h["id"] for h in team["writer"].recall_memory("penguins huddle", n_results=10,
                                                                    spaces=["research"]))
    assert expected == sorted(ids)
    close_all()  # the damage is found where the index is opened: by the next process (this one kept it open)
    index = agents_home / "spaces" / "research" / "index.db"
    for suffix in ("-wal", "-shm"):
        index.with_name(index.name + suffix).unlink(missing_ok=True)
    index.write_bytes(b"this is not a database" * 100)
    found = sorted(h["id"] for h in team["writer"].recall_memory("penguins huddle", n_results=10,
                                                                 spaces=["research"]))
    assert found == expected
    assert "damaged" in caplog.text
    assert any(p.name.startswith("index.db.damaged-") for p in index.parent.iterdir())
    assert Space("research").rebuild_index() == 5


def test_show_lists_members_size_and_latest_entries(team):
    team["researcher"].publish("research", "first finding")
    team["researcher"].publish("research", "second finding")
    shown = Space("research").show()
    assert shown["members"] == {"researcher": "read-write", "writer": "read-only"}
    assert shown["memories"] == 2 and shown["journal_bytes"] > 0
    assert [e["content"] for e in shown["latest"]] == ["second finding", "first finding"]
    assert shown["latest"][0]["author"] == "researcher"


def test_a_torn_journal_tail_is_quarantined_and_the_whole_entries_kept(team, agents_home):
    team["researcher"].publish("research", "a whole entry")
    path = agents_home / "spaces" / "research" / "LOG.md"
    with open(path, "ab") as handle:
        handle.write(b"- 2 2026-01-01T00:00:00.000Z PUBLISH {\"text\": \"torn")
    # The torn line's seq is never handed out again (a reader may have seen it).
    assert team["researcher"].publish("research", "after the crash") == "space:research:3"
    entries = scan_bytes(path.read_bytes(), path)
    assert [e.content for e in entries.entries] == ["a whole entry",
                                                    "after the crash"] and not entries.bad_lines
    assert list((path.parent / "quarantine").iterdir())


def test_a_members_secret_is_refused_whichever_database_keeps_its_facts(storage_backend, agents_home):
    """The secrets are read from each member's own database, memory.db or its PostgreSQL schema, read-only."""
    with MemoryManager("researcher") as researcher, MemoryManager("writer") as writer:
        Space.create("research", {"researcher": "read-write", "writer": "read-only"})
        writer.save_fact("db_password", "hunter2-correct-horse", "secret")
        with pytest.raises(SecretContentError):
            researcher.publish("research", "the password is hunter2-correct-horse")
        assert researcher.publish("research", "the password is in the vault") == "space:research:1"
        hits = writer.recall_memory("password vault", spaces=["research"])
        assert [(h["author"], h["content"]) for h in hits] == [("researcher", "the password is in the vault")]


def test_an_agents_forget_by_query_and_the_memory_tool_leave_spaces_alone(team, agents_home):
    """forget_memories(query=...) forgets from the agent's own memory only; the memory tool's recall is
    unchanged."""
    import json

    from core.memory.provider import build_tool
    from core.plugins.memory import open_provider

    shared = team["researcher"].publish("research", "Penguins huddle in winter storms")
    own = team["researcher"].store_memory("Penguins huddle to keep warm, my note")
    forgotten = team["researcher"].forget_memories(query="penguins huddle")
    assert own in forgotten and shared not in forgotten
    assert [h["id"] for h in team["writer"].recall_memory("penguins huddle", spaces=["research"])] == [shared]

    provider = open_provider("simple", team["writer"].db)
    tool = build_tool(provider, memory=team["writer"])
    found = json.loads(tool.call({"action": "recall", "query": "penguins huddle"}))["memories"]
    assert all(h["space"] is None for h in found)


def test_a_space_with_a_damaged_members_file_is_read_by_nobody(team, agents_home, caplog):
    team["researcher"].publish("research", "Penguins huddle in winter storms")
    (agents_home / "spaces" / "research" / "members.yaml").write_text("members: [oops", encoding="utf-8")
    # own recall still works
    assert all(h["space"] is None for h in team["writer"].recall_memory("penguins huddle"))
    assert "left out of recall" in caplog.text
    with pytest.raises(CorruptionError, match="members.yaml"):
        team["writer"].recall_memory("penguins", spaces=["research"])
    with pytest.raises(CorruptionError):
        team["researcher"].publish("research", "more")
