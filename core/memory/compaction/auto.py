"""LOG.md compaction of one agent as its writers see it: the summarizer chosen, automatic runs in the
background.

Automatic compaction runs in a background thread so that ``append_log`` stays a ~millisecond call: the
LLM summary and the first load of the embedding model (~6 s) never delay the caller, and a failing
compaction never makes an append fail. A process that dies mid-compaction is the same case as a SIGKILL,
which the protocol (:mod:`core.memory.compaction.log_compaction`) recovers from; one that exits while the
thread runs stops it between steps first (:mod:`core.memory.recall.process_hooks`).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from core.config import Config
from core.errors import AgentOSError, ConfigError, shown
from core.llm import ContextWindow, window_of_generate
from core.memory.compaction.log_compaction import CompactionReport, LogCompactor
from core.memory.compaction.summarizer import Generate, LogSummarizer
from core.memory.files.log_format import is_compaction_summary
from core.durable import foreground
from core.memory.recall import process_hooks
from core.memory.recall.index import Progress

log = logging.getLogger(__name__)

AUTO_RETRY_S = 60.0
"""After a failed automatic compaction, appends do not retry it for this long; after a failed
summarizer model, automatic compactions summarise deterministically for this long."""


class Compaction:
    """Runs one agent's LOG.md compactions: explicit ones at once, automatic ones in a background thread."""

    def __init__(self, compactor: LogCompactor, config: Config, name: str) -> None:
        self.compactor = compactor
        self.config = config
        self.name = name
        self.summary_llm: Generate | None = None
        """The LLM that summarises LOG.md (``generate(prompt) -> str``); None: chosen from the config."""
        self.without_model = False
        """True: the application runs on no model (the offline backend), so none is looked for: LOG.md
        summaries are deterministic, as with ``memory.compact_summarizer: deterministic``."""
        self.summary_window: ContextWindow | None = None
        """That LLM's window (None: asked from its backend, else Ollama's default is assumed)."""
        self._closing = threading.Event()
        self._guard = threading.Lock()
        self._worker: threading.Thread | None = None
        self._auto_failed_at = -AUTO_RETRY_S
        self._llm_failed_at = -AUTO_RETRY_S
        process_hooks.track(self)

    def compact(
        self, summary: str | None = None, *, force: bool = True, dry_run: bool = False,
        progress: Progress | None = None,
    ) -> CompactionReport:
        """Compact LOG.md now (waiting for a running compaction)."""
        # A dry run or a given summary summarises nothing: no summarizer model is looked for (a network call).
        summarizer = None if dry_run or summary is not None else self.summarizer()
        return self.compactor.run(summarizer, summary, force=force, dry_run=dry_run, progress=progress)

    def summarizer(self, automatic: bool = False) -> LogSummarizer:
        """The LOG.md summarizer: ``summary_llm`` if set, else the configured backend, else deterministic
        (also for an ``automatic`` compaction within ``AUTO_RETRY_S`` of a failed summarizer model, or of
        finding none)."""
        memory = self.config.memory
        resting = automatic and time.monotonic() - self._llm_failed_at < AUTO_RETRY_S
        generate = None if resting else self.summary_llm or self._configured_llm()
        if automatic and generate is None:
            # Finding none means building clients and a ping (Python work that delays this process's
            # appends): automatic compactions ask again after AUTO_RETRY_S, like after a failed model.
            self._llm_failed_at = time.monotonic()
        window = self.summary_window or window_of_generate(generate)
        return LogSummarizer(generate, memory.compact_summary_tokens, window=window,
                             timeout_s=memory.compact_timeout_s, deadline_s=memory.compact_deadline_s,
                             cancel=self._closing)

    def _configured_llm(self) -> Generate | None:
        choice = self.config.memory.compact_summarizer
        if choice not in ("llm", "deterministic"):
            raise ConfigError(f"memory.compact_summarizer must be llm or deterministic, got {shown(choice)}")
        if choice == "deterministic" or self.config.llm.backend == "offline" or self.without_model:
            return None
        from core.llm import generate_with
        from core.llm import choose_backend

        backend = choose_backend(self.config.llm).backend
        if backend.name == "offline":
            log.warning("no model server answers for LOG.md compaction: the deterministic summary is used")
            return None
        return generate_with(backend)

    def after_append(self) -> None:
        """Start a compaction in the background if LOG.md crossed a threshold."""
        if not self.config.memory.auto_compact or time.monotonic() - self._auto_failed_at < AUTO_RETRY_S:
            return
        if self.busy() or not self.compactor.over_threshold():
            return
        self._start(self._auto_compact, "compaction")

    def at_open(self) -> None:
        """Finish an interrupted compaction's post-swap steps and indexing in the background, if any."""
        db = self.compactor.db
        history = db.conn.execute("SELECT 1 FROM compaction_history WHERE indexed_at IS NULL LIMIT "
                                  "1").fetchone()
        first = self.compactor.log.first_entry()
        unrecorded = first is not None and is_compaction_summary(first) and not db.conn.execute(
            "SELECT 1 FROM compaction_history WHERE last_seq = ?", (first.metadata["covers"][1],)
        ).fetchone()
        if history or unrecorded:
            self._start(self._recover, "recovery")

    def _start(self, target: Callable[[], None], what: str) -> None:
        with self._guard:
            if self._closing.is_set() or self.busy():
                return
            self._worker = foreground.background_thread(target, name=f"agentos-{what}-{self.name}")
            self._worker.start()

    def busy(self) -> bool:
        """True while a background compaction or recovery runs."""
        worker = self._worker
        return worker is not None and worker.is_alive()

    def _auto_compact(self) -> None:
        with foreground.step(self._closing):  # choosing the summarizer may import its client
            summarizer = self.summarizer(automatic=True)
        try:
            self.compactor.run(summarizer, wait=False, step=lambda: foreground.step(self._closing))
        except (AgentOSError, OSError) as exc:
            # A background run has no caller to raise to: the log stays whole and a later append retries.
            self._auto_failed_at = time.monotonic()
            log.error("automatic LOG.md compaction failed (LOG.md is unchanged or complete): %s", exc)
        if summarizer.failures:
            self._llm_failed_at = time.monotonic()
            log.warning("the LOG.md summarizer model failed; automatic compactions summarise "
                        "deterministically for the next %gs", AUTO_RETRY_S)

    def _recover(self) -> None:
        try:
            self.compactor.recover()
        except (AgentOSError, OSError) as exc:
            log.error("finishing an interrupted LOG.md compaction failed (retried at next start): %s", exc)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a background compaction or recovery; return True if none is running."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout)
        return not self.busy()

    def halt(self) -> None:
        """Ask a background run to stop at its next step (a model call it waits for is abandoned)."""
        self._closing.set()

    def stop(self, indexer_timeout: float | None = None) -> None:
        """Stop background work between steps and wait for it (it indexes through the cold tier, whose
        own stop bounds that)."""
        self.halt()
        self.wait()

    def close(self) -> None:
        """Stop background work (see :meth:`stop`); the exit hook leaves this one alone from now on."""
        self.stop()
        process_hooks.untrack(self)

    def after_fork(self) -> None:
        """In a forked child: forget the parent's thread."""
        self._guard = threading.Lock()
        self._worker = None
