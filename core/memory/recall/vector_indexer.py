"""Background indexing: new memories get their docs and vectors without making a write wait.

A write only records its source (and, for notes, its doc) in memory.db, which
makes it searchable by words at once. One daemon thread a cold tier then
catches up: it turns queued sources and new LOG.md entries into docs, and
computes the vectors of docs that lack one, in batches, into LanceDB.

Crash safety: a doc's ``vector_state`` is set only after its vector is in
LanceDB, and LanceDB rows are upserted by doc id, so a SIGKILL at any point
leaves work that the next start redoes, never a missing or doubled row. The
thread stops between batches when the cold tier closes, or at interpreter
exit (the cold tier's exit hook, :mod:`core.memory.recall.cold`), so a process
exits cleanly while it runs.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import weakref
from contextlib import nullcontext
from typing import Callable, ContextManager

from core.errors import AgentOSError, EmbedderMismatchError
from core.llm import MAX_WORKERS, workers
from core.memory.recall.lance_table import LONG_CHARS, chunk_rows
from core.memory.recall.store import ColdStore, VectorRow
from core.memory.recall.docs import Doc, DocIndex
from core.durable import background_thread, foreground

log = logging.getLogger(__name__)

BATCH = 128
"""Docs embedded and written to LanceDB together, at most."""
BATCH_CHARS = 8000
"""Characters of text a batch embeds for each core it runs on (see
:func:`core.llm.embedding.token_batches.workers`), at most (one doc at least): about half a second, so a
batch never runs long, and an exit waits for one such batch at most. A long memory's chunks count (see
:func:`embedded_chars`): one of 80 KB is a batch of its own, of some 10 s of one core."""
IDLE_WAKEUP_S = 30.0
"""The thread also looks for work this often (another process may have written)."""
RETRY_AFTER_S = 5.0
"""After a failed batch (embedder or LanceDB down), wait this long before trying again."""
START_DELAY_S = 1.0
"""A thread's first vectors wait this long after its first work (unless a recall needs them at once): a
command that writes and ends within it (``agentos run``, a script's few appends) neither loads the model
nor waits for it at exit; its docs stay queued in memory.db, searchable by words, and the next process
that opens the agent computes their vectors."""

CONTEXT_CHARS = 300
"""A memory shorter than this is read with the start of the memory before it in its thread, up to this
many characters in all ("Yes, book it for Tuesday" means little alone); a longer one is read alone (on
LongMemEval-S, turns of 288 characters on average, adding the previous turn to every turn gave nothing
and doubled the model's work; on short chat turns it gives 2 points of recall@10: docs/benchmarks.md)."""


def embedding_text(doc: Doc, previous: Doc | None) -> str:
    """What a doc's vector is computed from: who said it and what, after what was said just before if it
    is short (see ``CONTEXT_CHARS``)."""
    said = f"{doc.speaker}: {doc.text}" if doc.speaker else doc.text
    room = CONTEXT_CHARS - len(said)
    if previous is None or room <= 0:
        return said
    before = f"{previous.speaker}: {previous.text}" if previous.speaker else previous.text
    return f"{said}\n(in reply to {before[:room]})"


def vector_row(doc: Doc, previous: Doc | None) -> VectorRow:
    """The cold store's row of a doc: its vector's text, what the vector search filters on, and the memory."""
    memory = {"text": doc.text, "metadata": doc.metadata, "created_at": doc.created_at,
              "occurred_at": doc.occurred_at, "expires_at": doc.expires_at}
    return VectorRow(id=doc.id, kind=doc.kind, text=embedding_text(doc, previous), source=doc.source,
                     occurred_at=doc.occurred_at,
                     memory=json.dumps(memory, ensure_ascii=False, sort_keys=True))


def embedded_chars(row: VectorRow, chunks: list[VectorRow]) -> int:
    """About how many characters the model reads for a memory: what its own vector sees of its row (two
    windows, about ``LONG_CHARS``) and its chunks."""
    return min(len(row.text), LONG_CHARS) + sum(len(c.text) for c in chunks)


def within_budget(rows: list[VectorRow], chunks: list[list[VectorRow]]) -> int:
    """How many of ``rows`` (with their ``chunks``) add up to at most ``BATCH_CHARS`` embedded characters a
    core (the first always)."""
    budget = BATCH_CHARS * workers(MAX_WORKERS)
    total = 0
    for count, (row, pieces) in enumerate(zip(rows, chunks)):
        total += embedded_chars(row, pieces)
        if count and total > budget:
            return count
    return len(rows)


_running: "weakref.WeakSet[BackgroundIndexer]" = weakref.WeakSet()
_paused: list[BackgroundIndexer] = []
_fork_hooks_registered = False


def _pause_all_before_fork() -> None:
    """Before a fork: wait until no indexer thread is inside a step. A thread forked while it holds
    one of SQLite's (or LanceDB's) internal locks would leave that lock held forever in the child."""
    _paused[:] = list(_running)
    for indexer in _paused:
        indexer._step.acquire()


def _resume_all_after_fork() -> None:
    for indexer in _paused:
        indexer._step.release()
    _paused.clear()


def _forget_all_after_fork() -> None:
    """In a forked child the parent's indexers (and their paused steps) are not the child's."""
    _paused.clear()
    _running.clear()


def close_all(deadline: float) -> None:
    """Stop every indexer of this process between batches (also those of cold tiers never closed) and
    wait for them until ``deadline`` (a ``time.monotonic()`` value)."""
    indexers = list(_running)
    for indexer in indexers:
        indexer.stop()
    for indexer in indexers:
        indexer.close(max(0.0, deadline - time.monotonic()))


def _track(indexer: BackgroundIndexer) -> None:
    """Pause ``indexer`` at forks (the hooks are registered with the first indexer of a process)."""
    global _fork_hooks_registered
    if not _fork_hooks_registered:
        os.register_at_fork(before=_pause_all_before_fork, after_in_parent=_resume_all_after_fork,
                            after_in_child=_forget_all_after_fork)
        _fork_hooks_registered = True
    _running.add(indexer)


class BackgroundIndexer:
    """One thread that runs ``index_docs`` and then embeds pending docs until none are left.

    Each step (indexing the sources, one batch of vectors) runs under ``_step``, which a fork in
    another thread waits for, so a forked child never inherits a half-done SQLite or LanceDB call.
    """

    def __init__(self, docs: DocIndex, store: Callable[[], ColdStore], index_docs: Callable[[], int],
                 name: str, *, embeds: bool = True,
                 step: Callable[[threading.Event],
                                ContextManager[object]] = lambda stop: nullcontext()) -> None:
        """``embeds=False``: only ``index_docs`` runs; the vectors are left to another process.
        ``step(stop)`` is the context of each step (see :mod:`core.durable.foreground`)."""
        self.docs = docs
        self.embeds = embeds
        self._store = store
        self._index_docs = index_docs
        self._name = name
        self._step_context = step
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._urgent = threading.Event()
        """Set: vectors are computed without waiting ``START_DELAY_S`` (a recall waits for them, or a
        stop)."""
        self._idle = threading.Condition()
        self._busy = False
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self._step = threading.Lock()
        self.last_error: str | None = None
        """The last failure of a batch (cleared by the next success)."""

    def wake(self) -> None:
        """Ask the thread to look for work (starting it on first use)."""
        if self._stop.is_set():
            return
        with self._guard:
            if self._thread is None or not self._thread.is_alive():
                self._thread = background_thread(self._run, name=f"agentos-recall-{self._name}")
                _track(self)
                self._busy = True
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._set_busy(True)
            failed = False
            try:
                with self._step_context(self._stop), self._step:
                    self._index_docs()
                if self.embeds and not self._urgent.is_set():
                    self._urgent.wait(START_DELAY_S)
                    self._urgent.set()  # only the first round waits
                while self.embeds and not self._stop.is_set():
                    with self._step_context(self._stop), self._step:
                        if not self._background_batch():
                            break
                self.last_error = None
            except EmbedderMismatchError as exc:
                self.last_error = str(exc)
                log.error("recall vectors are not computed: %s", exc)
                failed = True
            except (AgentOSError, OSError) as exc:
                # Nothing is lost: the docs stay pending and are searchable by words meanwhile. An OSError
                # (a file another process removed or replaced under a library's handle) is retried the same.
                self.last_error = str(exc)
                log.warning("background recall indexing failed, retrying in %.0f s: %s", RETRY_AFTER_S, exc)
                failed = True
            self._set_busy(False)
            if self._stop.wait(RETRY_AFTER_S) if failed else False:
                break
            self._wake.wait(IDLE_WAKEUP_S)
            self._wake.clear()

    def _set_busy(self, busy: bool) -> None:
        with self._idle:
            self._busy = busy
            self._idle.notify_all()

    def embed_batch(self) -> int:
        """Compute and store the vectors of up to ``BATCH`` pending docs (``BATCH_CHARS`` of text), and of
        their sentences or chunks (see :mod:`core.memory.recall.lance_table`); return how many docs.

        The thread runs it as a background step (:func:`core.durable.foreground.step`): one at a time in a
        process, whichever agent it is for, so a process exits once the batch in progress is written.
        """
        pending = self.docs.pending_vectors(BATCH)
        if not pending:
            return 0
        rows = [vector_row(d, self.docs.previous(d)) for d in foreground.paced(pending)]
        chunks = [chunk_rows(row, doc.text, doc.speaker) for doc, row in zip(pending, rows)]
        count = within_budget(rows, chunks)
        pending, rows = pending[:count], rows[:count]
        store = self._store()
        # Marked under the write lock of the write: a re-index by another process (which drops the table
        # under that lock, then queues every doc again) comes before both or after both.
        # Any of them may have had pieces of another text (changed or redacted since): the store
        # deletes those.
        store.put(rows + [c for pieces in chunks[:count] for c in pieces],
                  replace_chunks_of=[d.id for d in pending],
                  then=lambda: self.docs.mark_embedded({row.id: row for row in rows}, vector_row))
        present = self.docs.get([d.id for d in pending])
        gone = [d.id for d in pending if d.id not in present]
        if gone:  # forgotten while their vectors were computed: the forget's purge may have run already
            store.remove(gone)
        return len(pending)

    def _background_batch(self) -> int:
        """:meth:`embed_batch` for the thread: nothing once it is asked to stop (also while it waited its
        turn)."""
        return 0 if self._stop.is_set() else self.embed_batch()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no doc waits for its vector and the thread is between batches (or ``timeout`` s);
        True if so: nothing is being written to the cold store by this indexer then."""
        deadline = time.monotonic() + timeout
        self._urgent.set()
        self.wake()
        while True:
            pending = self.docs.pending_count()
            with self._idle:
                if not pending and not self._busy:
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stop.is_set() or self.last_error:
                    return False
                self._idle.wait(min(remaining, 0.05))
            if pending:
                self._wake.set()

    def stop(self) -> None:
        """Ask the thread to stop after the batch in progress (without waiting for it)."""
        self._stop.set()
        self._urgent.set()
        self._wake.set()

    def close(self, timeout: float | None = 60.0) -> None:
        """Stop after the batch in progress and wait for the thread (at most ``timeout`` s)."""
        self.stop()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)


EXIT_WAIT_S = 120.0
"""At interpreter exit, how long in all to wait for indexers to finish their batch. A batch is short
(``BATCH_CHARS``) and one runs at a time, so an exit waits about half a second at most; this bound is
only for an embedder that hangs (an Ollama server that stopped answering). The wait must not be cut
short otherwise: a thread still inside the model's native code when the interpreter finalizes aborts
the process. Work not started stays queued in memory.db for the next open."""
