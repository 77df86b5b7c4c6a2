"""The inspector's view of reflection: its status as ``agentos reflect --status`` reports it, and the learned
facts with the places of their sources; read-only and masked, on memory.db and on PostgreSQL."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from core.config import load_config
from core.memory.storage import reading
from core.memory_manager import MemoryManager
from core.paths import AgentPaths
from tests.inspector.conftest import SECRET, build_learning_agent
from tests.inspector.test_api import get


def reflection(url: str, agent: str = "rhea") -> dict:
    status, body = get(url, f"/api/agents/{agent}/reflection")
    assert status == 200, body
    return json.loads(body)


def test_the_status_is_what_agentos_reflect_status_reports(agents_home, storage_backend, serve):
    """Lag, marks, quarantine (with the reason), the counts per model and what was learned are the figures the
    agent's own ``reflection.status()`` gives; the view adds when the last pass was and the configured
    model."""
    learner = build_learning_agent(agents_home)
    with MemoryManager(learner.name, agents_home) as mm:
        own = mm.reflection.status()
    found = reflection(serve())
    status = found["status"]
    for key in ("log_mark", "last_seq", "lag", "quarantined", "models", "learned"):
        assert status[key] == own[key], key
    assert status["learned"] == {"facts": 4, "events": 0, "contradictions": 0}
    # the quarantined entry is unread
    assert status["lag"] == {"log": 1, "messages": 0, "notes": 0, "total": 1}
    [waiting] = status["quarantined"]
    assert waiting["item"] == f"log:{learner.quarantined_seq}" and waiting["reason"] == learner.reason
    assert waiting["model"] == "qwen2.5:7b" and waiting["attempts"] == 1
    assert list(status["models"]) == ["offline-rules"] and status["models"]["offline-rules"]["learned"] == 4
    assert status["last_pass"] == status["models"]["offline-rules"]["last_at"]
    assert found["config"]["model"] == load_config(AgentPaths.for_agent("rhea", agents_home)).llm.model


def test_each_learned_fact_names_its_sources_and_where_they_are(agents_home, storage_backend, serve):
    """A fact learned from a LOG entry, a message or a note cites it, and the view says where it is: the
    entry's seq, the message's conversation and seq, the note's id; a secret learned is masked, its value
    nowhere."""
    learner = build_learning_agent(agents_home)
    url = serve()
    found = reflection(url)
    facts = {f["key"]: f for f in found["facts"]}
    assert set(facts) == {"user.deploy_target", "user.favourite_editor", "user.favourite_tea",
                          "user.api_token"}
    target = facts["user.deploy_target"]
    assert target["value"] == "fly.io" and target["sources"] == [f"log:{learner.target_seq}"]
    assert target["model"] == "offline-rules" and target["prompt"] and target["extracted_at"]
    assert found["places"][f"log:{learner.target_seq}"] == {"seq": learner.target_seq}
    [message] = facts["user.favourite_editor"]["sources"]
    assert message == f"msg:{learner.message_id}"
    assert found["places"][message] == {"conversation": "rhea:cli:main", "message_id": learner.message_id,
                                        "seq": 1}
    [note] = facts["user.favourite_tea"]["sources"]
    assert note == f"note:{learner.note_id}" and found["places"][note] == {"note": learner.note_id}
    assert found["places"][f"log:{learner.quarantined_seq}"] == {"seq": learner.quarantined_seq}
    assert (
        facts["user.api_token"]["value"] == "[REDACTED]" and facts["user.api_token"]["category"] == "secret"
    )
    assert SECRET.encode() not in get(url, "/api/agents/rhea/reflection")[1]
    entries = json.loads(get(url, "/api/agents/rhea/log")[1])["entries"]
    [entry] = [e for e in entries if e["seq"] == learner.target_seq]
    assert "deploy target is fly.io" in entry["text"]  # the place the source names holds what was learned


def test_opening_the_view_starts_nothing_and_writes_nothing(agents_home, storage_backend, serve):
    """The view reads: with entries waiting to be read, no pass starts, no thread, no mark moves, and
    memory.db is the same file afterwards."""
    build_learning_agent(agents_home)
    with MemoryManager("rhea", agents_home) as mm:
        mm.append_system("USER_FEEDBACK", "Remember that my shell is fish")  # waits to be read
    paths = AgentPaths.for_agent("rhea", agents_home)
    storage = load_config(paths).storage

    def snapshot() -> tuple:
        with reading(paths, storage) as reader:
            rows = tuple(tuple(map(tuple,
                                   reader.conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()))
                         for table in ("reflect_marks", "reflect_pending", "reflect_quarantine",
                                       "reflect_stats",
                                       "extracted", "extracted_sources", "user_facts"))
        db = Path(paths.db_file)
        return rows, hashlib.sha256(db.read_bytes()).hexdigest() if db.is_file() else None

    before = snapshot()
    url = serve()
    for _ in range(3):
        assert reflection(url)["status"]["lag"]["log"] == 2
    assert snapshot() == before
    assert not [t.name for t in threading.enumerate() if t.name.startswith("agentos-reflect")]


def test_a_memory_reflection_never_read_has_an_empty_view(agents_home, storage_backend, serve):
    """An agent with nothing learned yet (and one with no memory.db at all) shows zeros, not an error."""
    with MemoryManager("bare", agents_home) as mm:
        mm.append_system("THOUGHT", "nothing to learn here")
    (agents_home / "empty").mkdir()
    url = serve()
    bare = reflection(url, "bare")
    assert bare["facts"] == [] and bare["status"]["learned"] == {"facts": 0, "events": 0, "contradictions": 0}
    assert bare["status"]["last_pass"] is None and bare["status"]["quarantined"] == []
    empty = reflection(url, "empty")
    assert (
        empty["facts"] == [] and empty["status"]["lag"]["total"] == 0 and empty["status"]["last_pass"] is None
    )
