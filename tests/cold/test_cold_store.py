"""The LanceDB cold store: nearest vectors by meaning, filters, upserts by id, embedder checks, hygiene."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from core.errors import EmbedderMismatchError, LockTimeoutError
from core.durable.locking import AgentLock
from core.memory.upkeep.scrub_tables import scrub_cold_store
from core.memory.secrets.redaction import REDACTED, redactor_for
from core.memory.recall.lance_table import where_clause
from core.memory.recall.store import ColdStore, VectorRow
from core.llm.embedding.embedders import MiniLMEmbedder, OllamaEmbedder

ROOT = Path(__file__).resolve().parents[2]


def row(n: int, text: str, kind: str = "note", occurred: str = "2026-01-10T00:00:00.000Z",
        source: str | None = None) -> VectorRow:
    return VectorRow(f"note:{n}", kind, text, source or f"note:{n}", occurred)


def open_store(tmp_path: Path, embedder=None) -> ColdStore:
    return ColdStore(tmp_path / "lancedb", embedder or MiniLMEmbedder(), tmp_path / ".cold.lock",
                     reindex_hint="agentos rebuild-index --agent finn")


def nearest_ids(store: ColdStore, text: str, depth: int = 5, where: str | None = None) -> list[str]:
    return [r["id"] for r in store.nearest(store.embedder.embed([text])[0], depth, where)]


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
    s.put([row(i, text, occurred=f"2026-01-{10 + i}T00:00:00.000Z") for i, text in enumerate(CORPUS)])
    yield s
    s.close()


def test_nearest_finds_by_meaning(store):
    """A paraphrase with no shared keyword finds the right memory first, with its distance."""
    found = store.nearest(store.embedder.embed(["Which shares was the person interested in?"])[0], 2)
    assert found[0]["text"] == CORPUS[0] and 0 <= found[0]["_distance"] < found[1]["_distance"]
    assert set(found[0]) == {"id", "kind", "text", "source", "occurred_at", "_distance", "own_distance"}
    assert found[0]["own_distance"] == found[0]["_distance"]  # a memory of one sentence has no other row


def test_filters_by_kind_time_and_source(store):
    """kind, a time window on occurred_at and a source prefix restrict the rows before ranking."""
    store.put([VectorRow("fact:x", "fact", "currency: EUR", "fact:x", "2026-02-01T00:00:00.000Z"),
               row(9, "the user likes euros", source="store:prefs/eur")])
    assert nearest_ids(store, "currency", where=where_clause(kinds=["fact"])) == ["fact:x"]
    window = nearest_ids(store, "anything about the user", 10,
                         where_clause(since="2026-01-12T00:00:00.000Z", until="2026-01-13T00:00:00.000Z"))
    assert sorted(window) == ["note:2", "note:3"]
    assert nearest_ids(store, "currency", where=where_clause(source_prefix="store:prefs")) == ["note:9"]
    assert where_clause() is None
    assert where_clause(kinds=["it's"]) == "kind IN ('it''s')"


def test_put_upserts_by_id_and_remove_deletes(store):
    """Writing an id again replaces its row (one copy); remove deletes the rows of the ids given."""
    store.put([row(1, "Deploy succeeded on the second try")])
    assert sorted(store.ids()) == sorted(set(store.ids())) and store.count() == len(CORPUS)
    assert store.nearest(store.embedder.embed(["deploy succeeded"])[0],
                         1)[0]["text"].startswith("Deploy succeeded")
    store.remove(["note:1", "note:404"])
    assert store.count() == len(CORPUS) - 1 and "note:1" not in store.ids()


def test_another_embedder_is_refused_with_the_reindex_command(tmp_path, minilm, ollama_url):
    """A store built by MiniLM refuses an Ollama embedder and names the re-index command."""
    first = open_store(tmp_path)
    first.put([row(1, "hello")])
    first.close()
    other = open_store(tmp_path, OllamaEmbedder("fake-embed", host=ollama_url))
    with pytest.raises(EmbedderMismatchError, match="agentos rebuild-index --agent finn"):
        other.count()


def test_the_table_of_an_earlier_version_is_dropped_on_open(tmp_path, ollama_url):
    """A 'chunks' table of archive chunks (earlier versions) is dropped when the store opens."""
    import lance
    import pyarrow as pa

    lance.write_dataset(pa.Table.from_pylist([{"id": "log:LOG-1-9:0", "text": "old chunk",
                                               "vector": [0.1, 0.2]}]),
                        tmp_path / "lancedb" / "chunks.lance")
    s = open_store(tmp_path, OllamaEmbedder("fake-embed", host=ollama_url))
    assert s.count() == 0
    assert sorted(p.name for p in (tmp_path / "lancedb").iterdir()) == ["memories.lance"]


def test_orphan_tmp_files_are_swept_on_open(tmp_path, ollama_url):
    """A data/.tmp* file left by a killed writer is deleted when the store is next opened."""
    embedder = OllamaEmbedder("fake-embed", host=ollama_url)
    s = open_store(tmp_path, embedder)
    s.put([row(1, "hello")])
    s.close()
    orphan = tmp_path / "lancedb" / "memories.lance" / "data" / ".tmp_killed_writer.lance"
    orphan.write_bytes(b"x" * 4096)
    again = open_store(tmp_path, embedder)
    assert again.count() == 1 and not orphan.exists()


@pytest.mark.slow
def test_a_handle_sees_writes_of_another_process(tmp_path, ollama_url):
    """read_consistency_interval=0: rows added by another process are visible without reopening."""
    embedder = OllamaEmbedder("fake-embed", host=ollama_url)
    reader = open_store(tmp_path, embedder)
    reader.put([row(1, "first")])
    assert reader.count() == 1
    code = textwrap.dedent(f"""
        from pathlib import Path
        from core.memory.recall.store import ColdStore, VectorRow
        from core.llm.embedding.embedders import OllamaEmbedder
        s = ColdStore(Path({str(tmp_path / 'lancedb')!r}), OllamaEmbedder('fake-embed', host={ollama_url!r}),
                      Path({str(tmp_path / '.cold.lock')!r}), reindex_hint='x')
        s.put([VectorRow('note:2', 'note', 'second', 'note:2', '2026-01-01T00:00:00.000Z')])
    """)
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
    assert reader.count() == 2 and sorted(reader.ids()) == ["note:1", "note:2"]


# No other reader or writer uses this table, which is what cleaning every old version needs.
def test_optimize_merges_fragments_and_removes_old_versions(tmp_path, ollama_url):
    """optimize() compacts small appends into fewer fragments and cleans old versions; rows survive."""
    s = open_store(tmp_path, OllamaEmbedder("fake-embed", host=ollama_url))
    for n in range(6):
        s.put([row(n, f"note number {n}")])
    versions_before = len(s.table.versions())
    fragments_before = len(s.table.get_fragments())
    s.optimize(cleanup_older_than=timedelta(0))
    assert len(s.table.get_fragments()) < fragments_before
    assert len(s.table.versions()) < versions_before
    assert s.count() == 6 and sorted(s.ids()) == [f"note:{n}" for n in range(6)]


class LockWatchingEmbedder(MiniLMEmbedder):
    """The real model, noting for each call whether another thread could take the store's write lock then."""

    def __init__(self, lock_file: Path, during_first_call=None) -> None:
        super().__init__()
        self.lock_file = lock_file
        self.lock_was_free: list[bool] = []
        self.during_first_call = during_first_call

    def embed(self, texts):
        free: list[bool] = []
        probe = threading.Thread(target=lambda: free.append(_lock_is_free(self.lock_file)))
        probe.start()
        probe.join()
        self.lock_was_free += free
        if self.during_first_call is not None:
            self.during_first_call, run = None, self.during_first_call
            run()
        return super().embed(texts)


def _lock_is_free(lock_file: Path) -> bool:
    try:
        with AgentLock(lock_file, timeout=0).hold():
            return True
    except LockTimeoutError:
        return False


def test_vectors_are_computed_outside_the_write_lock(tmp_path, minilm):
    """Embedding (and so loading the model) never holds the write lock that other processes' writers wait for:
    not a write, not the one again for a secret saved meanwhile, not a scrub of the secret."""
    secrets: list[str] = []
    embedder = LockWatchingEmbedder(tmp_path / ".cold.lock",
                                    during_first_call=lambda: secrets.append("cred-5566"))
    store = ColdStore(tmp_path / "lancedb", embedder, tmp_path / ".cold.lock", reindex_hint="-",
                      redactor=lambda: redactor_for(secrets))
    try:
        store.put([row(1, "the card cred-5566 expires in May"), row(2, "lunch was pizza")])
        assert sorted(r["text"] for r in store.rows_of("note:")) == ["lunch was pizza",
                                                                     f"the card {REDACTED} expires in May"]
        assert len(embedder.lock_was_free) == 2  # the secret saved meanwhile: its row embedded again
        secrets.append("pizza")
        assert scrub_cold_store(store, redactor_for(secrets)) == 1
        assert f"lunch was {REDACTED}" in [r["text"] for r in store.rows_of("note:")]
        assert len(embedder.lock_was_free) == 3 and all(embedder.lock_was_free)
    finally:
        store.close()
