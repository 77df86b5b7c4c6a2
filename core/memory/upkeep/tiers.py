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
from typing import Any, Callable, Sequence

from core.config import Config
from core.errors import LockTimeoutError, StorageError
from core.durable import AgentLock, IN_USE, InUse, foreground
from core.memory.compaction.auto import Compaction
from core.memory.compaction.log_compaction import LogCompactor
from core.memory.files.log_file import LogFile
from core.memory.files.log_format import LogEntry
from core.memory.recall import log_index
from core.memory.recall.cold import ColdMemory
from core.memory.storage import facts as fact_records
from core.memory.storage.backend import open_database
from core.memory.storage.extracted import Provenance
from core.memory.storage.facts import FactStore
from core.memory.storage.protocol import Database
from core.memory.upkeep import archives
from core.paths import AgentPaths

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FactChange:
    """One change of a fact and the FACT entry that records it (see :meth:`Tiers.record_facts`)."""

    key: str
    value: str | None
    """The value saved (None: a delete)."""
    category: str | None
    change: Callable[[Any], Any]
    """Changes memory.db in the transaction it is given; False: nothing changed, no entry is logged."""
    learned: Provenance | None = None
    """Where a learned value came from (recorded in its FACT entry); None: an explicit save."""


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
    in_use: InUse
    """Held while the agent is open: ``agentos import --force`` refuses to replace it meanwhile."""

    def append(self, entry_type: str, content: Any, metadata: dict[str, Any] | None = None) -> LogEntry:
        """Append an entry as the system (the log redacts every line) and index it."""
        with foreground.writing(), self.lock.hold():
            entry = self.log.append(entry_type, content, metadata)
            self.index(entry)
        return entry

    def index(self, entry: LogEntry) -> None:
        """Index an entry whose line is on disk; if memory.db cannot take it now, it catches up later.

        The writer does not wait for another thread of this process that writes memory.db (the background
        indexer, a compaction's records): the entry is then indexed with the next one, or by the indexer,
        which this append wakes. LOG.md is the truth; the index may lag it, never lead it.
        """
        try:
            log_index.index_appended(self.db, self.log, entry, wait=False)
        except LockTimeoutError:
            log.debug("LOG.md entry %d is written; memory.db is busy with background work, which indexes it",
                      entry.seq)
        except StorageError as exc:
            log.warning("LOG.md entry %d is written but memory.db cannot index it now (%s); the index "
                        "catches up at the next write or open", entry.seq, exc)
        self.appended()

    def appended(self) -> None:
        """After an entry is in LOG.md and its index: recall indexes it, a compaction may start."""
        self.cold.after_append()
        self.compaction.after_append()

    def record_fact(self, key: str, value: str | None, category: str | None,
                    change: Callable[[Any], Any]) -> Any:
        """Change memory.db with ``change(conn)`` and log the FACT entry in one transaction: both land, or
        neither does (``change`` returning False changes nothing: no entry is logged); return its outcome."""
        return self.record_facts([FactChange(key, value, category, change)])[0]

    def record_facts(self, changes: Sequence[FactChange],
                     then: Callable[[Any], object] | None = None) -> list[Any]:
        """Several fact changes, each with its FACT entry, and ``then(conn)`` after them, in one transaction
        under the agent's lock; return each change's outcome.

        A crash or a failed commit after some entries are on disk leaves those entries to be applied when
        the index catches up (with the provenance they record); ``then``'s writes are redone by its caller.
        """
        entries: list[LogEntry] = []
        outcomes: list[Any] = []
        try:
            with foreground.writing(), self.lock.hold():
                with self.db.transaction() as conn:
                    log_index.catch_up(conn, self.log)  # a FACT entry never applied goes first
                    for fact in changes:
                        outcome = fact.change(conn)
                        outcomes.append(outcome)
                        if outcome is not False:
                            entry = self.log.append(
                                "FACT", fact_records.record_text(fact.key, fact.value, fact.category),
                                fact_records.fact_record(fact.key, fact.value, fact.category, fact.learned))
                            log_index.insert(conn, [entry], apply=False)  # applied just above
                            entries.append(entry)
                    if then is not None:
                        then(conn)
        except StorageError as exc:
            if not entries:
                raise
            # The lines are on disk but memory.db did not commit: the entries are applied when the index
            # catches up (a secret's value is not in them: that one must be saved again).
            seqs = ", ".join(str(e.seq) for e in entries)
            which = (
                f"entry {seqs} records the change"
                if len(entries) == 1
                else f"entries {seqs} record the changes"
            )
            raise type(exc)(f"{exc}; LOG.md {which} and memory.db applies it at its next write or open "
                            "(a secret's value must be saved again)") from exc
        if entries:
            self.appended()
        return outcomes

    def catch_up(self) -> None:
        """Index (and apply) the LOG.md entries memory.db lacks; if it cannot be written now, later."""
        try:
            log_index.reconcile(self.db, self.log)
        except StorageError as exc:
            log.warning("memory.db cannot index LOG.md now (%s); it catches up at the next write or open",
                        exc)

    def close(self) -> None:
        """Stop the background work and wait for it, then release the cold store, memory.db and the locks'
        files, then the in-use lock: nothing of the agent is held afterwards. Safe to call twice."""
        self.cold.halt()  # a compaction indexing its archive stops at its next step too
        self.compaction.close()
        self.cold.close()
        self.catch_up()  # an append that found memory.db busy left its index row to the background
        self.db.close()
        self.compactor.close()
        self.lock.close()
        self.in_use.release()

    def archives(self) -> list[Path]:
        """The archives, oldest first (see :func:`core.memory.upkeep.archives.archives`)."""
        return archives.archives(self.paths.archive_dir, self.log)

    def has_history(self) -> bool:
        """True when LOG.md or an archive holds entries: the agent is not new."""
        return archives.has_history(self.paths.archive_dir, self.log)


def open_tiers(agent_name: str, paths: AgentPaths, config: Config,
               after_compaction: Callable[[], object]) -> Tiers:
    """The parts of an agent's memory, opened (nothing is read or created yet but memory.db's handle).

    ``after_compaction`` runs when a compaction that swapped LOG.md ends (see ``LogCompactor``).
    """
    in_use = InUse(paths.memory_dir / IN_USE, config.memory.lock_timeout_s, f"agent {agent_name!r}")
    lock = AgentLock(paths.lock_file, config.memory.lock_timeout_s)
    try:
        db = open_database(paths, config.storage)
    except BaseException:  # a failed open holds nothing
        lock.close()
        in_use.release()
        raise
    facts = FactStore(db)
    log_file = LogFile(
        paths.log_file, lock, paths.quarantine_dir, config.memory.max_entry_bytes,
        seq_floor=lambda: log_index.last_indexed_seq(db),
        # LOG.md is the record: it keeps what was said, forgotten since or not.
        redactor=lambda: facts.redactor(forgotten=False),
    )
    cold = ColdMemory(paths, config, db, log_file)
    compactor = LogCompactor(paths, lock, log_file, db, cold.indexer, config, after_run=after_compaction)
    return Tiers(agent_name, paths, config, lock, log_file, db, facts, cold, compactor,
                 Compaction(compactor, config, agent_name), in_use)
