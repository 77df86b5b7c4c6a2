"""One pass of reflection: the quarantined entries that are due, then everything recorded since the last pass.

Reading and committing are background steps (:func:`core.durable.foreground.step`: after the writers
pause, one at a time in a process); the model calls between them hold no lock and no step, so the agent's
writes and turns never wait for a model. A pass stops early, keeping what it committed, when the memory
closes (:class:`~core.memory.reflection.extract.Stopped`) or the model server stops answering (raised).
"""

from __future__ import annotations

import logging
import threading
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import Any, Callable, ContextManager

from core.config import ReflectConfig
from core.memory.reflection import inputs, state
from core.memory.reflection.check import check
from core.memory.reflection.commit import Kept, commit
from core.llm import ContextWindow
from core.memory.reflection.extract import (DEFAULT_WINDOW, RETRY_CHARS, Done, ModelReader, Stopped, Tally,
                                            prompt_template, prompt_text, resolve)
from core.memory.reflection.inputs import Item
from core.memory.reflection.rules import RuleReader
from core.memory.upkeep.tiers import Tiers

log = logging.getLogger(__name__)

RULES = "rules"
"""The prompt version the provenance of what the offline rules read names (they have no prompt)."""
KNOWN_SHARE = 0.15
"""Share of the model's window the facts already known may take in a prompt."""

Step = Callable[[], ContextManager[object]]
Progress = Callable[[int], None]


@dataclass
class PassReport:
    """What one pass did (``agentos reflect`` prints it)."""

    reader: str
    """The model that read, or ``offline-rules``."""
    fallback: bool
    """The offline backend's rule-based reader read (no model)."""
    entries: int = 0
    batches: int = 0
    calls: int = 0
    failed: int = 0
    repaired: int = 0
    split: int = 0
    quarantined: int = 0
    rejected: int = 0
    released: int = 0
    """Quarantined entries read after all."""
    facts: int = 0
    events: int = 0
    contradictions: int = 0
    agreed: int = 0
    streak: int = 0
    """Unusable replies in a row when the pass ended (the rest of a batch is quarantined unread after
    :data:`~core.memory.reflection.extract.FAILURES_IN_A_ROW`)."""
    last: str = ""
    """Why the last unusable reply could not be used."""
    stopped: str = ""
    """Why the pass ended before its sources were read ('' when it read them all)."""

    def add(self, tally: Tally, kept: Kept) -> None:
        for name in ("calls", "failed", "repaired", "split", "quarantined", "rejected"):
            setattr(self, name, getattr(self, name) + getattr(tally, name))
        self.streak, self.last = tally.streak, tally.last
        self.facts += kept.facts
        self.events += kept.events
        self.contradictions += kept.contradictions
        self.agreed += kept.agreed

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_pass(tiers: Tiers, reader: ModelReader | RuleReader, config: ReflectConfig, cancel: threading.Event,
             *,
             on_secret: Callable[[], object] = lambda: None, retry_all: bool = False,
             step: Step = nullcontext, progress: Progress | None = None) -> PassReport:
    """Read what is due and new with ``reader`` and keep what it teaches (see the module docstring).

    Raises:
        BackendUnavailableError, ModelNotFoundError: the model server cannot be used; what was committed
            stays.
    """
    report = PassReport(reader.model, reader.fallback)
    try:
        _run(tiers, reader, config, cancel, report, on_secret, retry_all, step, progress)
    except Stopped:  # a model call abandoned: its batch is read again next time
        pass
    if cancel.is_set():
        report.stopped = "the memory is closing"
    return report


def _run(tiers: Tiers, reader: ModelReader | RuleReader, config: ReflectConfig, cancel: threading.Event,
         report: PassReport, on_secret: Callable[[], object], retry_all: bool, step: Step,
         progress: Progress | None) -> None:
    _, version = prompt_template()
    with step():
        due = state.due(tiers.db.conn, everything=retry_all)
    for item_id in due:
        if cancel.is_set():
            return
        with step():
            items = inputs.entry_items(tiers.db, tiers.log, tiers.paths.archive_dir, item_id)
            known = _known(tiers, reader)
        dones, tally = _read(reader, items, known,
                             report) if items else ([], Tally(streak=report.streak, last=report.last))
        report.released += sum(1 for d in dones if d.checked is not None)
        _keep(tiers, reader, version, dones, tally, config, report, on_secret, step, released=[item_id])
        if not items:  # gone, forgotten or no longer one to read: nothing to try again
            with step(), tiers.db.transaction() as conn:
                state.release(conn, [item_id])
    while not cancel.is_set():
        with step():
            found = inputs.pending(tiers.db, tiers.log, tiers.paths.archive_dir)
            known = _known(tiers, reader)
        if not found.items and found.log_upto is None and not found.skipped_queue:
            break
        room = inputs.room_chars(_window(reader), len(prompt_text([], known)) + RETRY_CHARS)
        groups = inputs.batches(found, room, config.batch_entries)
        if not groups:  # only skipped entries: the marks move past them
            _keep(tiers, reader, version, [], Tally(streak=report.streak, last=report.last), config, report,
                  on_secret, step,
                  log_upto=found.log_upto, dequeued=found.skipped_queue)
        for n, batch in enumerate(groups):
            if cancel.is_set():
                break
            dones, tally = _read(reader, batch.items, known, report)
            _keep(tiers, reader, version, dones, tally, config, report, on_secret, step,
                  log_upto=batch.log_upto,
                  dequeued=batch.done_queue + (found.skipped_queue if n == 0 else []))
            report.batches += 1
            report.entries += len(batch.ids)
            if progress is not None:
                progress(len(batch.ids))
        if not found.more:
            break


def _read(reader: ModelReader | RuleReader, items: list[Item], known: str,
          report: PassReport) -> tuple[list[Done], Tally]:
    """What ``items`` teach, as the reader finds it (the rules never fail; a model may), and the counts (with
    the pass's unusable replies in a row so far)."""
    tally = Tally(streak=report.streak, last=report.last)
    if isinstance(reader, RuleReader):
        checked = check(reader.read(items), items)
        tally.rejected += len(checked.rejected)
        return [Done(items, checked)], tally
    return resolve(reader, items, known, tally), tally


def _keep(tiers: Tiers, reader: Any, version: str, dones: list[Done], tally: Tally, config: ReflectConfig,
          report: PassReport, on_secret: Callable[[], object], step: Step, **marks: Any) -> None:
    """Commit one batch's outcome with its marks; run the secret scrub after it if a secret was saved."""
    with step():
        kept = commit(tiers, dones, model=reader.model, prompt=RULES if reader.fallback else version,
                      tally=tally,
                      retry_after_s=config.retry_after_s, **marks)
    report.add(tally, kept)
    if kept.secrets:
        on_secret()


def _known(tiers: Tiers, reader: Any) -> str:
    """The facts already known, within :data:`KNOWN_SHARE` of the reader's window."""
    window = _window(reader)
    return inputs.known_facts(tiers.db, window.chars(int(window.num_ctx * KNOWN_SHARE)))


def _window(reader: Any) -> ContextWindow:
    return reader.window if isinstance(reader, ModelReader) else DEFAULT_WINDOW
