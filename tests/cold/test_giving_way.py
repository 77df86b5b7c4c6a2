"""Background work leaves the GIL and the cores to the writers of its process while they write."""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

from core.durable import AgentLock, foreground
from core.llm.embedding import token_batches
from core.memory.compaction import plan
from core.memory.files import log_file, now_file
from core.memory.recall import index
from core.memory.storage.sqlite import SqliteDatabase
from core.memory_manager import MemoryManager
from tests.cold.conftest import write_config

SETTLE_S = 0.5
"""How long a test lets a thread that must not move show that it does not (only a passing test waits it)."""


class Naps:
    """How threads waiting in ``give_way`` sleep, telling the test when one starts waiting."""

    def __init__(self, nap) -> None:
        self.nap = nap
        self.waiting = threading.Event()

    def __call__(self, seconds: float) -> None:
        self.waiting.set()
        self.nap(seconds)


class HeldDuringWrite:
    """A background thread held at its first item until a foreground write is inside its flush, then counted:
    ``item`` wraps the background's per-item function (items made in threads named ``thread`` while the write
    lasts are counted in ``during``), ``write`` wraps the flush (the first one after the hold lets the
    background go on and lasts ``SETTLE_S``)."""

    def __init__(self, thread: str) -> None:
        self.thread = thread
        self.started, self.writing, self.ended = threading.Event(), threading.Event(), threading.Event()
        self.during: list[int] = []

    def item(self, function):
        def held(*args, **kwargs):
            if threading.current_thread().name.startswith(self.thread):
                if not self.started.is_set():
                    self.started.set()
                    self.writing.wait(60)
                elif self.writing.is_set() and not self.ended.is_set():
                    self.during.append(1)
            return function(*args, **kwargs)
        return held

    def write(self, function):
        def flushing(*args, **kwargs):
            if self.started.is_set() and not self.writing.is_set():
                self.writing.set()  # the write is inside its flush: the background may go on...
                self.ended.wait(SETTLE_S)  # ...and makes no item while the write lasts
                self.ended.set()  # (the count ends here, inside the write)
            return function(*args, **kwargs)
        return flushing


@pytest.fixture
def naps(monkeypatch) -> Naps:
    # it waits for the write, however slow the machine
    monkeypatch.setattr(foreground, "GIVE_WAY_MAX_S", 3600.0)
    watched = Naps(foreground._nap)
    monkeypatch.setattr(foreground, "_nap", watched)
    return watched


def test_a_background_loop_takes_no_item_while_a_foreground_write_runs(naps):
    """A paced loop in a background thread waits before its next item while a write runs, and goes on once
    the writers have been quiet for RESUME_AFTER_S."""
    seen: list[str] = []
    thread = foreground.background_thread(lambda: seen.extend(foreground.paced(["a", "b"])))
    with foreground.writing():
        thread.start()
        assert naps.waiting.wait(60)
        assert seen == []
    thread.join(60)
    assert seen == ["a", "b"]


def test_a_foreground_loop_and_a_writer_never_wait(naps):
    """In a thread that is not background work, or that writes itself, giving way is nothing."""
    with foreground.writing():
        assert list(foreground.paced(["a", "b"])) == ["a", "b"]
        foreground.give_way()
    assert not naps.waiting.is_set()
    done = []

    def writer() -> None:
        with foreground.writing():
            # a background thread writing (reflection saving a fact) does not wait for itself
            foreground.give_way()
            done.append(True)

    thread = foreground.background_thread(writer)
    thread.start()
    thread.join(60)
    assert done == [True] and not naps.waiting.is_set()


def test_a_background_thread_holding_what_writers_take_does_not_give_way(naps, tmp_path):
    """Holding the agent's lock or a memory.db write transaction, a background thread does not wait for the
    writers (they would wait for it); holding a lock no writer takes (a compaction's own), it does."""
    agent_lock = AgentLock(tmp_path / ".lock")
    compaction_lock = AgentLock(tmp_path / ".compact.lock", writers_take_it=False)
    db = SqliteDatabase(tmp_path / "memory.db")
    waited: dict[str, bool] = {}

    def background() -> None:
        for name, held in (("agent lock", agent_lock.hold), ("transaction", db.transaction),
                           ("compaction lock", compaction_lock.hold)):
            naps.waiting.clear()
            with held():
                foreground.give_way()
            waited[name] = naps.waiting.is_set()
        db.close()

    thread = foreground.background_thread(background)
    with foreground.writing():
        thread.start()
        assert naps.waiting.wait(60)  # at the compaction lock, which is the last
    thread.join(60)
    agent_lock.close()
    compaction_lock.close()
    assert waited == {"agent lock": False, "transaction": False, "compaction lock": True}


@pytest.fixture
def compacting_home(ollama_home):
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"compact_log_entries": 20}})
    return ollama_home


def test_a_compaction_parsing_log_md_parses_nothing_while_update_now_writes(compacting_home, monkeypatch):
    """The automatic compaction's parse of LOG.md (Python, in a background thread) stops while update_now
    writes: an update does not hand the GIL to it after each of its system calls. The compaction is held
    at its first line until update_now is inside its write, then left to run for ``SETTLE_S``: it parses
    no line until the update is over, and finishes afterwards."""
    monkeypatch.setattr(foreground, "GIVE_WAY_MAX_S", 3600.0, raising=False)
    held = HeldDuringWrite("agentos-compaction")
    monkeypatch.setattr(plan, "parse_or_none", held.item(plan.parse_or_none))
    monkeypatch.setattr(now_file, "stage", held.write(now_file.stage))
    with MemoryManager("finn") as manager:
        for i in range(30):
            manager.append_log("TOOL_USE", f"ran the portfolio tool, step {i}", {"tool": "portfolio"})
        assert held.started.wait(60), "the compaction started"
        manager.update_now("checking the portfolio", ["write the report"])
        assert manager.compaction.wait(60)
        assert list(manager.paths.archive_dir.glob("LOG-*.md")), "the compaction finished after the update"
    assert held.during == [], f"the compaction parsed {len(held.during)} lines while update_now was writing"


def test_the_recall_indexer_builds_no_doc_while_an_append_writes(ollama_home, monkeypatch):
    """The recall indexer's docs of new LOG.md entries (Python, in a background thread) wait while an append
    writes. The indexer is held at its first doc until an append is inside its write, then left to run for
    ``SETTLE_S``: it builds no doc until the append is over, and indexes everything afterwards."""
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"auto_compact": False}})
    monkeypatch.setattr(foreground, "GIVE_WAY_MAX_S", 3600.0, raising=False)
    monkeypatch.setattr(foreground, "PAUSE_S", 0.0)
    held = HeldDuringWrite("agentos-recall")
    monkeypatch.setattr(index, "log_doc", held.item(index.log_doc))
    monkeypatch.setattr(log_file, "datasync", held.write(log_file.datasync))
    with MemoryManager("finn") as manager:
        for i in range(10):
            manager.append_log("TOOL_USE", f"ran the portfolio tool, step {i}", {"tool": "portfolio"})
        assert held.started.wait(60), "the indexer started"
        manager.append_log("THOUGHT", "written while the indexer builds its docs")
        assert manager.cold.background.wait_idle(60)
        assert manager.cold.docs.count() >= 11
    assert held.during == [], f"the indexer built {len(held.during)} docs while the append was writing"


class CountingModel:
    """A token model double: a text's ids are its words' lengths, a row's vector the unit vector of its sums
    (the shape and contract of :class:`~core.llm.embedding.token_batches.TokenModel`); it records the CPU
    priority (nice) of the thread each run is made in."""

    window = 16
    rows_per_run = 64

    def __init__(self) -> None:
        self.nice: set[int] = set()

    def tokenize(self, texts):
        return [[101, *(len(word) for word in text.split()), 102] for text in texts]

    def run(self, rows):
        self.nice.add(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        vectors = np.array([[sum(row), len(row), 1.0] for row in rows], dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value is a thread's on Linux only")
def test_background_embedding_runs_at_a_lower_cpu_priority_unless_someone_waits_for_it():
    """Vectors computed by background work nobody waits for run in workers niced by BACKGROUND_NICE, so a
    writer woken from its flush gets a core first; a foreground call, and a background step someone hurries
    (a recall waiting for the vectors), compute at the process's priority. The calling thread is never
    niced."""
    own = os.getpriority(os.PRIO_PROCESS, 0)
    texts = [f"note {n} about the deploy " + "of the service " * (n % 5) for n in range(40)]
    results: dict[str, set[int]] = {}

    def embed(name: str, hurry: threading.Event | None = None) -> None:
        model = CountingModel()
        if hurry is None:
            token_batches.embed_texts(model, texts, budget=64)
        else:
            with foreground.step(threading.Event(), hurry):
                token_batches.embed_texts(model, texts, budget=64)
        results[name] = model.nice
        results[name + " caller"] = {os.getpriority(os.PRIO_PROCESS, threading.get_native_id())}

    hurried = threading.Event()
    hurried.set()
    for name, hurry in (("behind", None), ("hurried", hurried)):
        thread = foreground.background_thread(lambda name=name, hurry=hurry: embed(name, hurry))
        thread.start()
        thread.join(60)
    embed("foreground")
    assert results["behind"] == {min(19, own + getattr(foreground, "BACKGROUND_NICE", 10))}
    assert results["hurried"] == results["foreground"] == {own}
    assert results["behind caller"] == results["hurried caller"] == results["foreground caller"] == {own}
