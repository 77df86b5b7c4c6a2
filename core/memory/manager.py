"""MemoryManager: one agent's memory, all tiers behind one object.

    from core.memory_manager import MemoryManager
    manager = MemoryManager("finn")   # creates agents/finn/memory/ on first use

Hot tier: NOW.md (``update_now``, ``read_now``). Warm tier: LOG.md (``append_log``, ``read_log``). Facts in
memory.db (``save_fact``, ``get_fact``, ``list_facts``, ``delete_fact``), also learned in the background
(``reflection``). ``format_context_for_prompt`` renders all of it for an LLM. Every write is crash-safe and
serialised by the agent's lock.

LOG.md is the truth. A LOG.md entry is acknowledged once its line is on disk; the index in memory.db catches
up later if it cannot be written now. NOW.md follows its NOW_UPDATE entry. A write whose truth is memory.db
(a fact, a note, a conversation) is refused, with nothing kept, when memory.db cannot take it.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any, Callable

from core.config import Config, load_config
from core.errors import CorruptionError, ValidationError
from core.memory.compaction import CompactionReport
from core.memory.context import format_context
from core.durable import public_methods_converting_os_errors
from core.memory.files import (
    LogEntry,
    NowState,
    check_entry_type,
    check_text,
    check_writer,
    now_file,
    utc_timestamp,
)
from core.memory.reads import Reads, refused_once_closed
from core.memory.recall import Forgotten, Recalled, StoredMemories, log_index
from core.memory.reflection import Reflection
from core.memory.secrets import visible_entries
from core.memory.storage import facts
from core.memory.upkeep import ScrubReport, SecretScrubber, forgetting, now, open_tiers, rebuild, recovery
from core.memory.spaces import Space, recall as space_recall
from core.paths import AgentPaths

log = logging.getLogger(__name__)


# a raw OSError never leaves: a StorageError naming the fix; a closed manager opens nothing again
@refused_once_closed
@public_methods_converting_os_errors("the agent's memory")
class MemoryManager(Reads):
    """The memory of one agent: NOW.md, LOG.md, facts and (with the cold tier) recall (``read_log``,
    ``log_since``, ``scan_log`` and ``get_fact``: see :class:`~core.memory.reads.Reads`)."""

    def __init__(self, agent_name: str, home: Path | None = None, config: Config | None = None) -> None:
        """Open (creating on first use) the memory of ``agent_name``.

        Raises:
            InvalidAgentNameError: the name is not ``[a-z0-9][a-z0-9_-]{0,63}``; nothing is created.
        """
        self.paths = AgentPaths.for_agent(agent_name, home)
        self.agent_name = agent_name
        self.closed = False
        """True once :meth:`close` ran: every method then refuses (open the agent again)."""
        self.config = config or load_config(self.paths)
        self.created: list[Path] = self.paths.ensure_memory_dirs()
        self.tiers = tiers = open_tiers(agent_name, self.paths, self.config,
                                        after_compaction=self._after_compaction)
        """The parts handed to upkeep (recovery, rebuild, forgetting, the secret scrub)."""
        self.lock, self.db, self.facts, self.log = tiers.lock, tiers.db, tiers.facts, tiers.log
        self.cold, self.compactor, self.compaction = tiers.cold, tiers.compactor, tiers.compaction
        self.repairs: list[str] = []
        """What opening found damaged and repaired (each is also logged as a WARNING)."""
        self.scrubber = SecretScrubber(self.tiers)
        self.reflection = Reflection(self.tiers, self.scrubber.catch_up)  # learns in the background
        self.on_close: list[Callable[[], object]] = []  # called once closed (the shared managers forget it)
        try:
            self._open()
        except BaseException:
            self.close()  # a failed open holds nothing either
            raise

    def _after_compaction(self) -> None:  # a scrub leaves LOG.md and the archives to a running compaction
        self.scrubber.catch_up()
        self.reflection.wake()

    def _open(self) -> None:
        created, self.repairs = recovery.open_files(self.tiers)
        self.created += created
        self.scrubber.catch_up()  # a secret saved by a process that died before it was scrubbed
        self.compaction.at_open()
        self.cold.at_open()
        expired = forgetting.expired_note_ids(self.db)
        if expired:
            forgetting.forget(self.tiers, query=None, before=None, ids=expired, kind=None, limit=10_000,
                              reason="expired")

    # -- hot tier -------------------------------------------------------------

    def update_now(
        self,
        status: str | None = None,
        next_steps: list[str] | None = None,
        *,
        new_status: str | None = None,
        state: str | None = None,
        objective: str | None = None,
        current_step: str | None = None,
        done_steps: list[str] | None = None,
        blockers: list[str] | None = None,
        resume_hint: str | None = None,
        run_id: str | None = ...,  # type: ignore[assignment]
    ) -> dict[str, Any]:
        """Rewrite NOW.md atomically and log a NOW_UPDATE entry; return the new NOW.

        Args:
            status: a lifecycle state (idle, active, blocked, error, interrupted, done) or, as in the seed
                (``new_status``, an alias), free text such as "Analyzing portfolio data": the current step,
                and the objective too when NOW has none open (none, done or idle) and ``objective`` is not
                given. The state becomes ``active`` unless ``state`` says otherwise.
            next_steps: the open plan steps, replacing the previous open ones.
            state: the lifecycle state, when ``status`` is free text.
            objective, current_step, blockers, resume_hint: replace those fields.
            done_steps: plan steps to tick off.
            run_id: the run writing NOW.md (``None`` clears it).

        Raises:
            ValidationError: bad input, or nothing to change (every argument None or left out); NOW.md and
                LOG.md are unchanged.
        """
        given = (status, next_steps, new_status, state, objective, current_step, done_steps, blockers,
                 resume_hint)
        if all(value is None for value in given) and run_id is ...:
            raise ValidationError("update_now was given nothing to change (None means 'leave as it is'): "
                                  "pass status, next_steps, state, objective, current_step, done_steps, "
                                  "blockers, resume_hint or run_id")
        lifecycle, current_step, free = now.lifecycle(status if status is not None else new_status, state,
                                                      current_step, next_steps)
        after, text = now.update(self.tiers, lifecycle, run_id, opens=free, objective=objective,
                                 current_step=current_step, next_steps=next_steps, done_steps=done_steps,
                                 blockers=blockers, resume_hint=resume_hint)
        return now_file.document(after, text)

    def now_state(self) -> NowState:
        """NOW.md as a :class:`NowState` (recovered from LOG.md, loudly, if it is unreadable)."""
        try:
            return now_file.read(self.paths.now_file, self.agent_name)
        except CorruptionError:
            with self.lock.hold():
                return now.current_now(self.tiers)

    def read_now(self) -> dict[str, Any]:
        """NOW.md parsed: its front matter fields, plan, blockers, resume hint and ``body`` text."""
        try:  # one read: the front matter and the body always come from the same version
            return now_file.document(*now_file.load(self.paths.now_file, self.agent_name))
        except CorruptionError:
            with self.lock.hold():
                now.current_now(self.tiers)
            return now_file.document(*now_file.load(self.paths.now_file, self.agent_name))

    # -- warm tier ------------------------------------------------------------

    def append_log(self, entry_type: str, content: Any, metadata: dict[str, Any] | None = None) -> int:
        """Append one entry to LOG.md (secrets redacted) and return its seq.

        Once the line is on disk the entry is kept, even if memory.db cannot index it now (it catches up
        later).

        Raises:
            ValidationError: unknown type (the message lists the valid ones), a type or metadata key reserved
                for the system (run markers, summaries, facts, ...), oversize content, invalid UTF-8 or NUL
                bytes; nothing is written.
            StorageError: LOG.md cannot be written (a full disk, a read-only file); nothing is kept.
        """
        check_entry_type(entry_type)
        check_writer(entry_type, metadata if isinstance(metadata, dict) else None)
        return self.append_system(entry_type, content, metadata)

    def append_system(self, entry_type: str, content: Any, metadata: dict[str, Any] | None = None) -> int:
        """Append an entry as the system: the types and metadata keys reserved for it are allowed (for the
        memory and the engine: run and step markers, its own records; a skill writes with
        :meth:`append_log`)."""
        if isinstance(content, (bytes, bytearray)):
            content = check_text(content, "LOG entry content")
        return self.tiers.append(entry_type, content, metadata).seq  # the log redacts every line

    # -- runs -----------------------------------------------------------------

    def start_run(self, objective: str, run_id: str | None = None) -> str:
        """Log RUN_START for a new run and return its id."""
        run_id = run_id or uuid.uuid4().hex[:12]
        self.append_system("RUN_START", objective, {"run_id": run_id})
        return run_id

    def end_run(self, run_id: str, outcome: str = "done", detail: str = "") -> int:
        """Log RUN_END for ``run_id`` with its outcome (done, error, ...)."""
        return self.append_system("RUN_END", detail or outcome, {"run_id": run_id, "outcome": outcome})

    def mark_interrupted(self, run_id: str) -> int:
        """Log INTERRUPTED for a run that never ended (its process died)."""
        return self.append_system("INTERRUPTED", f"run {run_id} was interrupted", {"run_id": run_id})

    def interrupted_runs(self) -> list[dict[str, Any]]:
        """Runs that logged RUN_START but no RUN_END or INTERRUPTED: ``{run_id, seq, started_at}``."""
        self.tiers.catch_up()
        return log_index.interrupted_runs(self.db)

    def rebuild_log_index(self) -> int:
        """Recreate ``log_metadata`` from LOG.md and the archives; return the rows written."""
        return rebuild.rebuild_log_index(self.tiers)

    # -- facts ----------------------------------------------------------------

    def save_fact(self, key: str, value: Any, category: str = "general") -> dict[str, Any]:
        """Store a fact (insert or update) and record it in LOG.md; return it, a secret's value redacted.

        LOG.md's FACT entry lets the facts be rebuilt if memory.db is lost; a secret's value is never logged
        (only its key), so a secret cannot be rebuilt. A new secret is then scrubbed from what already holds
        it (see :mod:`core.memory.upkeep.scrub`), and a non-secret value is stored with the secrets it
        contains redacted.

        Raises:
            ValidationError: non-string key, unknown category, invalid text; nothing is written.
            StorageError: memory.db or LOG.md cannot be written (read-only, disk full); nothing is kept.
        """
        key, text, category = facts.prepare(self.db, key, value, category)
        fact = self.tiers.record_fact(key, text, category,
                                      lambda conn: facts.upsert(conn, key, text, category,
                                                                                utc_timestamp()))
        self.scrubber.catch_up()
        return fact.as_dict()

    def list_facts(self, category: str | None = None) -> list[dict[str, Any]]:
        """All facts (or one category's), secret values redacted (in other facts too), each with the
        ``sources`` reflection learned it from ([] if saved explicitly) and ``extracted`` (see
        ``FactStore.listed``)."""
        return self.facts.redactor()(self.facts.listed(category))

    def delete_fact(self, key: str) -> bool:
        """Delete a fact (recorded in LOG.md); return True if it existed."""
        key = facts.lookup_key(key)
        return self.tiers.record_fact(key, None, None, lambda conn: facts.delete(conn, key))

    # -- cold tier ------------------------------------------------------------

    def store_memory(
        self, content: Any, metadata: dict[str, Any] | None = None, kind: str = "note", *,
        occurred_at: Any = None, expires_at: Any = None,
    ) -> str:
        """Store a memory (secrets redacted) and return its id; it is searchable by words at once.

        Storing the same text with the same metadata again refreshes the stored memory and returns its id
        instead of adding a copy. The vector follows in the background (within about a second); if the
        embedder or LanceDB fails, words still find it and indexing is retried.

        Args:
            content: the text.
            metadata: any JSON object, returned with the memory. Recall reads these keys: ``speaker`` (or
                ``role``, ``author``), ``session`` / ``conversation`` (its neighbours share them), and
                ``date`` or ``occurred_at`` (ISO-8601 or written, e.g. ``"1:56 pm on 8 May, 2023"``): when it
                happened.
            kind: ``note`` or ``summary``.
            occurred_at: when it happened (datetime, ISO-8601 or a written date); wins over metadata.
            expires_at: after this time the memory is no longer recalled (and is forgotten).

        Raises:
            ValidationError: empty, or over ``cold.max_memory_bytes``; unknown kind; an unreadable time.
        """
        return self.cold.store_memory(content, metadata, kind, self.facts.secret_values(),
                                      occurred_at=occurred_at, expires_at=expires_at)

    def store_memories(self, items: list[Any]) -> StoredMemories:
        """Store many memories in one transaction (the fast way to load a history); return their ids.

        Each item is text or a dict with ``content`` and optionally ``metadata``, ``kind``, ``occurred_at``
        and ``expires_at`` (as in :meth:`store_memory`). A bad item is refused alone (``refused`` of the
        :class:`~core.memory.recall.views.results.StoredMemories`); no good item: ValidationError. Nothing is
        stored twice.
        """
        return self.cold.store_memories(items, self.facts.secret_values())

    def recall_memory(
        self, query: str | None = None, n_results: int = 5, kind: str | list[str] | None = None,
        since: Any = None, until: Any = None, *, min_score: float | None = None,
        recency_days: float | None = None, spaces: list[str] | None = None, explain: bool = False,
        now: Any = None,
    ) -> Recalled | dict[str, Any]:
        """Search every tier by meaning and words, and the memory spaces the agent belongs to; best first.

        Searches LOG.md entries (as soon as they are written), archived entries and summaries, notes, facts
        (never secret ones), the providers' conversation messages and summaries and the items of the agent's
        LangGraph store. With no ``query``, lists its memories of ``since``-``until``, newest first (score
        None).

        Args:
            query: what to look for (None: list the time window).
            n_results: how many results at most (1-100).
            kind: ``note``, ``summary``, ``fact``, ``log``, ``log_archive``, ``message``, ``item``, or a list.
            since, until: only what happened in this window (datetime, ISO-8601, ``"8 May 2023"``,
                ``"last week"``).
            min_score: leave out results below this relevance (0-1; default ``cold.min_score``).
            recency_days, now: a score halves per ``recency_days`` of age; ``now``: when the query is asked.
            spaces: the memory spaces to search too: None, every space the agent is a member of; a
                list of names (PermissionDeniedError for one it is not a member of); ``[]``, none.
            explain: return ``{results, left_out}``: why each result ranked, what was left out
                (docs/recall.md).

        Returns:
            ``{content, metadata, score, source, created_at, occurred_at, kind, tier, where, id}`` dicts:
            ``score`` is the probability (0-1) that the memory is relevant, ``tier`` is warm, cold or
            conversation, ``where`` says where the original is (seq, archive, conversation and message id,
            fact key, note id, or store namespace and key), ``space`` (None for the agent's own memory),
            ``author`` (who wrote it); ``superseded_by`` when a later note with its ``key`` supersedes it (a
            :class:`~core.memory.recall.views.results.Recalled`: ``warning`` says when some vectors were not
            done yet).
        """
        chosen = space_recall.spaces_to_search(self.agent_name, self.paths.root.parent, spaces)
        hidden = self.facts.hidden_values()  # the secrets' and forgotten facts' values, in spaces' hits too
        own = self.cold.recall(query, n_results, kind, since, until, hidden,
                               min_score=min_score, recency_days=recency_days, explain=explain, now=now)
        asker = space_recall.Asker(self.agent_name, self.paths.root.parent, self.cold.tuning,
                                   self.config.cold.min_score, hidden, self.cold.docs.terms)
        found = space_recall.merged(asker, own, chosen, query, n_results, kind, since, until, min_score,
                                    recency_days, now)
        return own.like(found) if isinstance(own, Recalled) else found

    def publish(self, space: str, content: Any, metadata: dict[str, Any] | None = None) -> str:
        """Publish ``content`` to the memory space ``space`` as this agent; return the memory's id.

        Raises:
            UnknownSpaceError: no such space.
            PermissionDeniedError: this agent is not a read-write member of it.
            SecretContentError: the content holds the value of a member's secret fact; nothing is stored.
        """
        with Space(space, self.paths.root.parent) as shared:
            return shared.publish(self.agent_name, content, metadata)

    def forget_memory(self, memory_id: str) -> bool:
        """Forget one memory by the id recall returned; return True if it existed (see
        :meth:`forget_memories`).

        LOG.md gets a FORGET entry naming the id, never the text; nothing derived later shows the memory,
        and :meth:`purge_forgotten` also takes a forgotten fact's value out of LOG.md and the archives."""
        return bool(self.forget_memories(ids=[memory_id]))

    def forget_memories(
        self, query: str | list[str] | None = None, before: Any = None, *, ids: list[str] | None = None,
        kind: str | list[str] | None = None, meaning_above: float | None = None, limit: int = 100,
        dry_run: bool = False,
    ) -> Forgotten:
        """Forget the memories that match ``query`` and/or happened before ``before``; return their ids.

        Args:
            query: forget what says every word of it (stop words aside, stemmed), ``limit`` at most; a list:
                ids.
            before: forget what happened before this time (datetime, ISO-8601 or a written date), or before
                the start of a period ("30 days ago", "last week").
            ids: forget exactly these ids. kind: only memories of this kind (or kinds).
            meaning_above: with ``query``, forget instead what is closer in meaning to it (cosine, 0-1) than
                this.
            dry_run: forget nothing; return the ids that would be forgotten, and why (``matched``), to ask
                first.
        """
        # forget_memories(["note:3f2a"]): ids, as forget_memory takes one
        if isinstance(query, (list, tuple)):
            query, ids = None, [*query, *(ids or [])]
        return forgetting.forget(self.tiers, query=query, before=before, ids=ids, kind=kind,
                                 meaning_above=meaning_above, limit=limit, dry_run=dry_run)

    def compact_log(self, summary: str | None = None, *, force: bool = True,
                    dry_run: bool = False) -> CompactionReport:
        """Compact LOG.md now: archive its entries, keep one SUMMARY, index the archive.

        Args:
            summary: used as is; otherwise the summarizer writes it (``cold.summary_llm``, else
                deterministic).
            force: compact even below the thresholds (the default for an explicit call).
            dry_run: report what would be archived; change nothing.
        """
        return self.compaction.compact(summary, force=force, dry_run=dry_run)

    # -- prompt ---------------------------------------------------------------

    def format_context_for_prompt(self, max_tokens: int | None = None, log_entries: int = 50) -> str:
        """NOW, the newest LOG entries and the facts within ``max_tokens`` (secrets, the forgotten hidden)."""
        budget = max_tokens if max_tokens is not None else self.config.memory.context_tokens
        if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0:
            raise ValidationError("max_tokens must be a positive integer")
        return self.facts.redactor()(
            format_context(self.agent_name, self.now_state(), self.visible_log(log_entries),
                           self.facts.list(), budget))

    def visible_log(self, last_n: int) -> list[LogEntry]:
        """The last ``last_n`` LOG.md entries, oldest first, but for those a FORGET entry named (for a
        prompt)."""
        return visible_entries(self.db, self.log.tail(last_n))

    def warm_up(self) -> None:
        """Open the cold store and load its embedding model in a thread now (see ``ColdMemory.warm_up``)."""
        self.cold.warm_up()

    def reflect_soon(self, backend: Any = None) -> None:
        """Learn in the background from what was recorded since the last pass; never waits (``backend``: the
        model to read with, e.g. the engine's own; see :mod:`core.memory.reflection`)."""
        self.reflection.wake(backend)

    def scrub_secrets(self) -> ScrubReport:
        """Remove the secrets' values from every file and index that holds them now (``save_fact`` runs it
        for a new secret; call it after saving secrets in memory.db another way)."""
        return self.scrubber.run(everything=True)

    def purge_forgotten(self) -> ScrubReport:
        """Take forgotten facts' values out of LOG.md, the archives, NOW.md and every index, as a secret's
        scrub does (a purge killed midway is finished at the next open); a fact saved again is live and
        kept."""
        return self.scrubber.purge()

    def close(self) -> None:
        """Stop reflection and the background work and wait for them, release the cold store, databases, lock
        files and the in-use lock: nothing of the agent is held afterwards, and every method refuses. Safe
        to call twice."""
        self.closed = True
        self.reflection.close()
        self.tiers.close()
        while self.on_close:
            self.on_close.pop()()

    def __enter__(self) -> "MemoryManager":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryManager({self.agent_name!r}, root={str(self.paths.root)!r})"
