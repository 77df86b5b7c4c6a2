"""Damaged files are survived, not amplified: repaired from what is sound, loudly, and never a whole file
lost."""

from __future__ import annotations

import logging
import sqlite3
import threading

import pytest

from core.memory_manager import MemoryManager
from faults import flip_byte
from tests.cold.conftest import write_config

SETTLE_S = 0.5
"""How long a test lets a thread that must not start on something show that it does not (only a passing test
waits it out)."""


def fill(manager: MemoryManager, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        manager.append_log("THOUGHT", f"thought {i}: the portfolio report needs adjusted prices")


@pytest.fixture
def home(ollama_home):
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"auto_compact": False}})
    return ollama_home


def quarantined(manager: MemoryManager) -> list[str]:
    return sorted(p.name for p in manager.paths.quarantine_dir.iterdir())


# -- LOG.md as an editor leaves it --------------------------------------------------------


@pytest.mark.parametrize("strip_newline", [False, True])
def test_a_crlf_log_keeps_every_entry(home, strip_newline: bool, caplog) -> None:
    """A LOG.md saved with CRLF line ends (and maybe no final newline) reads whole and is converted back to
    LF."""
    with MemoryManager("finn") as manager:
        fill(manager, 10)
        data = manager.paths.log_file.read_bytes().replace(b"\n", b"\r\n")
        manager.paths.log_file.write_bytes(data[:-2] if strip_newline else data)
    caplog.set_level(logging.WARNING)
    with MemoryManager("finn") as manager:
        assert [e["seq"] for e in manager.read_log(20)] == list(range(1, 11))
        assert b"\r" not in manager.paths.log_file.read_bytes()
        assert manager.paths.log_file.read_bytes().endswith(b"\n")
        assert quarantined(manager) == []
        assert manager.append_log("THOUGHT", "after the editor") == 11
    assert any("LF line ends" in r.getMessage() for r in caplog.records)


def test_a_crlf_log_reads_whole_before_any_repair(home) -> None:
    """A reader that opens a CRLF LOG.md before a writer converts it still sees every entry."""
    with MemoryManager("finn") as manager:
        fill(manager, 4)
        manager.paths.log_file.write_bytes(manager.paths.log_file.read_bytes().replace(b"\n", b"\r\n"))
        assert [e["seq"] for e in manager.read_log(10)] == [1, 2, 3, 4]
        assert [e.seq for e in manager.scan_log().entries] == [1, 2, 3, 4]
        assert not manager.scan_log().bad_lines


def test_a_stripped_final_newline_keeps_the_last_entry(home) -> None:
    """A whole last entry without its newline stays (its CRC proves it whole); nothing goes to quarantine."""
    with MemoryManager("finn") as manager:
        fill(manager, 3)
        manager.paths.log_file.write_bytes(manager.paths.log_file.read_bytes().rstrip(b"\n"))
        assert [e["seq"] for e in manager.read_log(10)] == [1, 2, 3]
        assert manager.append_log("THOUGHT", "next") == 4  # the writer restores the newline first
        assert [e.seq for e in manager.scan_log().entries] == [1, 2, 3, 4]
        assert quarantined(manager) == []


# -- memory.db lost ------------------------------------------------------------------------


def build_history(manager: MemoryManager) -> None:
    manager.save_fact("currency", "EUR", "preference")
    manager.save_fact("city", "Porto", "personal")
    manager.save_fact("city", "Lisbon", "personal")
    manager.save_fact("old", "gone soon")
    manager.delete_fact("old")
    manager.save_fact("api_key", "sk-12345", "secret")
    manager.store_memory("The report goes to Maria on Fridays")
    fill(manager, 12)
    manager.compact_log(summary="twelve thoughts about the portfolio report")
    fill(manager, 3, start=12)
    manager.update_now("active", ["send the report"], objective="portfolio report")
    manager.cold.catch_up()  # every memory has its vector: the note can come back from the cold store


@pytest.mark.parametrize("damage", ["truncated", "garbage", "deleted"])
def test_a_lost_memory_db_is_rebuilt_from_the_files(home, damage: str, caplog) -> None:
    """memory.db truncated, overwritten or deleted: set aside and rebuilt from LOG.md, the archives and the
    cold store, loudly, with the secrets named as not rebuildable."""
    with MemoryManager("finn") as manager:
        build_history(manager)
        seqs = [r[0] for r in manager.db.conn.execute("SELECT id FROM log_metadata ORDER BY id")]
        db_file = manager.paths.db_file
    for suffix in ("-wal", "-shm"):
        db_file.with_name(db_file.name + suffix).unlink(missing_ok=True)
    if damage == "truncated":
        db_file.write_bytes(b"")
    elif damage == "garbage":
        db_file.write_bytes(b"\x8b" * 8192)
    else:
        db_file.unlink()
    caplog.set_level(logging.WARNING)
    with MemoryManager("finn") as manager:
        assert manager.list_facts() == [
            {**manager.list_facts()[0], "key": "city", "value": "Lisbon", "category": "personal"},
            {**manager.list_facts()[1], "key": "currency", "value": "EUR", "category": "preference"}]
        assert manager.get_fact("api_key") is None and manager.get_fact("old") is None
        rebuilt = [r[0] for r in manager.db.conn.execute("SELECT id FROM log_metadata ORDER BY id")]
        # + the SYSTEM entry reporting it
        assert rebuilt[: len(seqs)] == seqs and len(rebuilt) == len(seqs) + 1
        history = manager.db.conn.execute("SELECT archive_id FROM compaction_history").fetchall()
        assert [r[0] for r in history] == ["LOG-1-18"]  # 6 FACT entries and 12 thoughts
        assert manager.db.conn.execute("SELECT text FROM cold_notes").fetchall()[0][0] == \
            "The report goes to Maria on Fridays"
        assert manager.read_now()["objective"] == "portfolio report"
        report = " ".join(manager.repairs)
        assert "api_key" in report and "save them again" in report and "conversations" in report
        assert manager.read_log(1)[0]["content"].startswith("memory.db rebuilt")
        assert manager.compaction.wait(timeout=60)
        assert manager.recall_memory("who gets the report?", n_results=5)
        moved = [name for name in quarantined(manager) if name.startswith("memory.db")]
        assert bool(moved) == (damage != "deleted")
    assert any("memory.db was" in r.getMessage() for r in caplog.records)


def test_a_new_agent_with_an_empty_database_is_not_reported(home, caplog) -> None:
    """A memory.db created before the agent's first entry is a new agent's, not a lost one: no warning."""
    caplog.set_level(logging.WARNING)
    with MemoryManager("finn") as manager:
        manager.append_log("THOUGHT", "first")
        with manager.db.transaction() as conn:  # as if killed between the line and its index row
            conn.execute("DELETE FROM log_metadata")
    with MemoryManager("finn") as manager:
        assert (
            manager.repairs == []
            and manager.db.conn.execute("SELECT count(*) FROM log_metadata").fetchone()[0]
        )
    assert not any("rebuilt" in r.getMessage() for r in caplog.records)


def test_a_damaged_page_in_memory_db_is_a_corruption_error_and_the_next_open_rebuilds(home) -> None:
    """SQLite's 'database disk image is malformed' is a CorruptionError naming the fix, and the fix works."""
    from core.errors import CorruptionError

    with MemoryManager("finn") as manager:
        for i in range(200):
            manager.save_fact(f"key{i}", "value " * 50)
        manager.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = manager.paths.db_file.stat().st_size
    with sqlite3.connect(manager.paths.db_file) as raw:
        root = raw.execute("SELECT rootpage FROM sqlite_master WHERE name = 'user_facts'").fetchone()[0]
    page = 4096
    data = bytearray(manager.paths.db_file.read_bytes())
    for offset in range(root * page, min(size, (root + 3) * page)):
        data[offset] = 0x55
    manager.paths.db_file.write_bytes(bytes(data))
    with pytest.raises(CorruptionError, match="quarantine.*rebuilds"):
        with MemoryManager("finn") as manager:
            manager.list_facts()
    with MemoryManager("finn") as manager:  # as the message says: the next open sets it aside and rebuilds
        assert len(manager.list_facts()) == 200
        assert any("damaged" in line for line in manager.repairs)
        assert any(n.startswith("memory.db.") for n in quarantined(manager))


# -- a damaged archive ------------------------------------------------------------------------


def test_a_damaged_archive_waiting_to_be_indexed_is_quarantined_and_recall_keeps_working(home,
                                                                                         caplog) -> None:
    """The archive goes to quarantine and is reported; recall and store_memory keep working (store saves
    once)."""
    with MemoryManager("finn") as manager:
        fill(manager, 12)
        report = manager.compactor.run(manager.compaction.summarizer(), "notes on adjusted prices",
                                       force=True,
                                            index=False)
        archive = report.archive_path
        flip_byte(archive, 40)
        caplog.set_level(logging.ERROR)
        assert manager.recall_memory("adjusted prices", n_results=3)[0]["kind"] == "summary"
        note = manager.store_memory("The CSV lives in the shared drive")
        assert manager.db.conn.execute("SELECT count(*) FROM cold_notes").fetchone()[0] == 1
        assert manager.recall_memory("where is the CSV?", n_results=1)[0]["id"] == note
        damaged = manager.cold.indexer.damaged()
        assert [d["archive_id"] for d in damaged] == ["LOG-1-12"] and "sha256" in damaged[0]["problem"]
        assert not archive.exists() and any(n.startswith("LOG-1-12-damaged") for n in quarantined(manager))
    assert any("cannot be indexed" in r.getMessage() for r in caplog.records)


def test_two_threads_syncing_index_a_pending_archive_once(home, monkeypatch) -> None:
    """A recall's sync and the recall indexer's meeting on a pending archive: it is indexed by one of them,
    the other finds it done and counts its docs (a compaction reports them whichever thread wrote them); two
    at once would both read a damaged archive, and the one that found it already quarantined recorded it as
    missing over the other's sha256 report. The first is held inside the archive until the second has had
    ``SETTLE_S`` to start on it too."""
    from core.memory.recall.index import ColdIndexer

    with MemoryManager("finn") as manager:
        manager.cold.background.stop()
        fill(manager, 12)
        manager.compactor.run(manager.compaction.summarizer(), "notes on adjusted prices", force=True,
                              index=False)
        inside, second, calls = threading.Event(), threading.Event(), []
        index_archive = ColdIndexer.index_archive

        def held(self, archive_id):
            calls.append(archive_id)
            if len(calls) == 1:
                inside.set()
                second.wait(SETTLE_S)
            else:
                second.set()
            return index_archive(self, archive_id)

        monkeypatch.setattr(ColdIndexer, "index_archive", held)
        written: list[int] = []
        first = threading.Thread(target=lambda: written.append(manager.cold.indexer.sync()))
        first.start()
        assert inside.wait(60)
        other = threading.Thread(target=lambda: written.append(manager.cold.indexer.sync()))
        other.start()
        first.join(60)
        other.join(60)
        assert calls == ["LOG-1-12"]
        assert written == [13, 13], "both count the archive's docs (its 12 entries and summary) as indexed"
        assert manager.cold.indexer.pending() == 0


def test_store_memory_with_memory_db_read_only_is_refused_before_anything_is_saved(home) -> None:
    """store_memory raises ReadOnlyError naming the fix and saves nothing, so a retry stores the note once."""
    from core.errors import ReadOnlyError
    from faults import read_only

    with MemoryManager("finn") as manager:
        manager.store_memory("a first note")
    with read_only(home / "finn" / "memory" / "memory.db"), MemoryManager("finn") as manager:
        with pytest.raises(ReadOnlyError, match="writable"):
            manager.store_memory("a second note")
    with MemoryManager("finn") as manager:
        assert [r[0] for r in manager.db.conn.execute("SELECT text FROM cold_notes")] == ["a first note"]
