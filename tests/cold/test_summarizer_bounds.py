"""Faulty summarizers are bounded, seen through the memory an agent uses (compact_log, automatic compaction,
close)."""

from __future__ import annotations

import threading

import pytest

from core.memory_manager import MemoryManager
from tests.cold.conftest import write_config


@pytest.fixture
def home(ollama_home):
    write_config(ollama_home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                               "memory": {"compact_log_entries": 20, "compact_timeout_s": 0.5}})
    return ollama_home


def fill(manager: MemoryManager, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        manager.append_log("THOUGHT", f"thought {i}: compare the supplier list with the ledger")


def test_a_hanging_summarizer_delays_compact_log_only_by_its_timeout(home) -> None:
    """A model that hangs 15 s: compact_log returns after compact_timeout_s with the deterministic summary."""
    release, returned = threading.Event(), threading.Event()

    def hang(prompt: str) -> str:
        release.wait(60)
        returned.set()
        return "late"

    with MemoryManager("finn") as manager:
        manager.compaction.summary_llm = hang
        fill(manager, 5)
        report = manager.compact_log()
        assert not returned.is_set(), "compact_log waited for the hanging model"
        release.set()
        assert report.done and report.summary_method == "deterministic"


def test_close_abandons_a_background_compaction_waiting_on_its_model(home) -> None:
    """close() while automatic compaction waits on a hanging model returns at once; LOG.md stays whole."""
    write_config(home, {"cold": {"embedder": "ollama:fake-embed"}, "llm": {"backend": "offline"},
                        "memory": {"compact_log_entries": 20, "compact_timeout_s": 60}})
    release = threading.Event()
    called = threading.Event()

    returned = threading.Event()

    def hang(prompt: str) -> str:
        called.set()
        release.wait(60)
        returned.set()
        return "late"

    manager = MemoryManager("finn")
    manager.compaction.summary_llm = hang
    fill(manager, 25)
    assert called.wait(60)
    manager.close()
    assert not returned.is_set(), "close() waited for the hanging model"
    release.set()
    with MemoryManager("finn") as again:
        seqs = [e.seq for e in again.scan_log().entries]
        archived = sum(int(p.stem.split("-")[2]) - int(p.stem.split("-")[1]) + 1
                       for p in again.paths.archive_dir.glob("LOG-*.md"))
        assert archived + len([s for s in seqs if s <= 25]) >= 25


@pytest.mark.parametrize("reply", ["<think>I will summarise this later.</think>", None])
def test_an_unusable_summary_never_makes_log_md_grow(home, reply: str | None) -> None:
    """A <think>-only reply, or one longer than its input, is refused: LOG.md shrinks by compaction, never
    grows."""
    with MemoryManager("finn") as manager:
        manager.compaction.summary_llm = (lambda prompt: reply) if reply else (lambda prompt: prompt * 3)
        manager.append_log("THOUGHT", "a short log")
        report = manager.compact_log()
        assert report.done and report.summary_method == "deterministic"
        summary = manager.scan_log().entries[0]
        assert summary.type == "SUMMARY" and len(summary.content) < 300 and "<think>" not in summary.content
        assert manager.paths.log_file.stat().st_size < 800  # header + the SUMMARY (3,240 bytes before)


def test_a_failing_summarizer_is_asked_once_then_rests_during_automatic_compaction(home) -> None:
    """200 appends over a 20-entry threshold with a model that raises: a handful of model calls, not one an
    append."""
    calls = []

    def broken(prompt: str) -> str:
        calls.append(prompt)
        raise RuntimeError("CUDA out of memory")

    with MemoryManager("finn") as manager:
        manager.compaction.summary_llm = broken
        for i in range(200):
            manager.append_log("THOUGHT", f"thought {i}: " + "the supplier list " * 10)
            manager.compaction.wait(10)
        compactions = manager.db.conn.execute("SELECT count(*) FROM compaction_history").fetchone()[0]
    assert compactions >= 5  # LOG.md stays bounded: the deterministic summary is used
    assert len(calls) == 1  # then the model rests for AUTO_RETRY_S
