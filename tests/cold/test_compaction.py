"""LOG.md compaction: the protocol's layout, history, indexing, triggers and failure handling."""

from __future__ import annotations

import hashlib
import os

import pytest

from core.errors import ValidationError
from core.memory.log_compaction import compacted_header
from core.memory_manager import MemoryManager
from tests.cold.conftest import EMBED_MODELS
from tests.ollama_server import ScriptedOllama
from tests.cold.conftest import write_config
from tests.cold.helpers import assert_each_seq_once


def fill(manager: MemoryManager, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        manager.append_log("TOOL_USE", f"ran the portfolio tool, step {i}", {"tool": "portfolio"})


@pytest.fixture
def mm(ollama_home):
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"auto_compact": False}})
    manager = MemoryManager("finn")
    yield manager
    manager.close()


def test_compaction_writes_archive_summary_and_keeps_later_lines(mm):
    """Archive = original bytes [0, O); LOG.md = header + SUMMARY (seq L+1) + lines appended after."""
    fill(mm, 30)
    before = mm.paths.log_file.read_bytes()
    report = mm.compact_log()
    archive = mm.paths.archive_dir / "LOG-1-30.md"
    assert report.done and report.archive_path == archive and archive.read_bytes() == before
    assert not os.access(archive, os.W_OK) or os.getuid() == 0
    entries = mm.scan_log().entries
    assert [e.seq for e in entries] == [31] and entries[0].type == "SUMMARY"
    meta = entries[0].metadata
    assert meta["covers"] == [1, 30] and meta["archive"] == "archive/LOG-1-30.md"
    assert meta["sha256"] == hashlib.sha256(before).hexdigest()
    assert mm.paths.log_file.read_bytes().startswith(compacted_header(31))
    assert mm.append_log("THOUGHT", "after") == 32
    assert_each_seq_once(mm.paths.memory_dir, 32)


def test_history_log_index_and_cold_store_are_updated(mm):
    """A compaction records compaction_history, marks archived seqs and indexes chunks plus the summary."""
    fill(mm, 40)
    report = mm.compact_log()
    row = mm.db.conn.execute("SELECT * FROM compaction_history").fetchone()
    assert (row["first_seq"], row["last_seq"], row["entries_count"]) == (1, 40, 40)
    assert row["indexed_at"] and row["archive_sha256"] == hashlib.sha256(report.archive_path.read_bytes()).hexdigest()
    marks = mm.db.conn.execute("SELECT count(*) FROM log_metadata WHERE compacted AND archive_id = 'LOG-1-40'")
    assert marks.fetchone()[0] == 40
    assert mm.db.conn.execute("SELECT entry_type FROM log_metadata WHERE id = 41").fetchone()[0] == "SUMMARY"
    docs = mm.cold.docs.get([f"log:{seq}" for seq in range(1, 41)] + ["summary:LOG-1-40"])
    assert report.docs_indexed == len(docs) == 41
    assert {d.kind for i, d in docs.items() if i.startswith("log:")} == {"log_archive"}
    assert docs["log:17"].source == "archive/LOG-1-40.md#seq=17"
    mm.cold.catch_up()
    store = mm.cold.store()
    assert len(store.ids()) == len(set(store.ids())) == mm.cold.docs.count()
    hits = mm.recall_memory("portfolio tool step 17", n_results=3, kind="log_archive")
    assert any("step 17" in h["content"] for h in hits)


def test_second_compaction_archives_the_previous_summary(mm):
    """The SUMMARY at the top is archived with the rest; seqs stay unique and increasing."""
    fill(mm, 10)
    mm.compact_log()
    fill(mm, 10, start=10)
    report = mm.compact_log()
    assert report.archive_id == "LOG-11-21"
    assert (mm.paths.archive_dir / "LOG-11-21.md").read_bytes().count(b" SUMMARY ") == 1
    assert_each_seq_once(mm.paths.memory_dir, 22)


def test_given_summary_is_used_as_is_and_an_empty_one_changes_nothing(mm):
    """compact_log(summary) writes that text; an empty summary raises ValidationError and changes nothing."""
    fill(mm, 5)
    before = mm.paths.log_file.read_bytes()
    with pytest.raises(ValidationError):
        mm.compact_log("   ")
    assert mm.paths.log_file.read_bytes() == before
    report = mm.compact_log("Five portfolio steps ran.")
    assert report.summary_method == "given"
    assert mm.scan_log().entries[0].content == "Five portfolio steps ran."


def test_dry_run_and_below_threshold_change_nothing(mm):
    """A dry run reports the plan; a non-forced run below the thresholds does nothing."""
    fill(mm, 5)
    before = mm.paths.log_file.read_bytes()
    dry = mm.compact_log(dry_run=True)
    assert dry.archive_id == "LOG-1-5" and not dry.done
    below = mm.compact_log(force=False)
    assert not below.done and "threshold" in below.reason
    assert mm.paths.log_file.read_bytes() == before and not list(mm.paths.archive_dir.iterdir())


def test_an_interrupted_reservation_is_resumed_by_the_next_run(mm):
    """A run killed after reserving is finished by the next one, with the same archive and no lost seq."""
    fill(mm, 12)
    plan = mm.cold.compactor._plan(force=True, dry_run=False, report=type("R", (), {})())
    assert plan.seq == 13
    fill(mm, 3, start=100)  # appended while the killed run was summarising
    report = mm.compact_log()
    assert report.resumed and report.archive_id == "LOG-1-12"
    assert [e.seq for e in mm.scan_log().entries] == [13, 14, 15, 16]
    assert_each_seq_once(mm.paths.memory_dir, 16)


def test_automatic_compaction_runs_in_the_background_after_a_threshold(ollama_home):
    """Crossing compact_log_entries starts a background compaction; appends keep working meanwhile."""
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"compact_log_entries": 20}})
    with MemoryManager("finn") as manager:
        fill(manager, 25)
        assert manager.cold.wait(timeout=60)
        fill(manager, 2, start=25)
        history = manager.db.conn.execute("SELECT count(*) FROM compaction_history").fetchone()[0]
        assert history >= 1 and manager.scan_log().entries[0].type == "SUMMARY"
        assert_each_seq_once(manager.paths.memory_dir, manager.log.last_seq())


def test_a_failing_embedder_still_archives_and_vectors_follow_at_next_start(agents_home, monkeypatch):
    """With the embedder down, compaction completes and words still find the archive; reopened with it up,
    every memory gets its vector."""
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    write_config(agents_home, {"cold": {"embedder": "ollama:fake-embed", "vector_wait_s": 0.5},
                               "llm": {"backend": "offline"}})
    with MemoryManager("finn") as manager:
        fill(manager, 8)
        report = manager.compact_log()
        assert report.done and report.index_error is None
        assert manager.scan_log().entries[0].type == "SUMMARY"
        hits = manager.recall_memory("portfolio step 5", n_results=3, min_score=0)
        assert hits and hits[0]["kind"] == "log_archive"
        assert manager.cold.docs.pending_count() > 0
    with ScriptedOllama(models=EMBED_MODELS) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.host)
        with MemoryManager("finn") as manager:
            assert manager.cold.background.wait_idle(60)
            assert sorted(manager.cold.store().ids()) == sorted(manager.cold.docs.ids())


def test_rebuild_index_recreates_everything_from_the_files(mm):
    """After deleting memory.db's indexes and the LanceDB folder, rebuild restores history and chunks."""
    from core.memory.rebuild import rebuild_all

    fill(mm, 15)
    mm.compact_log()
    mm.save_fact("city", "Lisbon", "personal")
    mm.store_memory("The user likes long reports")
    mm.cold.catch_up()
    chunks_before = sorted(mm.cold.store().ids())
    with mm.db.transaction() as conn:
        conn.execute("DELETE FROM compaction_history")
        conn.execute("DELETE FROM log_metadata")
    mm.cold.store().drop()
    result = rebuild_all(mm)
    assert result.compactions == 1 and result.log_rows == 17  # 15 entries, the SUMMARY, the FACT
    assert sorted(mm.cold.store().ids()) == chunks_before
