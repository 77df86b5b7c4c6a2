"""The cold tier of one agent behind the MemoryManager: notes, recall, the cold store and its indexers.

Nothing heavy happens until it is needed: the LanceDB table is opened, and
the embedding model loaded, on the first store or recall (or when pending
archives are indexed). New memories get their vectors in a background thread,
stopped between steps at interpreter exit and forgotten in a forked child
(:mod:`core.memory.recall.process_hooks`): a forked child opens its own cold store.
LOG.md compaction is beside it (:mod:`core.memory.compaction.auto`).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Callable, ContextManager, Iterator, Sequence

from core.config import Config
from core.errors import AgentOSError, ColdStoreError, ValidationError
from core.llm import make_embedder
from core.memory.files.log_file import LogFile
from core.memory.files.log_format import utc_timestamp
from core.durable import foreground
from core.memory.recall import log_index, process_hooks, query as recall_query, search as recall_search
from core.memory.recall.docs import DocIndex, Filters
from core.memory.recall.index import ColdIndexer, Progress
from core.memory.recall.lance_table import where_clause
from core.memory.recall.views.browse import browse, check_window
from core.memory.recall.views.explain import Trace
from core.memory.recall.query import check_recall
from core.memory.recall.search import Tuning
from core.memory.recall.sources import LISTED, check_batch, check_note, note_doc
from core.memory.recall.store import ColdStore
from core.memory.recall.vector_indexer import BackgroundIndexer
from core.memory.recall.views.results import Recalled, StoredMemories, check_mode
from core.memory.secrets.redaction import Redactor, redactor_of
from core.memory.storage.facts import FactStore
from core.memory.storage.protocol import Database
from core.paths import AgentPaths

log = logging.getLogger(__name__)


class ColdMemory:
    """Recall over every tier, the cold store and its indexers of one agent."""

    def __init__(self, paths: AgentPaths, config: Config, db: Database, log_file: LogFile) -> None:
        self.paths = paths
        self.config = config
        self.db = db
        self.tuning = Tuning()
        """The ranking's parameters (see :mod:`core.memory.recall.search`)."""
        self._closing = threading.Event()
        self.indexer = ColdIndexer(db, paths.archive_dir, log_file, FactStore(db).secret_values,
                                   quarantine_dir=paths.quarantine_dir, cancel=self._closing)
        self.docs = self.indexer.docs
        self._hurry = threading.Event()
        """Set while a recall waits for vectors: the indexer does not wait for the writers to pause then."""
        self._hurried = 0
        self.background = BackgroundIndexer(self.docs, self.store, self._background_sync, paths.name,
                                            step=self._step)
        self._store: ColdStore | None = None
        self._guard = threading.Lock()
        self._warming: threading.Thread | None = None
        process_hooks.track(self)

    def store(self) -> ColdStore:
        """The cold store, created on first use (no LanceDB or torch import before)."""
        with self._guard:
            if self._store is None:
                self._store = open_store(self.paths, self.config, redactor=lambda: redactor_of(self.db))
            return self._store

    def warm_up(self) -> None:
        """Open the cold store and load its embedding model in a thread now (once), so that a first recall
        soon after (an MCP client's, a ``recall`` command's) does not wait for both.

        Not a daemon: the model's native code must not run while the interpreter finalizes, so a process that
        ends meanwhile waits for it (a fraction of a second).
        """
        with self._guard:
            if self._warming is None:
                self._warming = foreground.background_thread(self._warm_up,
                                                             name=f"agentos-warm-up-{self.paths.name}",
                                                            daemon=False)
                self._warming.start()

    def _warm_up(self) -> None:
        try:
            store = self.store()
            # The model first: ONNX Runtime loads it without the GIL, while importing lance mostly holds it.
            store.embedder.embed(["warm up"])
            store.may_have_rows()
        # the recall that follows meets the same failure and reports it
        except (AgentOSError, OSError) as exc:
            log.info("warming up the cold store of %s failed: %s", self.paths.name, exc)

    # -- notes --------------------------------------------------------------------

    def store_memory(self, content: Any, metadata: dict | None, kind: str, secrets: list[str],
                     occurred_at: Any = None, expires_at: Any = None) -> str:
        """Save a note in memory.db, searchable by words at once; return its id (see
        ``MemoryManager.store_memory``)."""
        return self.store_memories([{"content": content, "metadata": metadata, "kind": kind,
                                     "occurred_at": occurred_at, "expires_at": expires_at}], secrets)[0]

    def store_memories(self, items: Sequence[Any], secrets: list[str]) -> StoredMemories:
        """Save the good items of a batch in one transaction and name the refused ones (see
        ``MemoryManager.store_memories``)."""
        if not isinstance(items, (list, tuple)):
            raise ValidationError(f"items must be a list, got {type(items).__name__}")
        limit = self.config.cold.max_memory_bytes
        notes, refused = check_batch(items, lambda item: check_note(item, secrets, limit))
        by_index = {}
        now = utc_timestamp()
        with self.db.transaction() as conn:
            for index, note in notes.items():
                by_index[index] = self._write_note(conn, note, now, secrets)
        self.background.wake()
        if refused:
            log.warning("%s: %d of %d memories refused: %s", self.paths.name, len(refused), len(items),
                        "; ".join(str(r) for r in refused[:LISTED]))
        return StoredMemories(by_index, refused)

    def _write_note(self, conn, note: dict[str, Any], now: str, secrets: list[str]) -> str:
        """Insert a note (or refresh the same one stored before) and its doc; return its id."""
        found = conn.execute("SELECT id FROM cold_notes WHERE content_key = ?", (note["key"],)).fetchone()
        if found:  # the same memory again: refresh it instead of keeping a copy
            note_id = found[0]
            conn.execute("UPDATE cold_notes SET updated_at = ?, expires_at = ? WHERE id = ?",
                         (now, note["expires_at"], note_id))
        else:
            note_id = uuid.uuid4().hex
            conn.execute(
                "INSERT INTO cold_notes (id, kind, text, metadata, created_at, occurred_at, expires_at,"
                " content_key, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (note_id, note["kind"], note["text"], note["metadata"], now, note["occurred_at"],
                 note["expires_at"], note["key"], now),
            )
        row = conn.execute("SELECT * FROM cold_notes WHERE id = ?", (note_id,)).fetchone()
        self.docs.upsert(conn, [note_doc(row, secrets)])
        conn.execute("DELETE FROM cold_pending WHERE item = ?", (f"note:{note_id}",))
        return f"note:{note_id}"

    # -- recall -------------------------------------------------------------------

    def recall(
        self, query: Any, n_results: int, kind: str | list[str] | None, since: Any, until: Any,
        secrets: list[str], min_score: float | None = None, recency_days: float | None = None,
        explain: bool = False, now: Any = None,
    ) -> Recalled | dict[str, Any]:
        """Search every tier by meaning and words, or list a time window with no query (see
        ``MemoryManager.recall_memory``); explained, ``{results, left_out}`` with ``warning`` when partial."""
        return answer(query, n_results, kind, since, until, secrets, self.docs, self.tuning,
                      self.config.cold.min_score, indexed=self.read_own_writes,
                      search=lambda text, filters, trace: self.search(text, filters, trace=trace),
                      min_score=min_score, recency_days=recency_days, explain=explain, now=now)

    def candidates(self, text: str, filters: Filters, depth: int | None = None,
                   trace: Trace | None = None) -> list[recall_search.Candidate]:
        """Every candidate for ``text`` scored, best first (see :meth:`search`)."""
        return self.search(text, filters, depth, trace)[0]

    def search(self, text: str, filters: Filters, depth: int | None = None,
               trace: Trace | None = None) -> tuple[list[recall_search.Candidate], Recalled]:
        """Every candidate for ``text`` scored, best first, after catching up with what was just written, and
        what the ranking could see (an empty :class:`Recalled`: how many memories it saw without a vector).

        ``depth`` (default ``tuning.depth``) is how many word matches and how many nearest vectors are taken;
        ``trace`` records what the searches met (an explained recall).
        """
        seen = self._caught_up()
        tuning = self.tuning if depth is None else replace(self.tuning, depth=depth)
        store = None if seen.partial and seen.mode == "words" else self.store()
        return recall_query.candidates(text, filters, self.docs, store, tuning, trace), seen

    def similar(self, text: str, filters: Filters, depth: int) -> list[tuple[str, float]]:
        """The ``depth`` memories nearest in meaning to ``text`` that pass ``filters``, as ``(id, cosine
        similarity)``, best first, once the vectors of what was just written are done.

        Raises:
            ColdStoreError: some memories still have no vector, so that a choice by meaning would miss them.
        """
        seen = self._caught_up()
        if seen.partial:
            failed = f"; the embedder failed: {seen.error}" if seen.error else ""
            raise ColdStoreError(f"{seen.vectors_pending} memories have no vector yet (after waiting "
                                 f"{seen.waited_s:.1f} s{failed}), so a choice by meaning would miss them: "
                                 "let them be computed (manager.cold.catch_up()) and try again, or choose by "
                                 "words")
        where = where_clause(filters.kinds, filters.since, filters.until, filters.source_prefix)
        return recall_query.nearest(text, self.store(), depth, where, self.tuning.piece_share) or []

    def _caught_up(self) -> Recalled:
        """Index what was just written and wait up to ``cold.vector_wait_s`` for its vectors; an empty
        :class:`Recalled` says how many memories are still without one."""
        mode = check_mode(self.config.cold.pending_vectors)
        self.read_own_writes()
        pending, waited = self.docs.pending_count(), 0.0
        if pending and self.background.embeds:
            began = time.monotonic()
            with self._hurrying():
                self.background.wait_idle(self.config.cold.vector_wait_s)
            pending, waited = self.docs.pending_count(), time.monotonic() - began
        return Recalled((), pending, mode=mode, waited_s=waited, error=self.background.last_error)

    def read_own_writes(self) -> None:
        """Index what was just stored or logged, so that a recall finds it."""
        if self.indexer.pending():
            self.sync()

    def _step(self, stop: threading.Event) -> ContextManager[None]:
        """The context of each step of the recall indexer (see :func:`core.durable.foreground.step`)."""
        return foreground.step(stop, self._hurry)

    @contextmanager
    def _hurrying(self) -> Iterator[None]:
        """While the block runs, the recall indexer's steps start without waiting for the writers."""
        with self._guard:
            self._hurried += 1
            self._hurry.set()
        try:
            yield
        finally:
            with self._guard:
                self._hurried -= 1
                if not self._hurried:
                    self._hurry.clear()

    def sync(self) -> int:
        """Bring the docs in step with their sources and delete the vectors of removed docs; return docs
        written."""
        written = self.indexer.sync()
        self.purge_vectors()
        return written

    def _background_sync(self) -> int:
        """The background indexer's first step: the LOG.md index's catch-up (an append that found memory.db
        busy left its entry to it), :meth:`sync`, then a checkpoint of memory.db's WAL, which would otherwise
        fall on the append whose commit filled it (see
        ``core.memory.storage.sqlite.AUTOCHECKPOINT_PAGES``)."""
        log_index.reconcile(self.db, self.indexer.log)
        written = self.sync()
        self.db.checkpoint()
        return written

    def purge_vectors(self) -> int:
        """Delete from LanceDB the vectors of forgotten or deleted memories; return how many were purged.

        An id that has a doc again (a fact saved again, a store item's reused id) keeps its row:
        its new vector replaces the old one by id.
        """
        queued = [r[0] for r in self.db.conn.execute("SELECT id FROM recall_purge LIMIT 1000")]
        if not queued:
            return 0
        ids = [i for i in queued if i not in self.docs.get(queued)]
        self.store().remove(ids)
        with self.db.transaction() as conn:
            conn.executemany("DELETE FROM recall_purge WHERE id = ?", [(i,) for i in queued])
        return len(ids)

    def catch_up(self, progress: Progress | None = None) -> int:
        """Write every pending doc and compute every missing vector now; return the vectors computed."""
        self.indexer.sync()
        done = 0
        while count := self.background.embed_batch():
            done += count
            if progress:
                progress(count)
        return done

    def after_append(self) -> None:
        """Index the new entry in the background."""
        foreground.wrote()
        self.background.wake()

    def at_open(self) -> None:
        """Catch up in the background with what a killed process left unindexed, if anything."""
        if self.indexer.pending() or self.docs.pending_count():
            self.background.wake()

    def halt(self) -> None:
        """Ask the background work to stop at its next step (without waiting)."""
        self._closing.set()
        self.background.stop()

    def stop(self, indexer_timeout: float | None = 60.0) -> None:
        """Stop the background indexing between steps and wait for it (for the vector indexer's batch in
        progress, at most ``indexer_timeout`` s)."""
        self._closing.set()
        self.background.close(indexer_timeout)

    def close(self) -> None:
        """Stop background work (see :meth:`stop`), then release the cold store."""
        self.stop()
        with self._guard:
            if self._store is not None:
                self._store.close()
                self._store = None
        process_hooks.untrack(self)

    def after_fork(self) -> None:
        """In a forked child: forget the parent's threads and cold store (used or closed only by the
        parent)."""
        self._guard = threading.Lock()
        self._store = None
        self._hurry, self._hurried = threading.Event(), 0  # the parent's recalls are not the child's
        # LanceDB writes in a forked child can crash it (its runtime is only partly reset at a fork):
        # the child indexes docs, searchable by words at once, and leaves their vectors to the parent's
        # thread or to the next process that opens the agent.
        self.background = BackgroundIndexer(self.docs, self.store, self._background_sync, self.paths.name,
                                            embeds=False, step=self._step)


def open_store(paths: AgentPaths, config: Config, *, read_only: bool = False,
               redactor: Callable[[], Redactor] | None = None) -> ColdStore:
    """The cold store of an agent (opened on first use); ``read_only`` searches an existing one only.

    ``redactor()`` hides the secrets known now in every row written.
    """
    return ColdStore(
        paths.lancedb_dir, make_embedder(config), paths.memory_dir / ".cold.lock",
        reindex_hint=f"agentos rebuild-index --agent {paths.name}",
        optimize_every=config.cold.optimize_every, ann_min_rows=config.cold.ann_min_rows,
        read_only=read_only, redactor=redactor,
    )


Search = Callable[[str, Filters, "Trace | None"], "tuple[list[recall_search.Candidate], Recalled]"]
"""``search(text, filters, trace)``: every candidate scored, best first, and what the ranking could see."""


def answer(
    query: Any, n_results: int, kind: str | list[str] | None, since: Any, until: Any, secrets: list[str],
    docs: DocIndex, tuning: Tuning, default_min_score: float, *, indexed: Callable[[], object],
    search: Search,
    min_score: float | None = None, recency_days: float | None = None, explain: bool = False, now: Any = None,
) -> Recalled | dict[str, Any]:
    """The answer to a recall: ``query`` searched with ``search``, or with no query the time window listed
    from ``docs`` once ``indexed()`` has run; explained, ``{results, left_out}`` with ``warning`` when
    partial.

    The one path of a writer's recall (which indexes and waits for vectors first) and a reader's (which
    searches what is indexed), so that both answer alike.
    """
    if query is None:
        window = check_window(n_results, kind, since, until, now, min_score=min_score,
                              recency_days=recency_days, explain=explain)
        indexed()
        return Recalled(browse(window, docs, secrets, tuning))
    request = check_recall(query, n_results, kind, since, until, min_score=min_score,
                           recency_days=recency_days, default_min_score=default_min_score, now=now)
    trace = Trace() if explain else None
    ranked, seen = search(request.text, request.filters, trace)
    if trace is None:
        return seen.like(recall_query.results(request, ranked, tuning, secrets))
    found = recall_query.explained(request, ranked, trace, docs, tuning, secrets)
    return {**found, "warning": seen.warning} if seen.warning else found
