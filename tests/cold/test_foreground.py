"""Background work (automatic compaction, recall indexing) gives way to the writers of the process."""

from __future__ import annotations

import threading
from contextlib import contextmanager

from core.memory import foreground
from core.memory.storage.sqlite import AUTOCHECKPOINT_PAGES, Database
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
    """A background thread blocks SIGINT, so the kernel gives a Ctrl-C to the main thread (a prompt's readline)."""
    import signal

    seen = []
    thread = foreground.background_thread(lambda: seen.append(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
    thread.start()
    thread.join()
    assert signal.SIGINT in seen[0]
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the main thread's is untouched
