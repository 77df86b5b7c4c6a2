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
from typing import TYPE_CHECKING

from core.memory.upkeep import forgetting
from core.memory.recall.index import Progress
from core.memory.files.log_file import scan_bytes
from core.memory.files.log_format import is_compaction_summary

if TYPE_CHECKING:
    from core.memory_manager import MemoryManager


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


def rebuild_all(manager: "MemoryManager", progress: Progress | None = None) -> RebuildResult:
    """Rebuild ``log_metadata``, ``compaction_history`` and the cold store of ``manager``'s agent."""
    cold = manager.cold
    cold.wait()
    with cold.compactor.exclusive(wait=True):
        cold.compactor.finish_pending()
        log_rows = manager.rebuild_log_index()
        compactions = rebuild_history(manager)
        cold.indexer.mark_all_pending()
        forgetting.replay(manager.db, _log_sources(manager))
        store = cold.store()
        store.drop()
        cold.indexer.sync()
        cold.catch_up(progress)  # the background thread may compute some of them meanwhile
        cold.purge_vectors()
        store.optimize()
        memories = store.count()
    return RebuildResult(log_rows, compactions, memories, store.embedder.name, store.vector_index())


def _log_sources(manager: "MemoryManager") -> list[tuple[Path, bytes]]:
    """Damaged archives set aside in quarantine, the archives oldest first, then LOG.md, with their bytes."""
    from core.memory.upkeep.recovery import archives

    damaged = sorted(manager.paths.quarantine_dir.glob("LOG-*-damaged-*.md"))
    sources = [(p, p.read_bytes()) for p in [*damaged, *archives(manager)]]
    return [*sources, (manager.paths.log_file, manager.paths.log_file.read_bytes())]


def rebuild_history(manager: "MemoryManager") -> int:
    """Record a ``compaction_history`` row for every SUMMARY entry found in the files (damaged archives set
    aside in quarantine included: the compactions they record stay known, and reported as damaged)."""
    recorded = 0
    for path, data in _log_sources(manager):
        for entry in scan_bytes(data, path).entries:
            if is_compaction_summary(entry):
                archive_id = Path(entry.metadata["archive"]).stem
                manager.cold.compactor.record(archive_id, entry, entry.metadata.get("source_bytes", 0), 0)
                recorded += 1
    return recorded


def archive_first_seq(path: Path) -> int:
    """The first seq of an archive from its name ``LOG-<first>-<last>.md`` (0 if it is not of that form)."""
    parts = path.stem.split("-")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 0
