"""A recall that cannot see every memory's vector says so, on every path, and never silently ranks on part of
it."""

from __future__ import annotations

import json
import re
import threading
from typing import Sequence

import pytest

from core.commands import main
from core.errors import BackendError, ConfigError
from core.llm.embedding.hashed_embedder import HashedWordsEmbedder
from core.memory.recall import cold, query as recall_query
from core.memory_manager import MemoryManager
from core.skills.memory.scripts import recall_memory as recall_skill
from tests.cold.conftest import write_config
from tests.inprocess import run_main

OLD = [f"week {n}: the user walked the dog along the river" for n in range(12)]
NEW = [f"day {n}: the user booked a flight to Lisbon for the conference" for n in range(7)]


class HeldEmbedder(HashedWordsEmbedder):
    """The test embedder, except that the background indexer's calls wait until ``released`` is set (a
    query's embedding, in the recall's own threads, does not): vectors that are deliberately late. With
    ``failing`` set they fail instead of waiting, as an embedder that is down does."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.held = threading.Event()
        self.failing = False

    def embed(self, texts: Sequence[str]):
        if threading.current_thread().name.startswith("agentos-recall") and not self.released.is_set():
            self.held.set()
            if self.failing:
                raise BackendError("the embedder is held back by the test")
            self.released.wait(120)
        return super().embed(texts)


@pytest.fixture
def held(agents_home, monkeypatch):
    """Every cold store opened from now on embeds with one :class:`HeldEmbedder` (released at the end)."""
    embedder = HeldEmbedder()
    monkeypatch.setattr(cold, "make_embedder", lambda config: embedder)
    yield embedder
    embedder.released.set()


def home_with(agents_home, **cold_options) -> None:
    write_config(agents_home, {"cold": {"embedder": "fake", "vector_wait_s": 0.3, **cold_options},
                               "memory": {"auto_compact": False}})


def stored_with_late_vectors(held: HeldEmbedder) -> MemoryManager:
    """Agent finn with OLD embedded, then NEW stored while the embedder holds their vectors back."""
    manager = MemoryManager("finn")
    held.released.set()
    manager.store_memories(OLD)
    assert manager.cold.background.wait_idle(120)
    held.released.clear()
    manager.store_memories(NEW)
    return manager


def test_a_recall_before_the_vectors_are_done_says_how_many_it_could_not_see(agents_home, held):
    home_with(agents_home)
    with stored_with_late_vectors(held) as manager:
        assert held.held.wait(60), "the background indexer reached the embedder"
        partial = manager.recall_memory("flight to Lisbon", n_results=5, min_score=0)
        assert partial.partial and partial.vectors_pending == len(NEW)
        assert re.match(f"{len(NEW)} memories had no vector yet after waiting [0-9.]+ s: those were ranked "
                        "by words only", partial.warning)
        assert "raise cold.vector_wait_s" in partial.warning
        held.released.set()
        assert manager.cold.background.wait_idle(120)
        complete = manager.recall_memory("flight to Lisbon", n_results=5, min_score=0)
        assert not complete.partial and complete.vectors_pending == 0 and complete.warning is None


def test_words_mode_ranks_every_memory_by_words_alone_while_vectors_are_pending(agents_home, held):
    home_with(agents_home, pending_vectors="words")
    with stored_with_late_vectors(held) as manager:
        found = manager.recall_memory("walked the dog to the Lisbon flight", n_results=10, min_score=0)
        assert "every memory was ranked by words only (cold.pending_vectors: words)" in found.warning
        request = recall_query.check_recall("walked the dog to the Lisbon flight", 10, min_score=0,
                                            default_min_score=0.15)
        by_words = recall_query.recall(request, manager.cold.docs, None, manager.cold.tuning, [])
        assert [(h["id"], h["score"]) for h in found] == [(h["id"], h["score"]) for h in by_words]
        held.released.set()  # the batch held back ends before the agent closes


def test_the_command_line_and_the_skill_show_the_warning_with_the_embedders_failure(agents_home, held):
    home_with(agents_home, vector_wait_s=120)  # a failing embedder ends the wait at once
    held.failing = True
    stored_with_late_vectors(held).close()
    ran = run_main(main, ["recall", "--agent", "finn", "flight to Lisbon", "--json", "--min-score", "0"])
    assert ran.returncode == 0 and len(json.loads(ran.stdout)) == 5
    assert re.search(f"warning: {len(NEW)} memories had no vector yet after waiting [0-9.]+ s \\(the "
                     "embedder failed: the embedder is held back by the test\\)", ran.stderr)
    answer = recall_skill.execute("finn", query="the user booked a flight to Lisbon", n_results=3)
    assert isinstance(answer["results"],
                      list) and answer["warning"].startswith(f"{len(NEW)} memories had no vector yet")


def test_an_unknown_pending_vectors_mode_is_a_config_error(agents_home):
    home_with(agents_home, pending_vectors="guess")
    with MemoryManager("finn") as manager:
        manager.store_memory("anything at all")
        with pytest.raises(ConfigError,
                           match="cold.pending_vectors 'guess' is not known; use one of: flag, words"):
            manager.recall_memory("anything")
