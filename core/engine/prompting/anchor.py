"""The start of a session's planner prompts that stays put from call to call: the earlier turns, then the
memory message after them.

A model server keeps the previous prompt's evaluated tokens (its KV cache) and evaluates a new prompt only
from the first token that differs, so a prompt that repeats the previous one and adds to its end costs only
what it adds. The engine keeps an :class:`Anchor` per session: the earlier turns that the prompt shows before
the memory message (the *settled* history) and the memory message as sent. Later calls send both again, byte
for byte, followed by the turns stored since (the *recent* ones) and their own turn, for as long as

- the conversation still holds the settled history whole (no compaction replaced it with summaries, no older
  turns had to leave the window, no secret learned since hides part of it), and
- the memory says nothing the prompt does not show: at a turn's first call NOW (its version and time aside),
the
  learned profile and the facts the memory shows are as they were, and since the previous call no fact was
  saved and no LOG.md entry written but by the engine's own runs, whose requests, tool calls and results the
  recent turns show. Within a run the memory stays as it is (the run's steps are in the prompt) unless
  something is forgotten, by anyone: what it names may stand in the memory message, which must not be sent
  again.

Otherwise the anchor is laid again: the whole earlier conversation becomes the settled history and a memory
message read fresh follows it, right before the turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.engine.prompting.memory_message import SINCE_ENTRIES, TAIL_ENTRIES, MemoryView

QUIET_TYPES = frozenset({"FACT", "NOW_UPDATE", "SUMMARY"})
"""Entries that bring no news of their own: the facts and NOW that the memory shows say what FACT and
NOW_UPDATE recorded, and a LOG.md summary condenses entries that were shown. A FORGET always is news, whoever
wrote it: what it names may stand in the memory message, which must not be sent again."""


@dataclass
class Anchor:
    """The settled history and the memory message of a session's prompts, and what the engine saw since."""

    session: str
    settled: list[dict[str, Any]]
    """The earlier turns before the memory message, as sent (secrets redacted)."""
    memory: str
    """The memory message as sent."""
    view: MemoryView
    """What that memory message says."""
    seen_seq: int = 0
    """The newest LOG.md entry at the previous call."""
    seen_facts: frozenset[str] = frozenset()
    """The facts' keys at the previous call."""
    runs: set[str] = field(default_factory=set)
    """The engine's runs since the anchor was laid: their entries are the recent turns'."""

    def start_in(self, history: list[dict[str, Any]]) -> int | None:
        """Where the settled history begins in ``history`` (None when ``history`` does not hold it whole)."""
        size = len(self.settled)
        if not size:
            return 0
        for start, message in enumerate(history[: len(history) - size + 1]):
            if message == self.settled[0] and history[start:start + size] == self.settled:
                return start
        return None

    def outdated(self, view: MemoryView, run_id: str, first_step: bool) -> str:
        """Why the memory message must be read again ("" when it still says it all): at a turn's first call
        what it says is compared, at every call whether something was forgotten."""
        self.runs.add(run_id)
        news = [e for e in view.entries if e.seq > self.seen_seq]
        if any(e.type == "FORGET" for e in news):
            return "something was forgotten"
        if not first_step:
            return ""
        if view.now != self.view.now:
            return "NOW changed"
        if view.profile != self.view.profile:
            return "the learned profile changed"
        if any(view.facts.get(key) != line for key, line in self.view.facts.items()):
            return "a fact it shows changed or was forgotten"
        if set(view.facts) - self.seen_facts:
            return "a fact was saved between turns"
        if len(news) == len(view.entries) == TAIL_ENTRIES + SINCE_ENTRIES:
            return "LOG.md has more new entries than the memory reads"
        if any(e.type not in QUIET_TYPES and _run_of(e.metadata) not in self.runs for e in news):
            return "LOG.md has entries of another writer"
        return ""

    def saw(self, view: MemoryView, last_seq: int, run_id: str) -> None:
        """Remember what this call's memory read: the next turn's first call compares with it."""
        self.seen_seq = last_seq
        self.seen_facts = frozenset(view.facts)
        self.runs.add(run_id)


def _run_of(metadata: dict[str, Any]) -> Any:
    return metadata.get("run_id") or metadata.get("now_run_id")
