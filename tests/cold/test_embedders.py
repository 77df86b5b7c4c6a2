"""Embedders: the real offline MiniLM model, the Ollama client against a loopback server, lazy imports."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from core.config import ColdConfig, Config
from core.errors import BackendUnavailableError, ConfigError, ModelNotFoundError
from core.llm.embedding.embedders import MINILM_NAME, MiniLMEmbedder, OllamaEmbedder, make_embedder

ROOT = Path(__file__).resolve().parents[2]


def test_minilm_returns_normalised_384d_vectors_that_rank_by_meaning(minilm):
    """The default embedder gives unit 384-d vectors whose similarity follows meaning."""
    vectors = MiniLMEmbedder().embed(["The user prefers euros", "Preferred currency: EUR",
                                      "The cat sat on a mat"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


@pytest.mark.slow
def test_importing_core_and_opening_a_manager_does_not_import_torch():
    """Importing core and reading an agent's memory (NOW, LOG, facts, the prompt's context) imports neither
    torch, sentence_transformers nor lance: only vectors need them (writes compute those in the
    background)."""
    code = (
        "import sys, os, tempfile; os.environ['AGENTOS_HOME'] = tempfile.mkdtemp();"
        "from core.memory_manager import MemoryManager; m = MemoryManager('finn'); m.read_now(); "
        "m.read_log(5);m.get_fact('k'); m.list_facts(); m.format_context_for_prompt(); m.close();"
        "print(sorted(n for n in ('torch', 'sentence_transformers', 'lancedb', 'lance') if n in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_ollama_embedder_uses_the_official_client_against_a_loopback_server(ollama_url):
    """An Ollama embedding model is reached through ollama.Client and its dimension is learnt."""
    embedder = OllamaEmbedder("fake-embed", host=ollama_url)
    vectors = embedder.embed(["error deploy", "deploy error"])
    assert embedder.dimension() == 64 and embedder.name == "ollama:fake-embed"
    assert np.allclose(vectors[0], vectors[1])


def test_ollama_unknown_model_and_refused_connection_become_clear_errors(ollama_url):
    """A missing model raises ModelNotFoundError naming `ollama pull`; a dead server
    BackendUnavailableError."""
    with pytest.raises(ModelNotFoundError, match="ollama pull no-such-model"):
        OllamaEmbedder("no-such-model", host=ollama_url).embed(["x"])
    with pytest.raises(BackendUnavailableError, match="cold.embedder to minilm"):
        OllamaEmbedder("fake-embed", host="http://127.0.0.1:9").embed(["x"])


def test_make_embedder_follows_config_and_rejects_unknown_names():
    """cold.embedder picks MiniLM (int8, or float with minilm-float32: one embedder name for both) or
    ollama:<model>; anything else is a ConfigError listing the choices."""
    default, exact = (
        make_embedder(Config()),
        make_embedder(replace(Config(), cold=ColdConfig(embedder="minilm-float32"))),
    )
    assert ((default.name, default.int8) == (MINILM_NAME, True)
            and (exact.name, exact.int8) == (MINILM_NAME, False))
    assert make_embedder(replace(Config(), cold=ColdConfig(embedder="ollama:nomic-embed-text"))).name == (
        "ollama:nomic-embed-text"
    )
    with pytest.raises(ConfigError, match="'minilm', 'minilm-float32' or 'ollama:<model>'"):
        make_embedder(replace(Config(), cold=ColdConfig(embedder="word2vec")))


def test_one_text_fast_path_matches_batch_encoding(minilm):
    """A single text (the recall query path) embeds exactly as it does inside a batch, long texts included."""
    embedder = MiniLMEmbedder()
    short = "Deploy failed with error E4031 on the staging server"
    long = " ".join(f"step {i}: the agent retried the quotes download after a timeout" for i in range(60))
    batch = embedder.embed(["an unrelated first text", short, long])
    for i, text in ((1, short), (2, long)):
        assert np.allclose(embedder.embed([text])[0], batch[i], atol=1e-5)
