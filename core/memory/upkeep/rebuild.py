"""Recreate every index of an agent from its files: the files are the source of truth.

``log_metadata`` comes from LOG.md and the archives, ``compaction_history``
from the SUMMARY entries (each records its archive, covers and sha256), and
recall's docs and the LanceDB table from LOG.md, the archives, the facts, the
notes, the conversations and the LangGraph store's items, embedded with the
configured embedder. Every FORGET entry of LOG.md and the archives is applied
again first, so nothing forgotten comes back. Every item is queued before the
table is dropped, so an interrupted rebuild is finished by the next sync. The
table is then optimized, which builds its vector index when it holds ``cold.ann_min_rows`` memories or more.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from core.memory.files.log_file import scan_bytes
from core.memory.files.log_format import is_compaction_summary
from core.memory.recall import forget_records, log_index
from core.memory.recall.index import Progress
from core.memory.upkeep.tiers import Tiers


@dataclass(frozen=True)
class RebuildResult:
    """What :func:`rebuild_all` recreated."""

    log_rows: int
    compactions: int
    memories: int
    """Memories embedded (each has its vector in the cold store)."""
    embedder: str
    vector_index: dict | None
    """``ColdStore.vector_index()`` after the rebuild: None means exact vector search."""


def rebuild_all(tiers: Tiers, progress: Progress | None = None,
                total: Callable[[int], None] | None = None) -> RebuildResult:
    """Rebuild ``log_metadata``, ``compaction_history`` and the cold store of an agent
    (``MemoryManager.tiers``); ``total`` is told how many memories are to be embedded, ``progress`` how many
    were, batch by batch."""
    cold = tiers.cold
    tiers.compaction.wait()
    with tiers.compactor.exclusive(wait=True):
        tiers.compactor.finish_pending()
        log_rows = rebuild_log_index(tiers)
        compactions = rebuild_history(tiers)
        store = cold.store()
        # Under the cold store's write lock: a writer of another process writes a batch of vectors and
        # records it as written under that lock, so its batch lands before the docs are queued again
        # (and is redone) or after the table is dropped (and is in the new one), never lost between.
        with store.writing():
            cold.indexer.mark_all_pending()
            forget_records.replay(tiers.db, _log_sources(tiers))
            store.drop()
        cold.indexer.sync()
        if total is not None:
            total(cold.docs.pending_count())
        cold.catch_up(progress)  # the background thread may compute some of them meanwhile
        cold.purge_vectors()
        store.optimize()
        memories = store.count()
    return RebuildResult(log_rows, compactions, memories, store.embedder.name, store.vector_index())


def rebuild_log_index(tiers: Tiers) -> int:
    """Recreate ``log_metadata`` from LOG.md and the archives; return the rows written."""
    return log_index.rebuild(tiers.db, tiers.log, [(p.stem, p) for p in tiers.archives()])


def _log_sources(tiers: Tiers) -> list[tuple[Path, bytes]]:
    """Damaged archives set aside in quarantine, the archives oldest first, then LOG.md, with their bytes."""
    damaged = sorted(tiers.paths.quarantine_dir.glob("LOG-*-damaged-*.md"))
    sources = [(p, p.read_bytes()) for p in [*damaged, *tiers.archives()]]
    return [*sources, (tiers.paths.log_file, tiers.paths.log_file.read_bytes())]


def rebuild_history(tiers: Tiers) -> int:
    """Record a ``compaction_history`` row for every SUMMARY entry found in the files (damaged archives set
    aside in quarantine included: the compactions they record stay known, and reported as damaged)."""
    recorded = 0
    for path, data in _log_sources(tiers):
        for entry in scan_bytes(data, path).entries:
            if is_compaction_summary(entry):
                archive_id = Path(entry.metadata["archive"]).stem
                tiers.compactor.record(archive_id, entry, entry.metadata.get("source_bytes", 0), 0)
                recorded += 1
    return recorded
