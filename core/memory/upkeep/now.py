"""NOW.md written and kept in step with LOG.md: each version follows its NOW_UPDATE entry.

``update`` rewrites NOW.md atomically after logging the NOW_UPDATE entry that records the whole
state; ``current_now`` is NOW.md as the next update starts from it:

- unreadable (a bad front matter) or missing: rewritten from LOG.md's newest NOW_UPDATE entry;
  the bad file goes to quarantine (logged as a WARNING);
- behind LOG.md (a writer killed between its NOW_UPDATE line and the replace): brought forward.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from typing import Any

from core.errors import CorruptionError, StorageError
from core.durable import atomic_write, foreground, storage_error
from core.memory.files import now_file, now_record
from core.memory.files.log_file import scan_bytes
from core.memory.files.log_format import LogEntry, check_text, utc_timestamp
from core.memory.files.now_file import STATUSES, NowState, PlanStep
from core.memory.recall import log_index
from core.memory.secrets.redaction import Redactor
from core.memory.upkeep.tiers import Tiers

log = logging.getLogger(__name__)

OPENABLE = ("done", "idle")
"""NOW statuses whose objective is finished (or that have none): a new status text opens the next one."""


def update(tiers: Tiers, status: str | None = None, run_id: Any = ..., *, opens: str | None = None,
           **fields: Any) -> tuple[NowState, str]:
    """Rewrite NOW.md atomically (every field redacted) after logging its NOW_UPDATE entry; return the
    new state and text. ``status`` is a lifecycle state or None; ``run_id`` and ``fields`` are as
    :func:`core.memory.files.now_file.advance` takes them (``...``: the run is kept); ``opens`` becomes the
    objective too when NOW has none open (none, or a finished one) and ``fields`` sets none.

    Raises:
        ValidationError: bad input; NOW.md and LOG.md are unchanged.
    """
    with foreground.writing(), tiers.lock.hold():
        redactor = tiers.facts.redactor()  # under the lock: a secret saved meanwhile is known
        before = current_now(tiers)
        if opens is not None and fields.get("objective") is None and (not before.objective
                                                                      or before.status in OPENABLE):
            fields["objective"] = opens
        # Every field is redacted, those carried over from before too (a plan written before its secret
        # was saved).
        after = redacted(now_file.advance(before, status=status, run_id=run_id, **fields), redactor)
        version = before.version + 1
        # Refuse an oversize NOW before anything is logged: sized with the longest values
        # the fields filled in after the append can take.
        now_file.encode(replace(after, version=version, updated_at=utc_timestamp(), log_seq=now_file.MAX_SEQ))
        record = now_record.update_record(replace(after, version=version))
        staged = entry = None
        try:
            with tiers.log.appending("NOW_UPDATE", after.current_step or after.status, record) as entry:
                after = replace(after, version=version, updated_at=entry.ts, log_seq=entry.seq)
                # Written before the log line is flushed, so the two go to disk together.
                staged, text = now_file.stage(tiers.paths.now_file, after, start_flush=True)
            staged.install()  # only now, with its NOW_UPDATE line durable, does NOW.md change
        except BaseException:
            if staged is not None and not staged.replaced:
                staged.discard()
                if entry is not None:
                    tiers.log.retract(entry)  # NOW.md stayed as it was: so does LOG.md
            raise
        tiers.index(entry)
    return after, text


def lifecycle(
    status: str | None, state: str | None, current_step: str | None, next_steps: list[str] | None
) -> tuple[str | None, str | None, str | None]:
    """Split ``update_now``'s status into (lifecycle state, current step, free text): free text (what the
    agent is doing, as the seed writes it) is the step, and opens an objective (see :func:`update`)."""
    free = None
    if status is not None and status not in STATUSES:
        free = check_text(status, "status")
        current_step = current_step if current_step is not None else free
        status = None
    return state or status or ("active" if current_step or next_steps else None), current_step, free


def redacted(state: NowState, redactor: Redactor) -> NowState:
    """``state`` with the secrets hidden in every text field."""
    if not redactor:
        return state
    return replace(state, objective=redactor(state.objective), current_step=redactor(state.current_step),
                   resume_hint=redactor(state.resume_hint), blockers=redactor(state.blockers),
                   plan=tuple(PlanStep(redactor(step.text), step.done) for step in state.plan))


def current_now(tiers: Tiers) -> NowState:
    """NOW.md as the next update starts from it (the agent's lock is held): rewritten from LOG.md if it is
    unreadable or missing, brought forward if a writer was killed between its NOW_UPDATE line and the
    replace."""
    try:
        state = now_file.read(tiers.paths.now_file, tiers.agent_name)
    except CorruptionError as exc:
        return restore_now(tiers, f"was unreadable ({exc})")
    if not tiers.paths.now_file.exists() and tiers.has_history():
        return restore_now(tiers, "was missing")
    if tiers.log.last_seq() == state.log_seq:
        return state  # nothing was logged after it: the common case, one stat
    newer = _newer_now_update(tiers, state.log_seq)
    return state if newer is None else bring_forward(tiers, state, newer)


def _newer_now_update(tiers: Tiers, seq: int) -> LogEntry | None:
    """A NOW_UPDATE entry after ``seq`` (NOW.md's own): asked of the index first, which is cheap, when it
    holds every entry (it is read, never written, here: an update does not wait for memory.db's writers)."""
    try:
        if (log_index.last_indexed_seq(tiers.db) >= tiers.log.last_seq()
                and log_index.newer_now_update(tiers.db, seq) is None):
            return None
    except StorageError:
        pass  # memory.db cannot answer: LOG.md is read instead
    return newest_now_update(tiers, seq)


def newest_now_update(tiers: Tiers, after: int = 0) -> LogEntry | None:
    """The newest NOW_UPDATE entry with a seq above ``after``, from LOG.md or else the archives."""
    for entry in tiers.log.newest_first():
        if entry.seq <= after:
            return None
        if entry.type == "NOW_UPDATE":
            return entry
    for path in reversed(tiers.archives()):
        for entry in reversed(scan_bytes(path.read_bytes(), path).entries):
            if entry.seq <= after:
                return None
            if entry.type == "NOW_UPDATE":
                return entry
    return None


def restore_now(tiers: Tiers, why: str) -> NowState:
    """Rewrite NOW.md from LOG.md's newest NOW_UPDATE (the bad file goes to quarantine); the lock is held."""
    path = tiers.paths.now_file
    blank = NowState(agent=tiers.agent_name, updated_at=utc_timestamp())
    entry = newest_now_update(tiers)
    state = blank
    if entry is not None:
        try:
            state = now_record.from_update(entry.metadata, entry.seq, entry.ts, blank)
        except CorruptionError as exc:
            log.warning("%s; keeping only its version", exc)
            version = entry.metadata.get("version")
            state = replace(blank, version=version if isinstance(version, int) else 0, log_seq=entry.seq)
    if path.exists():
        target = tiers.paths.quarantine_dir / f"NOW-{utc_timestamp().replace(':', '')}-{os.getpid()}.md"
        try:
            atomic_write(target, path.read_bytes())
        except OSError as exc:
            raise storage_error(exc, f"cannot copy the damaged {path} to {target}") from exc
        where = f"; the damaged file is at {target}"
    else:
        where = ""
    now_file.write(path, state)
    source = f"LOG.md entry {entry.seq}" if entry is not None else "nothing (no NOW_UPDATE was logged)"
    log.warning("agent %s: NOW.md %s: rewritten from %s%s", tiers.agent_name, why, source, where)
    return state


def bring_forward(tiers: Tiers, state: NowState, entry: LogEntry) -> NowState:
    """NOW.md as the NOW_UPDATE ``entry`` recorded it, when a writer was killed before replacing it."""
    try:
        newer = now_record.from_update(entry.metadata, entry.seq, entry.ts, state)
    except CorruptionError as exc:
        log.warning("%s; only its version is taken", exc)
        version = entry.metadata.get("version")
        newer = replace(state, version=max(state.version, version if isinstance(version, int) else 0))
    if newer.version < state.version:
        return state
    try:
        now_file.write(tiers.paths.now_file, newer)
    except StorageError as exc:
        log.warning("NOW.md could not be brought forward to LOG.md entry %d (%s)", entry.seq, exc)
        return newer
    log.warning("agent %s: NOW.md was behind LOG.md's NOW_UPDATE entry %d (its writer was killed before "
                "replacing it): brought forward to version %d", tiers.agent_name, entry.seq, newer.version)
    return newer
