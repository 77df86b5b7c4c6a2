"""Summaries of LOG.md entries for compaction, with seed 001's escalation.

1. the normal prompt (``prompts/log_summary.md``);
2. if the answer is empty or longer than 150% of the target, the aggressive
   prompt (``prompts/log_summary_aggressive.md``);
3. if that fails too, or no LLM is configured or reachable, the deterministic
   extractive summary of the *source* entries (:mod:`core.memory.extractive`).

The LLM is any callable ``generate(prompt) -> str``; it signals failure by
raising :class:`BackendError` (or :class:`SummarizerError`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

from core.errors import BackendError, SummarizerError
from core.memory.cold_index import render_entry
from core.memory.escalation import escalate
from core.memory.extractive import extractive_summary
from core.memory.log_format import LogEntry
from core.memory.tokens import estimate_tokens

log = logging.getLogger(__name__)

Generate = Callable[[str], str]
"""An LLM backend: prompt in, text out."""

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
PROMPTS = ("log_summary", "log_summary_aggressive")
METHODS = ("llm", "llm-aggressive")


@dataclass(frozen=True)
class Summary:
    """A summary and how it was made."""

    text: str
    method: str
    """``llm``, ``llm-aggressive``, ``deterministic`` or ``given``."""


class Summarizer(Protocol):
    """Turns LOG.md entries into one summary text."""

    def summarize(self, entries: Sequence[LogEntry]) -> Summary:
        """Return a non-empty summary of ``entries``."""


def load_prompt(name: str) -> str:
    """The Markdown prompt ``prompts/<name>.md``."""
    return (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8")


def render_prompt(name: str, entries: Sequence[LogEntry], target_tokens: int) -> str:
    """Fill a prompt's ``{{placeholders}}`` (plain replacement: entries may hold braces)."""
    values = {
        "first_seq": str(entries[0].seq if entries else 0),
        "last_seq": str(entries[-1].seq if entries else 0),
        "target_tokens": str(target_tokens),
        "entries": "\n".join(render_entry(e) for e in entries),
    }
    text = load_prompt(name)
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


class LogSummarizer:
    """The escalating summarizer: LLM, shorter LLM, then deterministic."""

    def __init__(self, generate: Generate | None, target_tokens: int = 500) -> None:
        self.generate = generate
        self.target_tokens = target_tokens

    def summarize(self, entries: Sequence[LogEntry]) -> Summary:
        if self.generate is None:
            log.warning("no LLM backend for LOG.md compaction: using the deterministic summary")
            return self.deterministic(entries)
        prompts = (render_prompt(name, entries, self.target_tokens) for name in PROMPTS)  # built when asked
        try:
            found = escalate(self.generate, prompts, self.target_tokens)
        except (BackendError, SummarizerError) as exc:
            log.warning("LLM summary failed (%s): using the deterministic summary", exc)
            return self.deterministic(entries)
        if found is None:
            log.warning("LLM summaries over %d tokens: using the deterministic summary", self.target_tokens)
            return self.deterministic(entries)
        index, text = found
        log.info("LOG.md summary by %s: %d tokens", METHODS[index], estimate_tokens(text))
        return Summary(text, METHODS[index])

    def deterministic(self, entries: Sequence[LogEntry]) -> Summary:
        """The extractive summary of the source entries."""
        return Summary(extractive_summary(entries, self.target_tokens), "deterministic")
