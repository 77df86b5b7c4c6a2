"""Background work (automatic compaction, recall indexing) gives way to the writers of the process."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager

import pytest

from core.durable import foreground
from core.memory.storage import sqlite as sqlite_storage
from core.memory.storage.sqlite import AUTOCHECKPOINT_PAGES, SqliteDatabase as Database
from core.memory.compaction.log_compaction import LogCompactor
from core.memory_manager import MemoryManager
from tests.cold.conftest import write_config


def fill(manager: MemoryManager, n: int) -> None:
    for i in range(n):
        manager.append_log("TOOL_USE", f"ran the portfolio tool, step {i}", {"tool": "portfolio"})


def test_a_wait_for_a_pause_ends_once_the_writers_are_quiet(monkeypatch):
    """A step waits while writes keep coming and starts once none came for PAUSE_S."""
    monkeypatch.setattr(foreground, "PAUSE_S", 0.01)
    monkeypatch.setattr(foreground, "MAX_WAIT_S", 3600.0)
    foreground.wrote()
    assert foreground.wait_for_pause() is True


def test_a_wait_for_a_pause_gives_up_after_max_wait(monkeypatch):
    """Under writes that never pause, a step still starts after MAX_WAIT_S: background work keeps up."""
    monkeypatch.setattr(foreground, "PAUSE_S", 3600.0)
    monkeypatch.setattr(foreground, "MAX_WAIT_S", 0.01)
    foreground.wrote()
    assert foreground.wait_for_pause() is True


def test_a_wait_for_a_pause_ends_at_once_when_cancelled(monkeypatch):
    """A closing cold tier does not wait for the writers: the wait returns False."""
    monkeypatch.setattr(foreground, "PAUSE_S", 3600.0)
    monkeypatch.setattr(foreground, "MAX_WAIT_S", 3600.0)
    foreground.wrote()
    cancel = threading.Event()
    cancel.set()
    assert foreground.wait_for_pause(cancel) is False


def test_background_work_waits_for_the_writers_to_pause(ollama_home, monkeypatch):
    """Appends past the compaction threshold start no compaction step and no indexing step until the
    pause lets them; then both catch up."""
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"compact_log_entries": 20}})
    waiting, released = threading.Event(), threading.Event()

    def gate(*cancel):
        waiting.set()
        released.wait(60)
        return True

    monkeypatch.setattr(foreground, "wait_for_pause", gate)
    with MemoryManager("finn") as manager:
        fill(manager, 30)
        assert waiting.wait(60)
        assert manager.cold.docs.count() == 0, "no doc was written while the writers had not paused"
        assert not list(manager.paths.archive_dir.glob("LOG-*.md")), "no compaction step ran meanwhile"
        released.set()
        assert manager.compaction.wait(timeout=60) and manager.cold.background.wait_idle(60)
        assert list(manager.paths.archive_dir.glob("LOG-*.md")) and manager.cold.docs.count() > 0


def test_an_append_records_a_foreground_write(ollama_home):
    """What background work waits on: every append notes the time of the last foreground write."""
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"auto_compact": False}})
    with MemoryManager("finn") as manager:
        before = foreground._last_write
        manager.append_log("THOUGHT", "a foreground write")
        assert foreground._last_write > before


def test_a_compactions_steps_that_hold_what_appends_need_run_as_background_steps(ollama_home, monkeypatch):
    """The reservation, the swap with its records, and the indexing each run inside ``step()`` (where a
    background run waits for the writers and for the other background steps); the summary does not (an
    LLM call may take minutes)."""
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"auto_compact": False}})
    events: list[str] = []
    for name in ("_plan", "_summarize", "_swap", "record", "_index"):
        original = getattr(LogCompactor, name)
        monkeypatch.setattr(LogCompactor, name, lambda self, *a, _o=original, _n=name, **k: (
            events.append(_n), _o(self, *a, **k))[1])

    @contextmanager
    def step():
        events.append("(")
        yield
        events.append(")")

    with MemoryManager("finn") as manager:
        fill(manager, 10)
        report = manager.compactor.run(manager.compaction.summarizer(), force=True, step=step)
    assert report.done
    assert events == ["(", "_plan", ")", "_summarize", "(", "_swap", "record", ")", "(", "_index", ")"]


def test_one_background_step_runs_at_a_time():
    """A second background step starts only when the first ends (unless its thread is stopping)."""
    inside, release, order = threading.Event(), threading.Event(), []
    stop = threading.Event()

    def first():
        with foreground.step(stop):
            order.append("first in")
            inside.set()
            release.wait(60)
            order.append("first out")

    def second():
        with foreground.step(stop):
            order.append("second in")

    one = threading.Thread(target=first)
    one.start()
    assert inside.wait(60)
    two = threading.Thread(target=second)
    two.start()
    two.join(0.5)  # it waits for the first step; without the turn it would have run by now
    assert two.is_alive()
    release.set()
    one.join(60)
    two.join(60)
    assert order == ["first in", "first out", "second in"]


def test_memory_db_is_checkpointed_by_the_background_indexer_not_by_appends(ollama_home, monkeypatch):
    """The commit that fills memory.db's WAL copies it into the database and waits for the fsyncs: appends
    leave that to the background indexer (their connections only past AUTOCHECKPOINT_PAGES)."""
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"auto_compact": False}})
    callers = []
    checkpoint = Database.checkpoint
    monkeypatch.setattr(Database, "checkpoint", lambda self: (callers.append(threading.current_thread()),
                                                             checkpoint(self))[1])
    with MemoryManager("finn") as manager:
        pages = manager.db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        assert pages == AUTOCHECKPOINT_PAGES > 1000
        fill(manager, 20)
        assert manager.cold.background.wait_idle(60)
    assert callers and threading.main_thread() not in callers


def test_a_recall_waiting_for_vectors_does_not_wait_for_the_writers(ollama_home, monkeypatch):
    """A recall is foreground work too: while it waits for the vectors of what was just written, the
    indexer's steps start without waiting for the writers to pause."""
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed", "vector_wait_s": 120},
                               "llm": {"backend": "offline"}, "memory": {"auto_compact": False}})
    monkeypatch.setattr(foreground, "PAUSE_S", 3600.0)
    monkeypatch.setattr(foreground, "MAX_WAIT_S", 3600.0)
    with MemoryManager("finn") as manager:
        fill(manager, 5)
        assert manager.recall_memory("portfolio tool step 3", n_results=1)
        assert manager.cold.docs.pending_count() == 0, "every vector was computed for the recall"


def test_background_threads_leave_ctrl_c_to_the_main_thread():
    """A background thread blocks SIGINT, so the kernel gives a Ctrl-C to the main thread (a prompt's
    readline)."""
    import signal

    seen = []
    thread = foreground.background_thread(lambda: seen.append(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
    thread.start()
    thread.join()
    assert signal.SIGINT in seen[0]
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the main thread's is untouched


def _hold_the_indexers_write(monkeypatch) -> tuple[threading.Event, threading.Event, list[bool]]:
    """Make the recall indexer's step stop inside a memory.db write transaction until ``release`` is set;
    returns (holding, release, how the hold ended: True when released, False when it gave up)."""
    from core.memory.recall.index import ColdIndexer

    holding, release, ended = threading.Event(), threading.Event(), []
    sync = ColdIndexer.sync

    def held_sync(self, progress=None):
        if not holding.is_set():
            with self.db.transaction():
                holding.set()
                ended.append(release.wait(60))
        return sync(self, progress)

    monkeypatch.setattr(ColdIndexer, "sync", held_sync)
    monkeypatch.setattr(foreground, "PAUSE_S", 0.0)
    monkeypatch.setattr(sqlite_storage, "BUSY_TIMEOUT_MS", 3_600_000)  # a writer that waits outwaits the hold
    return holding, release, ended


@pytest.mark.parametrize("write", ["update_now", "append_log"])
def test_a_write_does_not_wait_for_the_indexer_holding_memory_db(ollama_home, monkeypatch, write):
    """While the background indexer holds memory.db's write lock in a step, update_now (and append_log)
    still returns: its entry's index row is left to the indexer, which writes it afterwards. The hold
    ends only when the test releases it after the write returned (on a write that waited for it, the
    hold gives up first and the test fails)."""
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"auto_compact": False}})
    holding, release, ended = _hold_the_indexers_write(monkeypatch)
    with MemoryManager("finn") as manager:
        manager.append_log("THOUGHT", "wakes the recall indexer")
        assert holding.wait(120)
        if write == "update_now":
            now = manager.update_now("checking the portfolio", ["write the report"])
            seq = now["log_seq"]
        else:
            seq = manager.append_log("THOUGHT", "written while the indexer holds memory.db")
        release.set()
        assert manager.read_log(1)[0]["seq"] == seq
    assert ended == [True], "the write waited for the indexer's transaction to end"
    with sqlite3.connect(manager.paths.db_file) as db:  # by the indexer, or at the latest by close()
        row = db.execute("SELECT entry_type FROM log_metadata WHERE id = ?", (seq,)).fetchone()
    assert row == ("NOW_UPDATE" if write == "update_now" else "THOUGHT",)


def test_a_compactions_reservation_does_not_wait_for_the_indexer_under_the_agents_lock(ollama_home,
                                                                                       monkeypatch):
    """While the recall indexer holds memory.db's write lock, a compaction's reservation (appended under the
    agent's lock) leaves its index row to the indexer, as an append does, instead of waiting with the lock
    held: an append made meanwhile returns. The hold ends only when the test releases it, after the append
    (on a reservation that waited for it, the hold gives up first and the test fails)."""
    from core.memory.recall import log_index

    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"auto_compact": False}})
    holding, release, ended = _hold_the_indexers_write(monkeypatch)
    swapped = threading.Event()
    mark_compacted = log_index.mark_compacted
    monkeypatch.setattr(log_index, "mark_compacted",
                        lambda *args, **kwargs: (swapped.set(), mark_compacted(*args, **kwargs))[1])
    with MemoryManager("finn") as manager:
        fill(manager, 10)
        assert holding.wait(120)
        reports = []
        compaction = threading.Thread(target=lambda: reports.append(manager.compact_log()))
        compaction.start()
        assert swapped.wait(120), "the compaction reached its records (memory.db, which the indexer holds)"
        seq = manager.append_log("THOUGHT", "written while the compaction waits for memory.db")
        release.set()
        compaction.join(120)
        assert reports and reports[0].done
        assert manager.read_log(1)[0]["seq"] == seq
    assert ended == [True], "the reservation waited for the indexer's transaction with the agent's lock held"


def test_a_write_runs_with_a_short_switch_interval_and_gives_it_back(ollama_home, monkeypatch):
    """While update_now (or an append) runs, the interpreter's switch interval is WRITE_SWITCH_INTERVAL_S, so
    a background thread running Python hands the GIL back soon after each of the write's system calls; the
    interval the write found is given back when it ends."""
    import sys

    from core.memory.files import log_file

    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"auto_compact": False}})
    seen = []
    datasync = log_file.datasync
    monkeypatch.setattr(log_file, "datasync",
                        lambda fd: (seen.append(sys.getswitchinterval()), datasync(fd))[1])
    found = sys.getswitchinterval()
    with MemoryManager("finn") as manager:
        manager.update_now("checking the portfolio", ["write the report"])
        manager.append_log("THOUGHT", "a foreground write")
        manager.save_fact("report_day", "Friday")
    assert seen and seen == pytest.approx([foreground.WRITE_SWITCH_INTERVAL_S] * len(seen))
    assert sys.getswitchinterval() == found


def test_the_switch_interval_comes_back_when_the_last_of_two_writers_ends():
    """Two overlapping writes: the interval stays short until both ended; one changed meanwhile is kept."""
    import sys

    found = sys.getswitchinterval()
    first, second = foreground.writing(), foreground.writing()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert sys.getswitchinterval() == pytest.approx(foreground.WRITE_SWITCH_INTERVAL_S)
    second.__exit__(None, None, None)
    assert sys.getswitchinterval() == found
    try:
        with foreground.writing():
            sys.setswitchinterval(0.002)  # the application's own choice, made during a write
        assert sys.getswitchinterval() == pytest.approx(0.002)
    finally:
        sys.setswitchinterval(found)
