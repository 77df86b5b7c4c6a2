"""Summaries of LOG.md entries for compaction, with seed 001's escalation, in pieces that fit the window.

Entries that do not fit one prompt beside the model's reply are summarised in pieces, and the
pieces' summaries merged (``prompts/log_summary_merge.md``), so no summarizer prompt is cut.
For each piece:

1. the normal prompt (``prompts/log_summary.md``);
2. if the answer is empty or longer than 150% of the target, the aggressive
   prompt (``prompts/log_summary_aggressive.md``);
3. if that fails too, or no LLM is configured or reachable, the deterministic
   extractive summary of the *source* entries (:mod:`core.memory.compaction.extractive`).

The LLM is any callable ``generate(prompt) -> str``. Each call is bounded (:class:`BoundedModel`:
a timeout, the compaction's deadline, ``<think>`` blocks removed, an answer not shorter than its
input rejected); any failure of it escalates.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import Callable, Sequence

from core.errors import SummarizerError
from core.llm import fill
from core.llm import load_prompt as load_template
from core.llm import ContextWindow
from core.memory.compaction.escalation import METHODS, OVERSIZE_RATIO, Summary, summarize_escalating
from core.memory.compaction.extractive import extractive_summary
from core.llm import BoundedModel, pack, reduce, room_chars
from core.memory.files.log_format import LogEntry
from core.llm import estimate_tokens

log = logging.getLogger(__name__)


def render_entry(entry: LogEntry) -> str:
    """One entry as the summarizer reads it: ``[seq ts TYPE] content``."""
    return f"[{entry.seq} {entry.ts} {entry.type}] {entry.content}"

Generate = Callable[[str], str]
"""An LLM backend: prompt in, text out."""

PROMPTS = ("log_summary", "log_summary_aggressive")
MERGE_PROMPT = "log_summary_merge"

__all__ = ["Generate", "LogSummarizer", "METHODS", "Summary", "load_prompt", "pack_entries", "render_prompt"]


def load_prompt(name: str) -> str:
    """The Markdown prompt ``prompts/<name>.md`` (package data)."""
    return load_template("core.memory.compaction", name)


def render_prompt(name: str, entries: Sequence[LogEntry], target_tokens: int) -> str:
    """Fill a prompt's ``{{placeholders}}`` with the entries."""
    return fill(load_prompt(name), first_seq=str(entries[0].seq if entries else 0),
                last_seq=str(entries[-1].seq if entries else 0), target_tokens=str(target_tokens),
                entries="\n".join(render_entry(e) for e in entries))


class LogSummarizer:
    """The escalating summarizer: LLM, shorter LLM, then deterministic, in pieces that fit the window."""

    def __init__(self, generate: Generate | None, target_tokens: int = 500, *,
                 window: ContextWindow | None = None, timeout_s: float = 120.0, deadline_s: float = 900.0,
                 cancel: threading.Event | None = None) -> None:
        self.generate = generate
        self.target_tokens = target_tokens
        self.window = window
        """The summarizing model's window (None: Ollama's default of 4,096 tokens is assumed)."""
        self.timeout_s = timeout_s
        self.deadline_s = deadline_s
        self.cancel = cancel
        """Set when the memory closes: a waiting model call gives up and the deterministic summary is used."""
        self.calls = 0
        """Model calls made by the last :meth:`summarize`."""
        self.failures = 0
        """Model failures (errors, time-outs, unusable or twice over-long replies) in the last
        :meth:`summarize`; after the first, its remaining pieces are summarised deterministically
        without asking the model again."""

    def summarize(self, entries: Sequence[LogEntry]) -> Summary:
        self.calls = self.failures = 0
        if self.generate is None:
            log.info("no LLM for LOG.md compaction: the deterministic summary")
            return self.deterministic(entries)
        model = BoundedModel(self.generate, self.timeout_s, self.deadline_s, self.cancel)
        room = room_chars(self.window, max(len(load_prompt(name)) for name in (*PROMPTS, MERGE_PROMPT)) + 64)
        pieces = pack_entries(entries, room)
        if len(pieces) == 1:
            return self._piece(model, pieces[0], self.target_tokens)
        log.info("LOG.md summary in %d pieces of at most %d characters (the model's window)", len(pieces),
                 room)
        partial = [self._piece(model, piece, self.target_tokens) for piece in pieces]

        def merge(text: str, round_: int) -> str:
            return self._merge(model, entries, text)

        if self.failures:
            return self.deterministic(entries)
        try:
            merged, calls = reduce([p.text for p in partial], room, merge)
        except SummarizerError as exc:
            self.failures += 1
            log.warning("merging the LOG.md summaries failed (%s): using the deterministic summary", exc)
            return self.deterministic(entries)
        methods = {p.method for p in partial}
        method = "llm" if methods <= {"llm", "llm-aggressive"} else "llm+deterministic"
        return Summary(merged, method)

    def _piece(self, model: BoundedModel, entries: Sequence[LogEntry], target: int) -> Summary:
        """One piece that fits: normal prompt, aggressive prompt, then the deterministic extract."""
        source = sum(len(render_entry(e)) + 1 for e in entries)
        target = max(50, min(target, source // 12))
        if self.failures:  # the model already failed in this compaction: do not wait on it again
            return self.deterministic(entries, target)

        def ask(prompt: str) -> str:  # an answer not shorter than the piece is over the target: it escalates
            self.calls += 1
            return model(prompt)

        prompts = (render_prompt(name, entries, target) for name in PROMPTS)  # built when asked
        made = summarize_escalating(ask, prompts, target, lambda: self.deterministic(entries, target).text,
                                    fallback_on_error=True)
        if made.method == "deterministic":  # failed, or twice over the target: counted as failing
            self.failures += 1
        else:
            log.info("LOG.md summary by %s: %d tokens", made.method, estimate_tokens(made.text))
        return made

    def _merge(self, model: BoundedModel, entries: Sequence[LogEntry], summaries: str) -> str:
        """One summary of partial summaries, escalating to half the target once."""
        for target in (self.target_tokens, max(50, self.target_tokens // 2)):
            prompt = fill(load_prompt(MERGE_PROMPT), first_seq=str(entries[0].seq),
                          last_seq=str(entries[-1].seq),
                          target_tokens=str(target), summaries=summaries)
            self.calls += 1
            answer = model(prompt)
            if estimate_tokens(answer) <= OVERSIZE_RATIO * target and len(answer) < len(summaries):
                return answer
        raise SummarizerError(f"the merged summary stayed over {self.target_tokens} tokens")

    def deterministic(self, entries: Sequence[LogEntry], target: int | None = None) -> Summary:
        """The extractive summary of the source entries."""
        return Summary(extractive_summary(entries, target or self.target_tokens), "deterministic")


def pack_entries(entries: Sequence[LogEntry], room: int) -> list[list[LogEntry]]:
    """Entries in order, in pieces whose rendering fits ``room`` characters; an entry too long alone is cut
    into parts that keep its seq, type and time."""
    parts: list[LogEntry] = []
    for entry in entries:
        rendered = len(render_entry(entry)) - len(entry.content)
        limit = max(100, room - rendered)
        if len(entry.content) <= limit:
            parts.append(entry)
            continue
        chunks = pack([entry.content], limit)
        parts.extend(replace(entry, content=chunk[0]) for chunk in chunks)
    pieces: list[list[LogEntry]] = []
    size = 0
    for entry in parts:
        cost = len(render_entry(entry)) + 1
        if pieces and size + cost <= room:
            pieces[-1].append(entry)
            size += cost
        else:
            pieces.append([entry])
            size = cost
    return pieces or [[]]
