"""The LanceDB cold store: hybrid recall, filters, idempotent upserts, embedder checks, hygiene."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from core.errors import EmbedderMismatchError, ValidationError
from core.memory.cold_store import Chunk, ColdStore
from core.llm.embedders import MiniLMEmbedder, OllamaEmbedder

ROOT = Path(__file__).resolve().parents[2]


def chunk(n: int, text: str, kind: str = "note", created: str = "2026-01-10T00:00:00.000Z") -> Chunk:
    return Chunk(f"note:{n}", f"note:{n}", kind, text, f"note:{n}", created, {"n": n})


def open_store(tmp_path: Path, embedder=None) -> ColdStore:
    return ColdStore(tmp_path / "lancedb", embedder or MiniLMEmbedder(), tmp_path / ".cold.lock",
                     reindex_hint="python scripts/rebuild_index.py --agent finn")


CORPUS = [
    "The user asked about AAPL and MSFT stock prices last week",
    "Deploy failed with error E4031 on the staging server",
    "The user's preferred currency is EUR",
    "Lunch order: pizza with mushrooms",
    "Decided to use pandas for the returns calculation",
]


@pytest.fixture
def store(tmp_path, minilm):
    s = open_store(tmp_path)
    s.upsert({f"note:{i}": [chunk(i, text, created=f"2026-01-{10 + i}T00:00:00.000Z")]
              for i, text in enumerate(CORPUS)})
    yield s
    s.close()


def test_hybrid_search_finds_by_meaning(store):
    """A paraphrase with no shared keyword still finds the right chunk first (vector side)."""
    hits = store.search("Which shares was the person interested in?", 2)
    assert hits[0].chunk.text == CORPUS[0]


def test_hybrid_search_finds_exact_identifiers(store):
    """An exact code that embeddings barely capture is found by the full-text side."""
    hits = store.search("E4031", 1)
    assert hits[0].chunk.text == CORPUS[1]


def test_filters_by_kind_and_time(store):
    """kind and since/until restrict results before ranking."""
    store.upsert({"fact:x": [Chunk("fact:x", "fact:x", "fact", "currency: EUR", "fact:x", "2026-02-01T00:00:00.000Z")]})
    assert [h.chunk.kind for h in store.search("currency", 5, kinds=["fact"])] == ["fact"]
    window = store.search("anything about the user", 10, since="2026-01-12T00:00:00.000Z",
                          until="2026-01-13T00:00:00.000Z")
    assert sorted(h.chunk.text for h in window) == sorted([CORPUS[2], CORPUS[3]])
    with pytest.raises(ValidationError, match="unknown memory kind"):
        store.search("x", 1, kinds=["secret"])


def test_upsert_is_idempotent_and_replaces_an_origins_chunks(store):
    """Indexing the same origin twice leaves one copy; a changed origin loses its stale chunks."""
    store.upsert({"note:1": [chunk(1, CORPUS[1])]})
    assert sorted(store.ids()) == sorted(set(store.ids())) and store.count() == len(CORPUS)
    store.upsert({"note:1": []})
    assert store.count("note:1") == 0 and store.count() == len(CORPUS) - 1


def test_another_embedder_is_refused_with_the_reindex_command(tmp_path, minilm, ollama_url):
    """A store built by MiniLM refuses an Ollama embedder and names the re-index command."""
    first = open_store(tmp_path)
    first.upsert({"note:1": [chunk(1, "hello")]})
    first.close()
    other = open_store(tmp_path, OllamaEmbedder("fake-embed", host=ollama_url))
    with pytest.raises(EmbedderMismatchError, match="scripts/rebuild_index.py --agent finn"):
        other.search("hello", 1)


def test_orphan_tmp_files_are_swept_on_open(tmp_path, ollama_url):
    """A data/.tmp* file left by a killed writer is deleted when the store is next opened."""
    embedder = OllamaEmbedder("fake-embed", host=ollama_url)
    s = open_store(tmp_path, embedder)
    s.upsert({"note:1": [chunk(1, "hello")]})
    s.close()
    orphan = tmp_path / "lancedb" / "chunks.lance" / "data" / ".tmp_killed_writer.lance"
    orphan.write_bytes(b"x" * 4096)
    again = open_store(tmp_path, embedder)
    assert again.count() == 1 and not orphan.exists()


def test_a_handle_sees_writes_of_another_process(tmp_path, ollama_url):
    """read_consistency_interval=0: rows added by another process are visible without reopening."""
    embedder = OllamaEmbedder("fake-embed", host=ollama_url)
    reader = open_store(tmp_path, embedder)
    reader.upsert({"note:1": [chunk(1, "first")]})
    assert reader.count() == 1
    code = textwrap.dedent(f"""
        from pathlib import Path
        from core.memory.cold_store import Chunk, ColdStore
        from core.llm.embedders import OllamaEmbedder
        s = ColdStore(Path({str(tmp_path / 'lancedb')!r}), OllamaEmbedder('fake-embed', host={ollama_url!r}),
                      Path({str(tmp_path / '.cold.lock')!r}), reindex_hint='x')
        s.upsert({{'note:2': [Chunk('note:2', 'note:2', 'note', 'second', 'note:2', '2026-01-01T00:00:00.000Z')]}})
    """)
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
    assert reader.count() == 2
    assert reader.search("second", 1)[0].chunk.text == "second"


# No other reader or writer uses this table, which is what cleaning every old version needs.
@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_optimize_merges_fragments_and_removes_old_versions(tmp_path, ollama_url):
    """optimize() compacts small appends into fewer fragments and cleans old versions; rows survive."""
    s = open_store(tmp_path, OllamaEmbedder("fake-embed", host=ollama_url))
    for n in range(6):
        s.upsert({f"note:{n}": [chunk(n, f"note number {n}")]})
    versions_before = len(s.table.list_versions())
    fragments_before = s.table.stats()["fragment_stats"]["num_fragments"]
    s.optimize(cleanup_older_than=timedelta(0))
    assert s.table.stats()["fragment_stats"]["num_fragments"] < fragments_before
    assert len(s.table.list_versions()) < versions_before
    assert s.count() == 6 and s.search("note number 3", 1)[0].chunk.id == "note:3"
