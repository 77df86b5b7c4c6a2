"""all-MiniLM-L6-v2 in ONNX Runtime: sentence-transformers' vectors, a checked cache, a fallback, no torch later."""

from __future__ import annotations

import logging
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from core.errors import BackendError
from core.llm import embedders, minilm_onnx
from core.llm.embedders import TorchMiniLM, _load_sentence_transformer

ROOT = Path(__file__).resolve().parents[2]
WORDS = "the a billing service Lisbon café 東京 timed out retry 12 seconds Ada said yesterday ¿qué? 🎉".split()


@pytest.fixture(scope="module")
def sentence_transformer():
    return _load_sentence_transformer()


@pytest.fixture(scope="module")
def exported(sentence_transformer, tmp_path_factory):
    """The exported model, cached in a folder of this module."""
    folder = tmp_path_factory.mktemp("model-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTOS_MODEL_CACHE", str(folder))
        runner = minilm_onnx.export(sentence_transformer)
    return runner, minilm_onnx.cached_model_path().name, folder


def texts(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 400))) for _ in range(count)]


def test_vectors_equal_sentence_transformers_for_single_texts_and_padded_batches(exported, sentence_transformer):
    """Short, long (truncated at 256 tokens), non-ASCII; one at a time and in batches of mixed lengths."""
    runner, _, _ = exported
    reference = TorchMiniLM(sentence_transformer)
    sample = texts(70)
    assert np.abs(runner.embed(sample) - reference.embed(sample)).max() < minilm_onnx.TOLERANCE
    for text in sample[:10] + ["x", "What did Ada say about Lisbon?"]:
        assert np.abs(runner.embed([text]) - reference.embed([text])).max() < minilm_onnx.TOLERANCE


def test_the_cache_is_loaded_in_a_new_process_without_torch(exported):
    """A later process loads the cached file (checked on its probes) and never imports torch."""
    runner, _, folder = exported
    code = ("import sys; from core.llm.embedders import MiniLMEmbedder, load_minilm;"
            "v = MiniLMEmbedder().embed(['What did Ada say about Lisbon?'])[0];"
            "print(load_minilm().runtime); print('torch' in sys.modules); print(' '.join(map(repr, v.tolist())))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "AGENTOS_MODEL_CACHE": str(folder)})
    runtime, torch_loaded, vector = out.stdout.strip().splitlines()
    assert (runtime, torch_loaded) == ("ONNX Runtime", "False")
    values = np.array([float(x) for x in vector.split()], dtype=np.float32)
    assert np.abs(values - runner.embed(["What did Ada say about Lisbon?"])[0]).max() < 1e-6


def test_a_damaged_cached_file_is_exported_again(exported, sentence_transformer, tmp_path, monkeypatch, caplog):
    _, name, _ = exported
    monkeypatch.setenv("AGENTOS_MODEL_CACHE", str(tmp_path))
    (tmp_path / name).write_bytes(b"not an onnx model")
    with caplog.at_level(logging.WARNING):
        assert minilm_onnx.load_cached() is None
    assert "exporting all-MiniLM-L6-v2 again" in caplog.text
    minilm_onnx.export(sentence_transformer)
    assert isinstance(minilm_onnx.load_cached(), minilm_onnx.OnnxMiniLM)


def test_a_model_that_does_not_give_the_probes_vectors_is_refused(exported, tmp_path, monkeypatch):
    """A cached file whose vectors drifted (another runtime, a tampered file) is not used."""
    import onnx

    _, name, folder = exported
    proto = onnx.load(str(folder / name))
    probes = {p.key: p.value for p in proto.metadata_props}
    vectors = minilm_onnx.json.loads(probes[minilm_onnx._CHECK_KEY])
    vectors["vectors"][0][0] += 0.01
    del proto.metadata_props[:]
    onnx.helper.set_model_props(proto, {minilm_onnx._CHECK_KEY: minilm_onnx.json.dumps(vectors)})
    with pytest.raises(BackendError, match="does not give sentence-transformers' vectors"):
        minilm_onnx.OnnxMiniLM(proto.SerializeToString())


def test_an_unwritable_cache_still_gives_the_fast_runner(sentence_transformer, tmp_path, monkeypatch, caplog):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("AGENTOS_MODEL_CACHE", str(blocked / "cache"))
    with caplog.at_level(logging.WARNING):
        runner = minilm_onnx.export(sentence_transformer)
    assert runner.embed(["hello"]).shape == (1, 384)
    assert "not kept" in caplog.text and not (blocked / "cache").exists()


def test_an_export_that_fails_leaves_sentence_transformers_in_charge(monkeypatch, tmp_path, caplog):
    """load_minilm never fails because the export does: it logs why and runs the model in torch."""
    monkeypatch.setenv("AGENTOS_MODEL_CACHE", str(tmp_path))

    def broken(model):
        raise BackendError("cannot export all-MiniLM-L6-v2 to ONNX: the exporter is missing")

    monkeypatch.setattr(minilm_onnx, "export", broken)
    with caplog.at_level(logging.WARNING):
        runner = embedders._load_minilm()
    assert isinstance(runner, TorchMiniLM) and "runs in sentence-transformers" in caplog.text
    assert runner.embed(["hello"]).shape == (1, 384)


def test_queries_and_background_batches_embed_at_once_from_two_threads(exported):
    """A recall's query and the indexer's batches share one runner: no error, the same vectors."""
    runner = exported[0]
    batch, queries = texts(64, seed=2), texts(40, seed=3)
    expected_batch, expected = runner.embed(batch), [runner.embed([q]) for q in queries]
    errors: list[BaseException] = []
    stop = threading.Event()

    def batches() -> None:
        while not stop.is_set():
            try:
                assert np.array_equal(runner.embed(batch), expected_batch)
            except BaseException as exc:  # noqa: BLE001 - reported to the test's thread
                errors.append(exc)
                return

    worker = threading.Thread(target=batches)
    worker.start()
    try:
        for query, vector in zip(queries * 3, expected * 3):
            assert np.abs(runner.embed([query]) - vector).max() < 1e-6
    finally:
        stop.set()
        worker.join()
    assert not errors
