"""What reflection learned is derived data: rebuilt from the files, forgotten with the entries it came from,
scrubbed of a secret saved later, restored with its provenance when memory.db is rebuilt from LOG.md; and
recall finds the entry a fact was said in, and says where a learned memory came from."""

from __future__ import annotations

import json


def learned(manager) -> dict[str, dict]:
    return {f["key"]: f for f in manager.list_facts() if f["extracted"] is not None}


def test_rebuild_replaces_what_was_learned_and_keeps_explicit_facts(finn, backend, server):
    """--rebuild forgets every learned memory (an explicit fact stays, its learned history goes) and learns it
    all again, here from a reply that reads one fact fewer."""
    finn.save_fact("timezone", "Europe/Lisbon")
    first, second = (finn.append_log("USER_FEEDBACK", t) for t in ("my editor is Helix",
                                                                   "my bike is a Brompton"))
    finn.reflection.run(backend)
    assert set(learned(finn)) == {"user.editor", "user.bike"}
    calls = len(server.chat_requests)
    report = finn.reflection.rebuild(backend)
    assert len(server.chat_requests) == calls + 1 and report.entries == 2
    assert set(learned(finn)) == {"user.editor", "user.bike"}
    assert learned(finn)["user.editor"]["sources"] == [f"log:{first}"]
    assert finn.get_fact("timezone") == "Europe/Lisbon"
    assert [v["value"] for v in finn.get_fact("user.editor", history=True)] == ["Helix"]


def test_forgetting_an_entry_forgets_what_was_learned_only_from_it(finn, backend):
    """Forgetting the entry a fact came from deletes the fact (and its event); a fact also said elsewhere
    keeps its other source; the forgotten entry is never read again, not even by a rebuild."""
    move = finn.append_log("USER_FEEDBACK", "I moved to Porto yesterday")
    once = finn.append_log("USER_FEEDBACK", "my editor is Helix")
    twice = finn.append_log("USER_FEEDBACK", "my editor is Helix, as I said")
    finn.reflection.run(backend)
    assert learned(finn)["user.editor"]["sources"] == [f"log:{once}", f"log:{twice}"]
    finn.forget_memories(ids=[f"log:{move}", f"log:{once}"])
    assert set(learned(finn)) == {"user.editor"}
    assert learned(finn)["user.editor"]["sources"] == [f"log:{twice}"]
    assert finn.reflection.status()["learned"]["events"] == 0
    finn.reflection.rebuild(backend)
    assert set(learned(finn)) == {"user.editor"}


def test_a_secret_saved_later_is_scrubbed_from_what_was_learned(finn, backend):
    """A value learned as a plain fact, then saved as a secret: it leaves the learned fact, the event and
    every index like every other copy."""
    finn.append_log("USER_FEEDBACK", "my locker code is 4471-9932")
    finn.append_log("USER_FEEDBACK", "my badge is 4471-9932")
    finn.reflection.run(backend)
    assert learned(finn)["user.locker_code"]["value"] == "4471-9932"
    finn.save_fact("locker", "4471-9932", "secret")
    assert finn.get_fact("user.locker_code") == "[REDACTED]"
    dump = json.dumps(finn.list_facts()) + json.dumps(finn.reflection.status())
    assert "4471-9932" not in dump
    for table, column in (("user_facts", "value"), ("extracted_events", "what"),
                          ("fact_contradictions", "statement")):
        rows = finn.db.conn.execute(f"SELECT {column} FROM {table} WHERE key IS NOT 'locker'"
                                    if table == "user_facts"
                                    else f"SELECT {column} FROM {table}").fetchall()
        assert not any("4471-9932" in r[0] for r in rows), table


def test_memory_db_rebuilt_from_log_md_keeps_learned_facts_with_their_provenance(finn, backend, agents_home):
    """A lost memory.db is rebuilt from LOG.md's FACT entries: the learned facts come back learned, with
    sources, model and prompt, and an explicit save made after one still wins."""
    from core.memory_manager import MemoryManager

    seq = finn.append_log("USER_FEEDBACK", "my editor is Helix. my bike is a Brompton")
    finn.reflection.run(backend)
    finn.save_fact("user.bike", "a Moulton")
    finn.close()
    for suffix in ("", "-wal", "-shm"):
        (finn.paths.db_file.parent / (finn.paths.db_file.name + suffix)).unlink(missing_ok=True)
    with MemoryManager("finn") as again:
        facts = {f["key"]: f for f in again.list_facts()}
        assert facts["user.editor"]["sources"] == [f"log:{seq}"]
        assert facts["user.editor"]["extracted"]["prompt"] == "reflect v1"
        assert facts["user.bike"]["value"] == "a Moulton" and facts["user.bike"]["extracted"] is None


def test_recall_finds_the_turn_a_fact_was_said_in_and_explains_it(finn, backend):
    """A question in other words than the turn's finds the turn through what was learned from it, and
    --explain says where the learned fact came from and what the turn taught."""
    seq = finn.append_log("USER_FEEDBACK", "ugh, long day. oh and my deploy target is fly.io btw")
    finn.append_log("USER_FEEDBACK", "what's on my calendar today")
    before = finn.recall_memory("which deploy target", kind="log", explain=True, spaces=[])
    finn.reflection.run(backend)
    after = finn.recall_memory("which deploy target", explain=True, spaces=[])
    by_id = {r["id"]: r for r in after["results"]}
    assert by_id["fact:user.deploy_target"]["why"]["extracted"].startswith(f"extracted from #{seq} (")
    assert by_id["fact:user.deploy_target"]["why"]["extracted"].endswith("by qwen2.5")
    assert by_id[f"log:{seq}"]["why"]["learned"] == ["user deploy target: fly.io"]
    assert by_id[f"log:{seq}"]["score"] >= max((r["score"] for r in before["results"]), default=0)


def test_learning_forgetting_and_rebuilding_on_both_databases(storage_backend, finn, backend):
    """The same reflection on SQLite and PostgreSQL: facts with sources, an event, a contradiction, the
    status, forgetting a source, a rebuild."""
    move = finn.append_log("USER_FEEDBACK", "I moved to Porto yesterday. my employer is Acme")
    finn.reflection.run(backend)
    finn.append_log("USER_FEEDBACK", "I no longer work at Acme")
    finn.reflection.run(backend)
    facts = {f["key"]: f for f in finn.list_facts()}
    assert facts["user.city"]["sources"] == [f"log:{move}"]
    assert [c["statement"] for c in facts["user.employer"]["contradicted_by"]] == ["I no longer work at Acme"]
    status = finn.reflection.status()
    assert status["learned"] == {"facts": 2, "events": 1, "contradictions": 1} and status["lag"]["total"] == 0
    assert status["models"]["qwen2.5"]["calls"] == 2
    finn.forget_memories(ids=[f"log:{move}"])
    assert set(learned(finn)) == set() and finn.reflection.status()["learned"]["events"] == 0
    finn.reflection.rebuild(backend)
    assert finn.reflection.status()["learned"] == {"facts": 0, "events": 0, "contradictions": 1}


def test_an_entry_forgotten_right_after_it_was_written_is_forgotten(finn):
    """Forgetting a LOG.md entry by id before recall's background indexing reached it still forgets it (and
    what reflection would learn from it is never read)."""
    seq = finn.append_log("USER_FEEDBACK", "my editor is Helix")
    assert finn.forget_memories(ids=[f"log:{seq}"]) == [f"log:{seq}"]
    assert finn.recall_memory("editor Helix", spaces=[]) == []
