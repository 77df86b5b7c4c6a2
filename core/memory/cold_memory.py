"""The cold tier of one agent behind the MemoryManager: notes, recall, LOG.md compaction.

Nothing heavy happens until it is needed: the LanceDB table is opened, and
the embedding model loaded, on the first store or recall (or when pending
archives are indexed). Automatic compaction runs in a background thread so
that ``append_log`` stays a ~millisecond call: the LLM summary and the first
load of the embedding model (~6 s) never delay the caller, and a failing cold
tier never makes an append fail. A process that dies mid-compaction is the
same case as a SIGKILL, which the protocol recovers from. A process that exits
while the thread runs first stops it between steps (a model call is abandoned,
indexing not yet started is left to the next open) and waits for it, so the
interpreter never finalizes under a thread that is inside native code. A forked
child starts with no background work and opens its own cold store.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

from core.config import Config
from core.errors import AgentOSError, BackendError, ColdStoreError, ConfigError, EmbedderMismatchError, ValidationError
from core.memory.cold_index import ColdIndexer, Progress
from core.memory.cold_store import KINDS, ColdStore
from core.llm.embedders import make_embedder
from core.llm.window import ContextWindow
from core.memory.db import Database
from core.memory.facts import redact
from core.memory.fitting import window_of_generate
from core.memory.locking import AgentLock
from core.memory.log_compaction import CompactionReport, LogCompactor
from core.memory.log_file import LogFile
from core.memory.log_format import check_text, is_compaction_summary, utc_timestamp
from core.memory.secrets import Redactor, redactor_of
from core.memory.summarizer import Generate, LogSummarizer
from core.paths import AgentPaths

log = logging.getLogger(__name__)

NOTE_KINDS = ("note", "summary")
"""Kinds ``store_memory`` accepts; ``log_archive`` and ``fact`` chunks come from their sources."""
MAX_RESULTS = 100
AUTO_RETRY_S = 60.0
"""After a failed automatic compaction, appends do not retry it for this long; after a failed
summarizer model, automatic compactions summarise deterministically for this long."""

_live: "weakref.WeakSet[ColdMemory]" = weakref.WeakSet()
_hooks_registered = False
_hooks_guard = threading.Lock()


def _register(cold: "ColdMemory") -> None:
    """Track ``cold`` for the exit and fork hooks (registered once a process)."""
    global _hooks_registered
    with _hooks_guard:
        if not _hooks_registered:
            # Before the interpreter joins its threads and shuts down the executors LanceDB and
            # torch use (the public atexit runs after that, too late for a thread that needs them).
            getattr(threading, "_register_atexit", atexit.register)(_stop_all_at_exit)
            os.register_at_fork(after_in_child=_forget_all_after_fork)
            _hooks_registered = True
        _live.add(cold)


def _stop_all_at_exit() -> None:
    """At interpreter exit: stop every background compaction between steps and wait for it."""
    for cold in list(_live):
        cold.stop()


def _forget_all_after_fork() -> None:
    """In a forked child: the parent's threads and cold store handles are not the child's."""
    global _hooks_guard
    _hooks_guard = threading.Lock()
    for cold in list(_live):
        cold.after_fork()


class ColdMemory:
    """Cold store, indexer and LOG.md compactor of one agent."""

    def __init__(self, paths: AgentPaths, config: Config, db: Database, log_file: LogFile, lock: AgentLock) -> None:
        self.paths = paths
        self.config = config
        self.db = db
        self.summary_llm: Generate | None = None
        """The LLM that summarises LOG.md (``generate(prompt) -> str``); None: chosen from the config."""
        self.summary_window: ContextWindow | None = None
        """That LLM's window (None: asked from its backend, else Ollama's default is assumed)."""
        self._closing = threading.Event()
        self.indexer = ColdIndexer(db, paths.archive_dir, self.store, config.cold.chunk_tokens,
                                   quarantine_dir=paths.quarantine_dir, cancel=self._closing)
        self.compactor = LogCompactor(paths, lock, log_file, db, self.indexer, config)
        self._store: ColdStore | None = None
        self._guard = threading.Lock()
        self._worker: threading.Thread | None = None
        self._auto_failed_at = -AUTO_RETRY_S
        self._llm_failed_at = -AUTO_RETRY_S
        _register(self)

    def store(self) -> ColdStore:
        """The cold store, created on first use (no LanceDB or torch import before)."""
        with self._guard:
            if self._store is None:
                self._store = open_store(self.paths, self.config, redactor=lambda: redactor_of(self.db))
            return self._store

    # -- notes and recall -------------------------------------------------------

    def store_memory(self, content: Any, metadata: dict | None, kind: str, secrets: list[str]) -> str:
        """Save a note in memory.db and index it; return its id (see ``MemoryManager.store_memory``)."""
        text = check_text(content, "memory content").strip()
        if not text:
            raise ValidationError("memory content must not be empty")
        if len(text.encode("utf-8")) > self.config.memory.max_entry_bytes:
            raise ValidationError(f"memory content exceeds {self.config.memory.max_entry_bytes} bytes")
        if kind not in NOTE_KINDS:
            raise ValidationError(f"store_memory kind must be one of {', '.join(NOTE_KINDS)}, got {kind!r}")
        if metadata is not None and not isinstance(metadata, dict):
            raise ValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
        try:
            meta_json = json.dumps(redact(metadata or {}, secrets), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"metadata must be JSON-serialisable: {exc}") from exc
        try:
            self.store().table  # an embedder mismatch is refused before anything is saved
        except EmbedderMismatchError:
            raise
        except (BackendError, ColdStoreError) as exc:
            log.warning("the cold store cannot be opened now (%s); the note is indexed later", exc)
        note_id = uuid.uuid4().hex
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO cold_notes (id, kind, text, metadata, created_at) VALUES (?, ?, ?, ?, ?)",
                (note_id, kind, redact(text, secrets), meta_json, utc_timestamp()),
            )
        try:  # the note is saved: from here on nothing may raise, or a retry would store it twice
            self.indexer.sync()
        except AgentOSError as exc:
            log.warning("note %s saved; indexing it failed and will be retried: %s", note_id, exc)
        return f"note:{note_id}"

    def recall(
        self, query: Any, n_results: int, kind: str | list[str] | None, since: Any, until: Any,
        secrets: list[str],
    ) -> list[dict[str, Any]]:
        """Hybrid search of the cold tier (see ``MemoryManager.recall_memory``)."""
        request = check_recall(query, n_results, kind, since, until)
        store = self.store()
        if self.indexer.pending():
            self.indexer.sync()  # read your own writes: facts saved a moment ago are found
        return search(store, request, secrets)

    # -- compaction -------------------------------------------------------------

    def compact(
        self, summary: str | None = None, *, force: bool = True, dry_run: bool = False,
        progress: Progress | None = None,
    ) -> CompactionReport:
        """Compact LOG.md now (waiting for a running compaction)."""
        summarizer = self.summarizer()
        return self.compactor.run(summarizer, summary, force=force, dry_run=dry_run, progress=progress)

    def summarizer(self, automatic: bool = False) -> LogSummarizer:
        """The LOG.md summarizer: ``summary_llm`` if set, else the configured backend, else deterministic
        (also for an ``automatic`` compaction within ``AUTO_RETRY_S`` of a failed summarizer model)."""
        memory = self.config.memory
        resting = automatic and time.monotonic() - self._llm_failed_at < AUTO_RETRY_S
        generate = None if resting else self.summary_llm or self._configured_llm()
        window = self.summary_window or window_of_generate(generate)
        return LogSummarizer(generate, memory.compact_summary_tokens, window=window,
                             timeout_s=memory.compact_timeout_s, deadline_s=memory.compact_deadline_s,
                             cancel=self._closing)

    def _configured_llm(self) -> Generate | None:
        choice = self.config.memory.compact_summarizer
        if choice not in ("llm", "deterministic"):
            raise ConfigError(f"memory.compact_summarizer must be llm or deterministic, got {choice!r}")
        if choice == "deterministic" or self.config.llm.backend == "offline":
            return None
        from core.llm.backend import generate_with
        from core.llm.select import choose_backend

        backend = choose_backend(self.config.llm).backend
        return None if backend.name == "offline" else generate_with(backend)

    def after_append(self) -> None:
        """Start a background compaction if LOG.md just crossed a threshold (cheap otherwise)."""
        if not self.config.memory.auto_compact or time.monotonic() - self._auto_failed_at < AUTO_RETRY_S:
            return
        if self._busy() or not self.compactor.over_threshold():
            return
        self._start(self._auto_compact, "compaction")

    def at_open(self) -> None:
        """Finish an interrupted compaction's indexing in the background, if any is pending."""
        history = self.db.conn.execute(
            "SELECT 1 FROM compaction_history WHERE indexed_at IS NULL LIMIT 1"
        ).fetchone()
        first = self.compactor.log.first_entry()
        unrecorded = first is not None and is_compaction_summary(first) and not self.db.conn.execute(
            "SELECT 1 FROM compaction_history WHERE last_seq = ?", (first.metadata["covers"][1],)
        ).fetchone()
        if history or unrecorded:
            self._start(self._recover, "recovery")

    def _start(self, target, what: str) -> None:
        with self._guard:
            if self._closing.is_set() or (self._worker is not None and self._worker.is_alive()):
                return
            self._worker = threading.Thread(target=target, name=f"agentos-{what}-{self.paths.name}", daemon=True)
            self._worker.start()

    def _busy(self) -> bool:
        worker = self._worker
        return worker is not None and worker.is_alive()

    def _auto_compact(self) -> None:
        summarizer = self.summarizer(automatic=True)
        try:
            self.compactor.run(summarizer, wait=False)
        except AgentOSError as exc:
            # A background run has no caller to raise to: the log stays whole and a later append retries.
            self._auto_failed_at = time.monotonic()
            log.error("automatic LOG.md compaction failed (LOG.md is unchanged or complete): %s", exc)
        if summarizer.failures:
            self._llm_failed_at = time.monotonic()
            log.warning("the LOG.md summarizer model failed; automatic compactions summarise deterministically "
                        "for the next %gs", AUTO_RETRY_S)

    def _recover(self) -> None:
        try:
            self.compactor.recover()
        except AgentOSError as exc:
            log.error("finishing an interrupted LOG.md compaction failed (retried at next start): %s", exc)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a background compaction or recovery; return True if none is running."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout)
        return not self._busy()

    def stop(self) -> None:
        """Stop background work between steps (a model call it waits for is abandoned) and wait for it."""
        self._closing.set()
        self.wait()

    def close(self) -> None:
        """Stop background work (see :meth:`stop`), then release the cold store."""
        self.stop()
        with self._guard:
            if self._store is not None:
                self._store.close()
                self._store = None
        _live.discard(self)

    def after_fork(self) -> None:
        """In a forked child: forget the parent's thread and cold store (used or closed only by the parent)."""
        self._guard = threading.Lock()
        self._worker = None
        self._store = None


def open_store(paths: AgentPaths, config: Config, *, read_only: bool = False,
               redactor: Callable[[], Redactor] | None = None) -> ColdStore:
    """The cold store of an agent (opened on first use); ``read_only`` searches an existing one only.

    ``redactor()`` hides the secrets known now in every chunk written.
    """
    return ColdStore(
        paths.lancedb_dir, make_embedder(config), paths.memory_dir / ".cold.lock",
        reindex_hint=f"python scripts/rebuild_index.py --agent {paths.name}",
        optimize_every=config.cold.optimize_every, ann_min_rows=config.cold.ann_min_rows,
        read_only=read_only, redactor=redactor,
    )


@dataclass(frozen=True)
class RecallRequest:
    """A validated recall query."""

    text: str
    n_results: int
    kinds: list[str] | None
    since: str | None
    """UTC ISO-8601 lower bound of ``created_at``, or None."""
    until: str | None


def check_recall(
    query: Any, n_results: int, kind: str | list[str] | None, since: Any, until: Any,
) -> RecallRequest:
    """Validate the arguments of a recall; raise ValidationError on bad input."""
    text = check_text(query, "query").strip()
    if not text:
        raise ValidationError("query must not be empty")
    if isinstance(n_results, bool) or not isinstance(n_results, int) or not 1 <= n_results <= MAX_RESULTS:
        raise ValidationError(f"n_results must be an integer from 1 to {MAX_RESULTS}")
    kinds = [kind] if isinstance(kind, str) else kind
    if kinds is not None and (not kinds or any(k not in KINDS for k in kinds)):
        raise ValidationError(f"kind must be one of {', '.join(KINDS)} (or a list of them), got {kind!r}")
    return RecallRequest(text, n_results, kinds, _time_bound(since, "since"), _time_bound(until, "until"))


def search(store: ColdStore, request: RecallRequest, secrets: list[str]) -> list[dict[str, Any]]:
    """The best chunks of ``store`` for ``request``, secrets redacted: ``{content, metadata, score, ...}``."""
    hits = store.search(request.text, request.n_results, request.kinds, request.since, request.until)
    return [
        {"content": redact(h.chunk.text, secrets), "metadata": redact(h.chunk.metadata, secrets),
         "score": h.score, "source": h.chunk.source, "created_at": h.chunk.created_at,
         "kind": h.chunk.kind, "id": h.chunk.id}
        for h in hits
    ]


def _time_bound(value: Any, what: str) -> str | None:
    """A ``since``/``until`` bound (datetime or ISO-8601 text) in the store's UTC format."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValidationError(f"{what} must be an ISO-8601 time, got {value!r}") from exc
    if not isinstance(value, datetime):
        raise ValidationError(f"{what} must be a datetime or ISO-8601 text, got {type(value).__name__}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return utc_timestamp(value)
