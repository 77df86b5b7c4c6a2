"""Reflection of one agent, in the background: the thread, when it runs, and who reads.

One daemon thread an agent (``agentos-reflect-<agent>``), started by the first :meth:`Reflection.wake`:
after an engine run ends, after a LOG.md compaction, and then every ``reflect.interval_s`` while the
process lives. One pass runs at a time in a process (whichever agent it is for). Nothing waits for it:
``wake`` only sets an event, and a pass's model calls hold no lock. :meth:`Reflection.close` stops it
and joins it (a model call in flight is abandoned; its entries stay unread); interpreter exit stops it
too (:mod:`core.memory.recall.process_hooks`), and a forked child starts without it.

Who reads: the backend the engine hands over (its own), else the configured one (with ``reflect.model``, that
model on the configured server, whatever the engine runs); a model server's
model (:class:`~core.memory.reflection.extract.ModelReader`), or, for the offline backend, its rules
(:class:`~core.memory.reflection.rules.RuleReader`) when ``reflect.enabled`` is ``true`` or reflection is
asked for explicitly (``agentos reflect``). ``auto`` leaves the offline backend alone.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import nullcontext
from dataclasses import replace
from typing import Any, Callable

from core.errors import AgentOSError, BackendUnavailableError, ModelNotFoundError
from core.durable import foreground
from core.memory.recall import process_hooks
from core.memory.recall.docs import DocIndex
from core.memory.reflection import passes, state
from core.memory.reflection.extract import ModelReader
from core.memory.reflection.passes import PassReport, Progress
from core.memory.reflection.profile import ProfileLine, profile
from core.memory.reflection.rules import RuleReader
from core.memory.storage import extracted, facts
from core.memory.upkeep.tiers import FactChange, Tiers

log = logging.getLogger(__name__)

UNAVAILABLE_RETRY_S = 60.0
"""After the model server did not answer (or no model server was found), wait this long before asking
again."""
JOIN_S = 60.0
"""How long ``close`` waits for a commit in progress (a model call is abandoned at once)."""

_one_pass = threading.Lock()
"""One pass at a time in a process."""


class Reflection:
    """The reflection of one agent (see the module docstring)."""

    def __init__(self, tiers: Tiers, on_secret: Callable[[], object]) -> None:
        self.tiers = tiers
        self.config = tiers.config.reflect
        self.on_secret = on_secret
        """Runs the secret scrub after a pass saved a secret (the manager's scrubber)."""
        self.backend: Any = None
        """The backend to read with (the engine's); None: the configured one."""
        self.last: PassReport | None = None
        self.last_error: str | None = None
        self._configured: Any = None
        self._unavailable_at = -UNAVAILABLE_RETRY_S
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._idle = threading.Event()
        """Set while the thread waits with nothing left to read (cleared by :meth:`wake`)."""
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        process_hooks.track(self)

    # -- when it runs ----------------------------------------------------------------------------------

    def wake(self, backend: Any = None) -> None:
        """Reflect soon in the background on what is new (never waits); ``backend``: the one to read with."""
        if backend is not None:
            self.backend = backend
        if self._stop.is_set() or self.config.enabled == "false":
            return
        if self.config.enabled == "auto" and getattr(self.backend, "name", "") == "offline":
            return
        self._idle.clear()
        with self._guard:
            if self._thread is None or not self._thread.is_alive():
                name = f"agentos-reflect-{self.tiers.agent_name}"
                self._thread = foreground.background_thread(self._run, name=name)
                self._thread.start()
        self._wake.set()

    def running(self) -> bool:
        """True while the background thread lives."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            wait = self.config.interval_s
            try:
                reader = self.reader()
                if reader is not None and self._has_work():
                    self.last = self._pass(reader, step=lambda: foreground.step(self._stop))
                    self.last_error = None
            except (BackendUnavailableError, ModelNotFoundError) as exc:
                self._unavailable_at = time.monotonic()
                self.last_error = str(exc)
                log.warning("reflection waits for the model server (%s); it tries again in %gs", exc,
                            UNAVAILABLE_RETRY_S)
                wait = min(wait, UNAVAILABLE_RETRY_S)
            # memory.db or a file failed: nothing is marked, the next pass redoes it
            except AgentOSError as exc:
                self.last_error = str(exc)
                log.error("reflection failed (nothing was skipped; it tries again in %gs): %s",
                          UNAVAILABLE_RETRY_S, exc)
                wait = min(wait, UNAVAILABLE_RETRY_S)
            if not self._wake.is_set():
                self._idle.set()
            self._wake.wait(wait)
        self._idle.set()

    def finish(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until the background has read what it was woken for; True if it has
        (or never started). A command that ends after a run calls it, so that its process does not abandon the
        run's reflection at exit."""
        if not self.running():
            return True
        return self._idle.wait(timeout)

    def _has_work(self) -> bool:
        conn = self.tiers.db.conn
        lag = state.status(conn, self.tiers.log.last_seq())["lag"]["total"]
        return bool(lag or state.due(conn))

    def _pass(self, reader: Any, *, retry_all: bool = False, step: passes.Step = nullcontext,
              progress: Progress | None = None) -> PassReport:
        """One pass, once no other pass of this process runs."""
        while not _one_pass.acquire(timeout=0.05):
            if self._stop.is_set():
                return PassReport(reader.model, reader.fallback, stopped="the memory is closing")
        try:
            return passes.run_pass(self.tiers, reader, self.config, self._stop, on_secret=self.on_secret,
                                   retry_all=retry_all, step=step, progress=progress)
        finally:
            _one_pass.release()

    # -- who reads -------------------------------------------------------------------------------------

    def reader(self, backend: Any = None, explicit: bool = False) -> ModelReader | RuleReader | None:
        """Who reads: ``backend``'s model, the handed-over or configured backend's, or the offline rules
        (see the module docstring); None when reflection is off for this backend."""
        backend = backend or (None if self.config.model else self.backend) or self._configured_backend()
        if backend is None or getattr(backend, "name", "") == "offline":
            return RuleReader() if explicit or self.config.enabled == "true" else None
        return ModelReader(backend, self.config.timeout_s, self._stop)

    def _configured_backend(self) -> Any:
        """The backend ``llm`` configures (a ping for ``auto``); while it is the offline one (no server
        answered), asked again every ``UNAVAILABLE_RETRY_S``."""
        found = self._configured
        if (found is None or found.name == "offline") and \
                time.monotonic() - self._unavailable_at >= UNAVAILABLE_RETRY_S:
            from core.llm import choose_backend  # the backends' clients only when one is needed

            llm = self.tiers.config.llm
            found = self._configured = choose_backend(replace(llm,
                                                              model=self.config.model or llm.model)).backend
            if found.name == "offline":
                self._unavailable_at = time.monotonic()
        return found

    # -- explicit runs ---------------------------------------------------------------------------------

    def run(self, backend: Any = None, *, retry_all: bool = False,
            progress: Progress | None = None) -> PassReport:
        """Reflect now, in this thread, on everything new (``retry_all``: every quarantined entry too).

        Raises:
            BackendUnavailableError, ModelNotFoundError: the model server cannot be used (nothing skipped).
        """
        reader = self.reader(backend, explicit=True)
        assert reader is not None  # explicit: the rules at least
        self.last = self._pass(reader, retry_all=retry_all, progress=progress)
        return self.last

    def rebuild(self, backend: Any = None, progress: Progress | None = None) -> PassReport:
        """Forget everything learned (explicit facts stay) and learn it again from the files."""
        reader = self.reader(backend, explicit=True)
        assert reader is not None
        while not _one_pass.acquire(timeout=0.05):
            pass
        try:
            self.forget_learned()
        finally:
            _one_pass.release()
        return self.run(backend, retry_all=True, progress=progress)

    def forget_learned(self) -> int:
        """Delete every learned memory and start reading from the beginning; return how many were deleted."""
        conn = self.tiers.db.conn
        learned = extracted.learned_ids(conn)
        keys = [m[5:] for m in learned if m.startswith("fact:")]
        sources = [r[0] for r in conn.execute("SELECT DISTINCT source_id FROM extracted_sources")]

        def then(conn: Any) -> None:
            for memory_id in learned:
                if not memory_id.startswith("fact:"):
                    extracted.delete_memory(conn, memory_id)
            learned_versions = [r[0] for r in conn.execute("SELECT id FROM fact_versions WHERE sources IS "
                                                           "NOT NULL")]
            conn.execute("DELETE FROM fact_versions WHERE sources IS NOT NULL")
            DocIndex.delete(conn, [f"fact_version:{n}" for n in learned_versions])
            DocIndex.refresh_keys(conn, sources)
            state.reset(conn)

        changes = [FactChange(key, None, None, _deleter(key)) for key in keys]
        self.tiers.record_facts(changes, then)
        log.info("reflection: %d learned memories forgotten, to be learned again", len(learned))
        return len(learned)

    def profile(self) -> list[ProfileLine]:
        """The learned profile (:mod:`core.memory.reflection.profile`); [] until reflection has learned a
        fact."""
        if not extracted.learned_ids(self.tiers.db.conn, "fact:", limit=1):
            return []
        return profile(self.tiers.facts.list(), self.config.profile_lines)

    def status(self) -> dict[str, Any]:
        """The lag, what is quarantined, the counts per model and what was learned, with what reads."""
        found = state.status(self.tiers.db.conn, self.tiers.log.last_seq())
        llm = self.tiers.config.llm
        return {"enabled": self.config.enabled, "backend": f"{llm.backend} ({llm.model})",
                "running": self.running(),
                "last_error": self.last_error, **found}

    # -- closing ---------------------------------------------------------------------------------------

    def halt(self) -> None:
        """Ask the thread to stop at its next step (a model call in flight is abandoned)."""
        self._stop.set()
        self._wake.set()

    def stop(self, indexer_timeout: float | None = None) -> None:
        """Stop the thread and wait for it."""
        self.halt()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(JOIN_S)
            if thread.is_alive():
                log.error("the reflection thread of %s did not stop within %gs", self.tiers.agent_name,
                          JOIN_S)

    def close(self) -> None:
        """Stop and join the thread; the exit hook leaves this one alone from now on. Safe twice."""
        self.stop()
        process_hooks.untrack(self)

    def after_fork(self) -> None:
        """In a forked child: the parent's thread (and the pass it may have been in) is not the child's."""
        global _one_pass
        _one_pass = threading.Lock()
        self._guard = threading.Lock()
        self._thread = None


def _deleter(key: str) -> Callable[[Any], Any]:
    def delete(conn: Any) -> Any:
        return facts.delete(conn, key)
    return delete
