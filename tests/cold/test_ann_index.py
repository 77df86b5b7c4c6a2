"""The cold store's ANN vector index: when it is built, what it finds, and how it fails."""

from __future__ import annotations

import importlib
import inspect
import logging
import re
from pathlib import Path

import numpy as np
import pytest

import core.memory.recall.ann_index as ann_index
from core.memory.recall.store import ColdStore, VectorRow
from core.llm.embedding.embedders import MiniLMEmbedder

DOC_MODULES = ["argparse", "asyncio", "collections", "csv", "datetime", "decimal", "email", "fractions",
               "functools", "http.client", "json", "logging", "pathlib", "shutil", "sqlite3", "statistics",
               "subprocess", "tarfile", "threading", "unittest", "urllib.request", "zipfile", "textwrap",
               "random", "socket"]


def doc_sentences() -> list[str]:
    """About a thousand distinct real English sentences: the docstrings of standard-library modules."""
    seen: dict[str, None] = {}
    for name in DOC_MODULES:
        module = importlib.import_module(name)
        for obj in [module] + [getattr(module, a) for a in sorted(dir(module)) if not a.startswith("_")]:
            if not (inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            for paragraph in (inspect.getdoc(obj) or "").split("\n\n"):
                for sentence in re.split(r"(?<=[.!?])\s+", " ".join(paragraph.split())):
                    if 50 <= len(sentence) <= 200 and sentence[0].isupper() and ">>>" not in sentence:
                        seen.setdefault(sentence)
    return list(seen)


@pytest.fixture(scope="module")
def corpus(minilm):
    """(texts, vectors, queries, query vectors): real sentences embedded once by all-MiniLM-L6-v2."""
    sentences = doc_sentences()
    assert len(sentences) > 600
    texts, queries = [s for i, s in enumerate(sentences) if i % 10], sentences[::10]
    embedder = MiniLMEmbedder()
    return texts, embedder.embed(texts), queries, embedder.embed(queries)


def open_store(tmp_path: Path, **options) -> ColdStore:
    return ColdStore(tmp_path / "lancedb", MiniLMEmbedder(), tmp_path / ".cold.lock", reindex_hint="-",
                     **options)


def add_rows(store: ColdStore, texts: list[str], vectors: np.ndarray) -> None:
    """Append pre-embedded rows in one write (as a large archive would be)."""
    import pyarrow as pa

    ids = [f"note:{i}" for i in range(len(texts))]
    store.table.insert(pa.table({
        "id": ids, "kind": ["note"] * len(texts), "text": texts, "source": ids,
        "occurred_at": ["2026-01-01T00:00:00.000Z"] * len(texts), "memory": ["{}"] * len(texts),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1]),
    }))


def note(row_id: str, text: str) -> VectorRow:
    return VectorRow(row_id, "note", text, row_id, "2026-01-01T00:00:00.000Z")


def first_id(store: ColdStore, text: str) -> str:
    return store.nearest(store.embedder.embed([text])[0], 1)[0]["id"]


def uses_index(store: ColdStore, vector: np.ndarray) -> bool:
    return "ANNSubIndex" in store.explain_nearest(vector)


def recall_at_10(store: ColdStore, query_vectors: np.ndarray) -> float:
    found = []
    for vector in query_vectors:
        ann = {r["id"] for r in store.nearest(vector, 10)}
        exact = {r["id"] for r in store.nearest(vector, 10, exact=True)}
        found.append(len(ann & exact) / 10)
    return float(np.mean(found))


@pytest.fixture
def indexed(tmp_path, corpus):
    """A store holding the corpus, optimized once so that it has its vector index."""
    texts, vectors, _, _ = corpus
    store = open_store(tmp_path, ann_min_rows=500)
    add_rows(store, texts, vectors)
    store.optimize()
    yield store
    store.close()


def test_ann_top10_matches_exact_search_on_real_sentences(indexed, corpus, monkeypatch):
    """On real MiniLM embeddings the index returns >= 0.9 of the exact top 10, even probing 1/8 of it."""
    _, _, _, query_vectors = corpus
    assert indexed.vector_index()["type"] == "IVF_FLAT" and uses_index(indexed, query_vectors[0])
    assert recall_at_10(indexed, query_vectors) >= 0.98
    partitions = round(len(corpus[0]) ** 0.5)
    # Production probes 40 of ~316 partitions at 100k chunks; probe the same share here.
    monkeypatch.setattr(ann_index, "ANN_NPROBES", max(1, partitions // 8))
    assert recall_at_10(indexed, query_vectors) >= 0.9


def test_rows_added_after_the_index_are_found_at_once_and_folded_in_by_optimize(indexed, corpus):
    """A memory written after the index was built is searched exactly until optimize indexes it."""
    texts, _, _, _ = corpus
    indexed.put([note("note:new", "The quarterly report on Nvidia stock was emailed to Maria on Friday")])
    assert indexed.vector_index()["unindexed_rows"] == 1
    assert first_id(indexed, "report about Nvidia shares sent to Maria") == "note:new"
    indexed.optimize()
    assert indexed.vector_index()["unindexed_rows"] == 0
    assert indexed.vector_index()["indexed_rows"] == len(texts) + 1
    assert first_id(indexed, "report about Nvidia shares sent to Maria") == "note:new"


def test_index_is_retrained_once_optimize_stacked_too_many_segments(indexed, corpus, monkeypatch):
    """Each optimize with new rows adds an index segment; past ANN_MAX_SEGMENTS the index is rebuilt as
    one."""
    monkeypatch.setattr(ann_index, "ANN_MAX_SEGMENTS", 2)
    segments = []
    for n in range(3):
        indexed.put([note(f"note:x{n}", f"extra note {n} on the staging deploy")])
        indexed.optimize()
        segments.append(indexed.vector_index()["segments"])
    # Never more than the cap; the last optimize would have made 3, so it retrained into 1.
    assert max(segments) <= 2 and segments[-2:] == [2, 1]
    assert indexed.vector_index()["indexed_rows"] == len(corpus[0]) + 3


def test_index_is_retrained_when_the_table_has_doubled_since_it_was_trained(tmp_path, corpus):
    """An index trained on a small table would keep its few partitions: once the table has doubled,
    optimize trains it again on every row (the trained row count survives reopening the store)."""
    texts, vectors, _, query_vectors = corpus
    half = len(texts) // 2
    store = open_store(tmp_path, ann_min_rows=100)
    add_rows(store, texts[:200], vectors[:200])
    store.optimize()
    assert ann_index.trained_rows(store.table) == 200 and store.vector_index()["segments"] == 1
    store.put([note("note:a", "one more note about the staging deploy")])
    store.optimize()  # 201 rows: folded in, no retraining
    assert ann_index.trained_rows(store.table) == 200 and store.vector_index()["indexed_rows"] == 201
    store.close()
    store = open_store(tmp_path, ann_min_rows=100)
    import pyarrow as pa

    more = [f"more:{i}" for i in range(half)]
    store.table.insert(pa.table({
        "id": more, "kind": ["note"] * half, "text": texts[200 : 200 + half], "source": more,
        "occurred_at": ["2026-01-01T00:00:00.000Z"] * half, "memory": ["{}"] * half,
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors[200 : 200 + half].ravel()),
                                                    vectors.shape[1]),
    }))
    store.optimize()
    rows = 201 + half
    assert ann_index.trained_rows(store.table) == rows
    assert store.vector_index() == {"type": "IVF_FLAT", "indexed_rows": rows, "unindexed_rows": 0,
                                    "segments": 1}
    assert recall_at_10(store, query_vectors) >= 0.98
    store.close()


def test_small_tables_and_a_zero_threshold_keep_exact_search(tmp_path, corpus):
    """Below ann_min_rows, or with ann_min_rows = 0, optimize builds no index and search is exact."""
    texts, vectors, _, query_vectors = corpus
    for name, threshold in (("small", len(texts) + 1), ("off", 0)):
        store = open_store(tmp_path / name, ann_min_rows=threshold)
        add_rows(store, texts, vectors)
        store.optimize()
        assert store.vector_index() is None and not uses_index(store, query_vectors[0])
        store.close()


def test_a_failed_index_build_is_logged_and_search_stays_exact(tmp_path, corpus, monkeypatch, caplog):
    """If Lance cannot build the index, optimize still succeeds, logs it, and search answers exactly."""
    from lance.dataset import LanceDataset

    texts, vectors, queries, query_vectors = corpus
    store = open_store(tmp_path, ann_min_rows=10)
    add_rows(store, texts, vectors)

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(LanceDataset, "create_index", no_space)
    with caplog.at_level(logging.WARNING, logger="core.memory.recall.ann_index"):
        store.optimize()
    assert "search stays exact" in caplog.text and store.vector_index() is None
    assert store.nearest(query_vectors[0], 10) == store.nearest(query_vectors[0], 10, exact=True)
    store.close()


def test_writes_start_a_background_optimize_that_builds_the_index(tmp_path, minilm):
    """Every optimize_every-th write optimizes in a background thread; close() waits for it."""
    store = open_store(tmp_path, ann_min_rows=3, optimize_every=2)
    for n in range(4):
        store.put([note(f"note:{n}", f"note number {n} about the staging deploy")])
    store.close()
    again = open_store(tmp_path, ann_min_rows=3)
    assert again.vector_index() is not None
    assert first_id(again, "note number 2 about the staging deploy") == "note:2"
    again.close()


def test_rebuild_index_builds_the_vector_index(agents_home, minilm):
    """rebuild_all (scripts/rebuild_index.py) ends with an optimize that indexes a big enough table."""
    from core.memory.upkeep.rebuild import rebuild_all
    from core.memory_manager import MemoryManager
    from tests.cold.conftest import write_config

    write_config(agents_home, {"cold": {"ann_min_rows": 3}, "llm": {"backend": "offline"},
                               "memory": {"auto_compact": False}})
    with MemoryManager("finn") as manager:
        for text in ("The user prefers euros", "Deploy failed on staging", "Maria liked the report",
                     "Nvidia earnings are due on Wednesday"):
            manager.store_memory(text)
        result = rebuild_all(manager.tiers)
        assert result.memories == 4 and result.vector_index["indexed_rows"] == 4
        assert manager.recall_memory("when are Nvidia's results published?",
                                     1)[0]["content"].startswith("Nvidia")
