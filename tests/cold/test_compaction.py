"""LOG.md compaction: the protocol's layout, history, indexing, triggers and failure handling."""

from __future__ import annotations

import hashlib
import os
import threading

import pytest

from core.errors import ColdStoreError, LockTimeoutError, ValidationError
from core.memory.compaction.auto import Compaction
from core.durable.fsutil import StagedFile
from core.durable.locking import AgentLock
from core.memory.compaction.log_compaction import LogCompactor
from core.memory.compaction.plan import compacted_header
from core.memory.files.log_file import LogFile
from core.memory.recall.docs import DocIndex
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


def in_another_thread(call):
    """Run ``call`` in another thread and return its result (the agent lock is re-entrant in this one)."""
    result = []
    thread = threading.Thread(target=lambda: result.append(call()))
    thread.start()
    thread.join(timeout=60)
    assert result, "the call in the other thread did not finish"
    return result[0]


def agent_lock_free(manager: MemoryManager) -> bool:
    """True when no thread holds the agent lock now (asked from another thread, without waiting)."""
    def probe() -> bool:
        try:
            with AgentLock(manager.paths.lock_file, timeout=0).hold():
                return True
        except LockTimeoutError:
            return False
    return in_another_thread(probe)


def test_the_agent_lock_is_held_only_for_the_replace(mm, monkeypatch):
    """Appends wait for the agent lock: the archive is written, and the new LOG.md staged and flushed, before
    the compactor takes it, and an entry appended meanwhile is carried into the new LOG.md."""
    fill(mm, 30)
    seen: dict[str, bool] = {}
    appended: list[int] = []
    write_archive, flush, install = LogCompactor._write_archive, StagedFile.flush, StagedFile.install

    def watched_archive(self, plan):
        seen["archive"] = agent_lock_free(mm)
        return write_archive(self, plan)

    def watched_flush(self):
        flush(self)
        seen["flush"] = agent_lock_free(mm)
        appended.append(in_another_thread(lambda: mm.append_log("THOUGHT",
                                                                "appended while the swap was staged")))

    def watched_install(self):
        if self.path == mm.paths.log_file:
            seen["install"] = agent_lock_free(mm)
        install(self)

    monkeypatch.setattr(LogCompactor, "_write_archive", watched_archive)
    monkeypatch.setattr(StagedFile, "flush", watched_flush)
    monkeypatch.setattr(StagedFile, "install", watched_install)
    report = mm.compact_log()
    assert report.done and seen == {"archive": True, "flush": True, "install": False}
    entries = mm.scan_log().entries
    assert [e.seq for e in entries] == [31, 32] and appended == [32]
    assert entries[1].content == "appended while the swap was staged"
    assert_each_seq_once(mm.paths.memory_dir, 32)


def test_a_line_retracted_after_staging_is_left_out(mm, monkeypatch):
    """A line staged for the new LOG.md that is retracted before the swap (a failed NOW update) stays out."""
    fill(mm, 10)
    retracted = []
    summarize, flush = LogCompactor._summarize, StagedFile.flush

    def summarize_then_append(self, summarizer, plan):
        retracted.append(mm.log.append("THOUGHT", "written, then retracted"))
        return summarize(self, summarizer, plan)

    def flush_then_retract(self):
        flush(self)
        assert mm.log.retract(retracted[0])

    monkeypatch.setattr(LogCompactor, "_summarize", summarize_then_append)
    monkeypatch.setattr(StagedFile, "flush", flush_then_retract)
    report = mm.compact_log()
    assert report.done and [e.type for e in mm.scan_log().entries] == ["SUMMARY"]
    assert not list(mm.paths.memory_dir.glob(".*.tmp"))


def test_an_open_removes_a_killed_compactions_temp_files_but_not_a_running_ones(mm):
    """The archive and staged LOG.md temp files are swept under the compaction lock: left alone while
    a compaction holds it, removed by the next open once none does."""
    mm.paths.archive_dir.mkdir(exist_ok=True)
    leftovers = [mm.paths.memory_dir / f".compacted-LOG.md.{os.getpid()}.tmp",
                 mm.paths.archive_dir / f".LOG-1-5.md.{os.getpid()}.tmp"]
    for path in leftovers:
        path.write_bytes(b"- 1 partial")
    with mm.compactor.exclusive(wait=True):
        in_another_thread(lambda: MemoryManager("finn").close())
        assert all(path.exists() for path in leftovers)
    MemoryManager("finn").close()
    assert not any(path.exists() for path in leftovers)


def test_history_log_index_and_cold_store_are_updated(mm):
    """A compaction records compaction_history, marks archived seqs and indexes chunks plus the summary."""
    fill(mm, 40)
    report = mm.compact_log()
    row = mm.db.conn.execute("SELECT * FROM compaction_history").fetchone()
    assert (row["first_seq"], row["last_seq"], row["entries_count"]) == (1, 40, 40)
    assert (
        row["indexed_at"]
        and row["archive_sha256"] == hashlib.sha256(report.archive_path.read_bytes()).hexdigest()
    )
    marks = mm.db.conn.execute("SELECT count(*) FROM log_metadata WHERE compacted AND archive_id = "
                               "'LOG-1-40'")
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


def test_an_archive_is_indexed_in_short_transactions_and_counts_as_indexed_with_the_last(mm, monkeypatch):
    """Appends wait for memory.db's write lock, so an archive's docs are written a few at a time; one
    interrupted half-way stays pending (indexed_at empty) and the next sync finishes it."""
    # the test's syncs are the only ones (the thread would meet the failing upsert)
    mm.cold.background.close()
    fill(mm, 80)
    assert mm.compactor.run(mm.compaction.summarizer(), force=True, index=False).done
    upsert, calls = DocIndex.upsert, []

    def failing_second(self, conn, docs):
        calls.append(len(docs := list(docs)))
        if len(calls) == 2:
            raise ColdStoreError("interrupted")
        return upsert(self, conn, docs)

    monkeypatch.setattr(DocIndex, "upsert", failing_second)
    with pytest.raises(ColdStoreError):
        mm.cold.indexer.index_archive("LOG-1-80")
    assert calls[0] < 81, "the first transaction wrote only part of the archive"
    assert mm.db.conn.execute("SELECT indexed_at FROM compaction_history").fetchone()[0] is None
    monkeypatch.setattr(DocIndex, "upsert", upsert)
    assert mm.cold.indexer.sync() >= 81
    assert mm.db.conn.execute("SELECT indexed_at FROM compaction_history").fetchone()[0]
    docs = mm.cold.docs.get([f"log:{seq}" for seq in range(1, 81)] + ["summary:LOG-1-80"])
    assert len(docs) == 81 and {d.kind for i, d in docs.items() if i.startswith("log:")} == {"log_archive"}


def test_the_recall_indexer_reads_only_the_end_of_log_md(mm, monkeypatch):
    """Turning new entries into docs reads LOG.md from its end back to the last entry done, never all of
    it."""
    mm.cold.background.stop()
    fill(mm, 10)
    assert mm.cold.indexer.sync_log() == 10

    def no_full_scan(self):
        raise AssertionError("LOG.md was read whole")

    monkeypatch.setattr(LogFile, "scan", no_full_scan)
    fill(mm, 3, start=10)
    assert mm.cold.indexer.sync_log() == 3
    assert (set(mm.cold.docs.get([f"log:{seq}" for seq in range(1, 14)]))
            == {f"log:{seq}" for seq in range(1, 14)})


def test_automatic_compactions_that_found_no_model_do_not_look_again_for_a_while(mm, monkeypatch):
    """Looking for the summarizer model builds clients and pings (work that delays appends): an automatic
    compaction that found none summarises deterministically without looking for AUTO_RETRY_S; an explicit one
    looks."""
    looked = []
    monkeypatch.setattr(Compaction, "_configured_llm", lambda self: looked.append(1))
    assert mm.compaction.summarizer(automatic=True).generate is None
    assert mm.compaction.summarizer(automatic=True).generate is None
    assert len(looked) == 1
    mm.compaction.summarizer()
    assert len(looked) == 2


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
    plan = mm.compactor._plan(force=True, dry_run=False, report=type("R", (), {})())
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
        assert manager.compaction.wait(timeout=60)
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
    from core.memory.upkeep.rebuild import rebuild_all

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
    result = rebuild_all(mm.tiers)
    assert result.compactions == 1 and result.log_rows == 17  # 15 entries, the SUMMARY, the FACT
    assert sorted(mm.cold.store().ids()) == chunks_before
