"""The test embedder (``cold.embedder: fake``): deterministic unit vectors where shared words mean
nearness."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from core.config import ColdConfig, Config
from core.errors import EmbedderMismatchError
from core.llm.embedding.embedders import OllamaEmbedder, make_embedder
from core.llm.embedding.hashed_embedder import HASHED_DIMENSION, HASHED_NAME, HashedWordsEmbedder
from core.memory.recall.store import ColdStore, VectorRow
from tests.conftest import ROOT

HINT = "agentos rebuild-index --agent finn"
TEXTS = ["The report goes to Ada now", "Who gets the report?", "Sunny weather in Lisbon", "", "?!",
         "ünïcödé 東京"]


def test_config_fake_selects_it_and_the_default_stays_minilm():
    """cold.embedder 'fake' is the hashed-words embedder; an agent without it keeps all-MiniLM-L6-v2."""
    embedder = make_embedder(Config(cold=ColdConfig(embedder="fake")))
    assert isinstance(embedder, HashedWordsEmbedder) and embedder.name == HASHED_NAME
    assert make_embedder(Config()).name != HASHED_NAME


def test_unit_vectors_of_384_dimensions_for_any_text():
    """Every text, empty and punctuation-only ones too, gets a finite unit float32 vector of 384
    dimensions."""
    vectors = HashedWordsEmbedder().embed(TEXTS)
    assert vectors.shape == (len(TEXTS), HASHED_DIMENSION) == (len(TEXTS), HashedWordsEmbedder().dimension())
    assert vectors.dtype == np.float32 and np.all(np.isfinite(vectors))
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert HashedWordsEmbedder().embed([]).shape == (0, HASHED_DIMENSION)


def test_shared_words_are_near_and_other_texts_far():
    """Texts sharing words score above texts sharing none; a word's plural stays near it; case is ignored."""
    report, question, weather, *_ = HashedWordsEmbedder().embed(TEXTS)
    assert float(report @ question) > float(report @ weather) + 0.2
    word, plural, other = HashedWordsEmbedder().embed(["report", "reports", "garden"])
    assert float(word @ plural) > 0.5 > abs(float(word @ other))
    upper, lower = HashedWordsEmbedder().embed(["The REPORT", "the report"])
    assert np.array_equal(upper, lower)


@pytest.mark.slow
def test_the_same_vectors_in_every_process():
    """A new process, with another string-hash seed, gives the same vectors bit for bit: a store written by
    one process is searched by another."""
    code = ("import json; from core.llm.embedding.hashed_embedder import HashedWordsEmbedder; "
            f"print(json.dumps(HashedWordsEmbedder().embed({TEXTS!r}).tolist()))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    there = np.array(json.loads(done.stdout), dtype=np.float32)
    assert np.array_equal(there, HashedWordsEmbedder().embed(TEXTS))


def test_a_store_built_with_it_finds_by_words_and_refuses_another_embedder(tmp_path, ollama_url):
    """A cold store records the test embedder: it finds a memory by its words, and another embedder is
    refused."""
    store = ColdStore(tmp_path / "lancedb", HashedWordsEmbedder(), tmp_path / ".cold.lock", reindex_hint=HINT)
    try:
        store.put([VectorRow("note:1", "note", "The report goes to Ada now", "note:1",
                             "2026-01-10T00:00:00.000Z"),
                   VectorRow("note:2", "note", "Sunny weather in Lisbon", "note:2",
                             "2026-01-11T00:00:00.000Z")])
        query = store.embedder.embed(["who gets the report"])[0]
        assert [found["id"] for found in store.nearest(query, 2)] == ["note:1", "note:2"]
    finally:
        store.close()
    other = ColdStore(tmp_path / "lancedb", OllamaEmbedder("fake-embed", host=ollama_url),
                      tmp_path / ".cold.lock",
                      reindex_hint=HINT)
    with pytest.raises(EmbedderMismatchError, match=HASHED_NAME):
        other.count()
