"""The parts of one agent's memory that upkeep works on, and the one path its writes take.

Recovery, rebuild, forgetting and the secret scrub take a :class:`Tiers` rather than the
``MemoryManager``: the files, the lock, memory.db and the recall and compaction beside them, so
that nothing below the manager imports it back. Every LOG.md entry written by the system goes
through :meth:`Tiers.append`, the manager's own appends included: the line, its index row, then
recall's indexing and automatic compaction are told.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.config import Config
from core.errors import StorageError
from core.memory.compaction.auto import Compaction
from core.memory.compaction.log_compaction import LogCompactor
from core.memory.files.locking import AgentLock
from core.memory.files.log_file import LogFile
from core.memory.files.log_format import LogEntry
from core.memory.recall import log_index
from core.memory.recall.cold import ColdMemory
from core.memory.storage.facts import FactStore
from core.memory.storage.sqlite import Database
from core.memory.upkeep import archives
from core.paths import AgentPaths

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tiers:
    """One agent's memory, part by part (the ``MemoryManager`` builds it once and hands it down)."""

    agent_name: str
    paths: AgentPaths
    config: Config
    lock: AgentLock
    """The agent's lock: every write to LOG.md and NOW.md holds it."""
    log: LogFile
    """LOG.md, the truth."""
    db: Database
    """memory.db (an SQLite file or a PostgreSQL schema)."""
    facts: FactStore
    cold: ColdMemory
    """Recall: the docs, the cold store and their indexers."""
    compactor: LogCompactor
    """LOG.md compaction's protocol (its lock keeps the archives and LOG.md's head still)."""
    compaction: Compaction
    """Automatic compaction, told of every append."""

    def append(self, entry_type: str, content: Any, metadata: dict[str, Any] | None = None) -> LogEntry:
        """Append an entry as the system (the log redacts every line) and index it."""
        with self.lock.hold():
            entry = self.log.append(entry_type, content, metadata)
            self.index(entry)
        return entry

    def index(self, entry: LogEntry) -> None:
        """Index an entry whose line is on disk; if memory.db cannot take it now, it catches up later."""
        try:
            log_index.index_appended(self.db, self.log, entry)
        except StorageError as exc:
            log.warning("LOG.md entry %d is written but memory.db cannot index it now (%s); the index catches "
                        "up at the next write or open", entry.seq, exc)
        self.appended()

    def appended(self) -> None:
        """After an entry is in LOG.md and its index: recall indexes it, a compaction may start."""
        self.cold.after_append()
        self.compaction.after_append()

    def archives(self) -> list[Path]:
        """The archives, oldest first (see :func:`core.memory.upkeep.archives.archives`)."""
        return archives.archives(self.paths.archive_dir, self.log)

    def has_history(self) -> bool:
        """True when LOG.md or an archive holds entries: the agent is not new."""
        return archives.has_history(self.paths.archive_dir, self.log)
