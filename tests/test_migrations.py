"""memory.db's numbered migrations: one order, each applied once, an older database upgraded, a newer
refused."""

from __future__ import annotations

import json
import sqlite3

import pytest

from core.errors import StorageError
from core.memory.storage import sqlite as memory_db
from core.memory_manager import MemoryManager
from core.paths import AgentPaths
from tests.cold.conftest import write_config
from tests.old_databases import memory_db_before

BEFORE_RECALL = ("m001_tiers", "m002_cold", "m003_conversations", "m004_store_items", "m005_damaged_archives",
                 "m006_secret_scrubs", "m007_log_types")


def test_migrations_are_numbered_one_after_another():
    """Migration numbers run 1, 2, 3, ... with no gap and no number used twice."""
    names = [name for name, _ in memory_db.migrations()]
    assert [int(name[1:4]) for name in names] == list(range(1, len(names) + 1))
    assert names[: len(BEFORE_RECALL)] == list(BEFORE_RECALL)


def test_a_database_without_recall_upgrades_once_and_its_memories_become_recallable(agents_home, minilm):
    """Opening an agent of a version without recall applies m008_recall once; its notes, facts and store items
    are recalled, and the cold store's old chunk table is replaced."""
    import lance
    import pyarrow as pa

    write_config(agents_home, {"llm": {"backend": "offline"}, "memory": {"auto_compact": False}})
    paths = AgentPaths.for_agent("finn")
    conn = memory_db_before(paths.db_file, "m008")
    conn.execute("INSERT INTO user_facts (key, value, category, created_at, updated_at) "
                 "VALUES ('city', 'Lisbon', 'personal', '2026-01-01T00:00:00.000Z', "
                 "'2026-01-01T00:00:00.000Z')")
    conn.execute("INSERT INTO cold_notes (id, kind, text, metadata, created_at) VALUES "
                 "('abc', 'note', 'The quarterly report goes to Maria on Fridays', '{}', "
                 "'2026-01-01T00:00:00.000Z')")
    conn.execute("INSERT INTO store_items (namespace, key, value, texts, created_at, updated_at) VALUES "
                 "('memories.ada', 'k', ?, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
                 (json.dumps({"text": "Ada prefers tea"}), json.dumps([["text", "Ada prefers tea"]])))
    conn.close()
    lance.write_dataset(pa.Table.from_pylist([{"id": "log:LOG-1-9:0", "vector": [0.1, 0.2]}]),
                        paths.lancedb_dir / "chunks.lance")

    with MemoryManager("finn") as manager:
        applied = [r[0] for r in manager.db.conn.execute("SELECT name FROM _migrations ORDER BY name")]
        assert applied[: len(BEFORE_RECALL) + 1] == [*BEFORE_RECALL, "m008_recall"]  # and the later ones
        assert manager.recall_memory("who receives the report?", 1)[0]["id"] == "note:abc"
        assert manager.recall_memory("which city?", 1)[0]["id"] == "fact:city"
        assert manager.recall_memory("what does Ada drink?", 1,
                                     kind="item")[0]["content"] == "Ada prefers tea"
        assert sorted(p.name for p in paths.lancedb_dir.iterdir()) == ["memories.lance"]
    with MemoryManager("finn") as again:
        assert memory_db.migrate(again.db.conn) == []


def test_notes_stored_before_versions_were_known_are_versioned_after_the_upgrade(agents_home):
    """Opening a memory.db made before m010_recall_subjects gives its keyed notes their subject: the earlier
    of two notes with the same metadata key is marked superseded by the later one."""
    paths = AgentPaths.for_agent("finn")
    conn = memory_db_before(paths.db_file, "m010")
    for note, text, day in (("a", "Ada lives in Paris", "2023-01-01"),
                            ("b", "Ada moved to Lyon", "2023-06-01")):
        conn.execute("INSERT INTO cold_notes (id, kind, text, metadata, created_at, occurred_at) VALUES "
                     "(?, 'note', ?, '{\"key\": \"home\"}', ?, ?)", (note, text, f"{day}T00:00:00.000Z",
                                                                   f"{day}T00:00:00.000Z"))
    conn.close()
    with MemoryManager("finn") as manager:
        listed = manager.recall_memory(since="2023-01-01")
        assert [(h["id"], h.get("superseded_by", {}).get("id")) for h in listed] == [("note:b", None),
                                                                                    ("note:a", "note:b")]


def test_facts_saved_before_fact_versions_get_their_history_from_the_upgrade_on(agents_home):
    """Opening a memory.db made before m011_fact_versions re-indexes its facts as the current version of their
    key; the next save of a new value keeps the earlier one, recalled below it and marked superseded."""
    paths = AgentPaths.for_agent("finn")
    conn = memory_db_before(paths.db_file, "m011")
    day = "2026-01-01T00:00:00.000Z"
    with memory_db.transaction(conn):
        conn.execute("INSERT INTO user_facts (key, value, category, created_at, updated_at) "
                     "VALUES ('city', 'Lisbon', 'personal', ?, ?)", (day, day))
        conn.execute("DELETE FROM cold_pending")  # indexed as that version did: no subject
        conn.execute("INSERT INTO recall_docs (id, kind, tier, source, text, occurred_at, created_at) "
                     "VALUES ('fact:city', 'fact', 'cold', 'fact:city', 'city: Lisbon', ?, ?)", (day, day))
    conn.close()
    with MemoryManager("finn") as manager:
        manager.recall_memory("city", 1)  # indexes what the upgrade queued
        subject = manager.db.conn.execute(
            "SELECT subject FROM recall_docs WHERE id = 'fact:city'"
        ).fetchone()[0]
        assert subject == "fact:city"
        manager.save_fact("city", "Porto", "personal")
        assert [v["value"] for v in manager.get_fact("city", history=True)] == ["Porto", "Lisbon"]
        hits = manager.recall_memory("city Lisbon Porto", 5, kind="fact", min_score=0)
        assert [(h["content"], h.get("superseded_by", {}).get("id")) for h in hits] == [
            ("city: Porto", None), ("city: Lisbon", "fact:city")]


def test_a_database_of_another_version_is_refused_and_left_as_it_is(agents_home):
    """A memory.db that records a migration this version lacks is a StorageError naming it; nothing is
    applied."""
    paths = AgentPaths.for_agent("finn")
    conn = memory_db_before(paths.db_file, "m008")
    conn.execute("INSERT INTO _migrations VALUES ('m099_future', '2030-01-01T00:00:00.000Z')")
    conn.close()
    with pytest.raises(StorageError, match="m099_future"):
        memory_db.connect(paths.db_file)
    conn = sqlite3.connect(paths.db_file)
    assert {r[0] for r in conn.execute("SELECT name FROM _migrations")} == {*BEFORE_RECALL, "m099_future"}
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'recall_docs'").fetchone() is None
    conn.close()


def test_the_migrations_build_the_schema_earlier_versions_built(tmp_path):
    """A new memory.db has exactly the tables, indexes and triggers of one an earlier version made (recorded
    in tests/data/schema-sqlite.txt), so a database that version upgraded opens as it is, with nothing to
    apply."""
    from tests.schema_snapshot import SQLITE_SNAPSHOT, sqlite_schema

    conn = memory_db.connect(tmp_path / "memory.db")
    try:
        assert sqlite_schema(conn) == SQLITE_SNAPSHOT.read_text(encoding="utf-8").splitlines()
        assert memory_db.migrate(conn) == []
    finally:
        conn.close()
