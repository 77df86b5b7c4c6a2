"""Token-bounded batches: a batch costs what its tokens cost, and a long text is embedded whole."""

from __future__ import annotations

import numpy as np
import pytest

from core.llm.embedding import token_batches
from core.llm.embedding.embedders import MiniLMEmbedder, load_minilm
from core.llm.embedding.token_batches import batches, windows

pytestmark = pytest.mark.slow  # the real model's vectors of windows and batches


def test_windows_keep_the_special_tokens_around_consecutive_parts_and_stop_at_the_cap() -> None:
    """Each window is [CLS] + a consecutive slice + [SEP], no longer than the model's length."""
    ids = [101, *range(1, 600), 102]
    parts = windows(ids, 256, 10)
    assert [len(p) for p in parts] == [256, 256, 93]
    assert all(p[0] == 101 and p[-1] == 102 for p in parts)
    assert [t for p in parts for t in p[1:-1]] == list(range(1, 600))
    assert len(windows(ids, 256, 2)) == 2
    assert windows([101, 5, 102], 256, 4) == [[101, 5, 102]]


def test_batches_stay_within_the_token_budget_and_cover_every_row_once() -> None:
    """Rows × longest row never exceeds the budget (unless one row alone does); every row is in one batch."""
    lengths = [256] + [12] * 56 + [40, 180, 7]
    groups = batches(lengths, budget=1024, max_rows=64)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        assert len(group) == 1 or len(group) * max(lengths[i] for i in group) <= 1024
    assert not any(0 in g and 1 in g for g in groups)  # the long row does not pad the short ones
    assert len(batches([3] * 200, budget=10_000, max_rows=64)) == 4


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.mark.parametrize("int8", [True, False], ids=["int8", "float"])
def test_a_batch_gives_each_text_the_vector_it_gets_alone(model, int8) -> None:
    """56 short texts and a long one in one call: the same vectors as one text at a time (the int8 graph,
    whose inputs are quantized a run at a time, runs each text alone)."""
    short = [f"note {i}: the deploy of service {i % 5} failed on host {i % 3}" for i in range(56)]
    long = "the billing service timed out after 45 seconds; we added a retry with backoff " * 60
    together = MiniLMEmbedder(int8=int8).embed(short + [long])
    for n, text in enumerate(short[:5] + [long]):
        alone = MiniLMEmbedder(int8=int8).embed([text])[0]
        assert np.abs(together[n if n < 5 else 56] - alone).max() < 1e-5


def test_the_int8_graph_gives_the_float_graphs_vectors_within_a_cosine_of_0_97() -> None:
    """Chat-like texts, short and long: each int8 vector is within cosine 0.97 of the float one, 0.99 on
    average."""
    texts = [(f"user: I finally moved the {w} to the new shelf, and honestly it looks better than I "
              "expected ") * r for r in (1, 3, 9)
             for w in ("books", "plants", "camera bag", "vinyl records")] + ["hi", "Lisbon?"]
    cosines = (MiniLMEmbedder(int8=True).embed(texts) * MiniLMEmbedder(int8=False).embed(texts)).sum(axis=1)
    assert cosines.min() >= 0.97 and cosines.mean() >= 0.99


def test_shares_hold_about_as_many_tokens_and_every_row_once() -> None:
    """Rows dealt to two worker threads: every row in one batch of one share; the shares' tokens within
    the longest row of each other; a single batch's rows stay in one share."""
    lengths = [256, 7, 12, 180, 40] * 30
    shares = token_batches.shared_batches(lengths, budget=1024, max_rows=64)
    assert len(shares) == 2
    assert sorted(i for share in shares for group in share for i in group) == list(range(len(lengths)))
    tokens = [sum(lengths[i] for group in share for i in group) for share in shares]
    assert abs(tokens[0] - tokens[1]) <= max(lengths)
    assert len(token_batches.shared_batches([5, 9, 12], budget=1024)) == 1
    assert [len(share) for share in token_batches.shared_batches([5, 9, 12], max_rows=1)] == [2, 1]


def test_a_long_text_is_the_token_weighted_mean_of_its_windows(model) -> None:
    """A text past 256 tokens gets the normalised mean of its windows' vectors, weighted by their tokens;
    a text of one window gets exactly the model's vector."""
    long = " ".join(f"word{i} about topic {i % 13}" for i in range(300))
    ids = model.tokenize([long])[0]
    parts = windows(ids, model.window, token_batches.MAX_WINDOWS)
    assert len(parts) > 1
    each = np.vstack([model.run([part]) for part in parts])
    weights = np.array([len(p) - 2 for p in parts], dtype=np.float32)[:, None]
    mean = (each * weights).sum(0)
    assert np.abs(model.embed([long])[0] - mean / np.linalg.norm(mean)).max() < 1e-5
    short = "What did Ada say about Lisbon?"
    assert np.abs(model.embed([short])[0] - model.run(model.tokenize([short]))[0]).max() < 1e-6


def test_batches_run_on_two_threads_give_the_vectors_of_one(model, monkeypatch) -> None:
    """A call of several batches runs them on two worker threads (each a model run of its own), and every
    text gets the same vector, in the same place, as when they run one after the other."""
    texts = [f"note {n}: the deploy of service {n % 7} " + "waited on the database migration " * (n % 9)
             for n in range(120)]
    threads = set()
    run = model.run

    def recorded(rows):
        import threading

        threads.add(threading.current_thread().name)
        return run(rows)

    monkeypatch.setattr(model, "run", recorded)
    monkeypatch.setattr(token_batches, "MAX_WORKERS", 1)
    alone = token_batches.embed_texts(model, texts, budget=512)
    assert threads == {"MainThread"}
    threads.clear()
    monkeypatch.setattr(token_batches, "MAX_WORKERS", 2)
    together = token_batches.embed_texts(model, texts, budget=512)
    assert len(threads) == 2 and all(name.startswith("embed") for name in threads)
    assert np.allclose(alone, together, atol=1e-6)
