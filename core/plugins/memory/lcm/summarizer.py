"""Summarizers for LCM compaction: an LLM summarizer with escalation and a deterministic extractive one.

Both meet :class:`core.memory.compaction.escalation.Summarizer`. The LLM summarizer escalates as
LOG.md compaction does (:func:`~core.memory.compaction.escalation.summarize_escalating`): a normal
prompt, an aggressive one when the answer is longer than 150% of the target, then the
deterministic extract of the *source* text, so a summary is always shorter than what it replaces.
The deterministic summarizer needs no model and is what compaction uses offline and in benchmarks.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import Callable

from core.errors import AgentOSError, SummarizerError
from core.llm import load_prompt as load_template
from core.llm import ContextWindow
from core.memory.compaction import summarize_escalating
from core.llm import map_reduce, room_chars, window_of_generate
from core.memory.provider import SummarizeOptions
from core.llm import estimate_tokens
from core.durable import background_thread

log = logging.getLogger(__name__)

LINE_CHARS = 200
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


def target_tokens(text: str, options: SummarizeOptions) -> int:
    """The summary length asked for: the option, else a third of the input."""
    return options.target_tokens or max(1, estimate_tokens(text) // 3)


def load_prompt(name: str) -> str:
    """The Markdown prompt ``prompts/<name>.md`` (package data)."""
    return load_template("core.plugins.memory.lcm", name)


def build_prompt(text: str, options: SummarizeOptions) -> str:
    """The prompt for summarising ``text`` with ``options``."""
    name = "aggressive" if options.aggressive else ("condensed" if options.is_condensed else "leaf")
    previous = load_prompt("previous").replace("{{previous}}", options.previous) if options.previous else ""
    return (
        load_prompt(name)
        .replace("{{target_tokens}}", str(target_tokens(text, options)))
        .replace("{{previous}}", previous)
        .replace("{{text}}", text)
    )


class DeterministicSummarizer:
    """An extractive summary: the first sentence of each line, evenly sampled down to the target length."""

    def summarize(self, text: str, options: SummarizeOptions) -> str:
        """A non-empty extract of ``text`` of at most about ``target_tokens`` tokens."""
        budget = target_tokens(text, options) * 4
        picks = [_first_sentence(line) for line in text.splitlines() if line.strip()]
        if not picks:
            return "(no text)"
        total = sum(len(p) + 1 for p in picks)
        if total > budget:
            keep = max(1, len(picks) * budget // total)
            step = len(picks) / keep
            omitted = len(picks) - keep
            picks = [picks[int(i * step)] for i in range(keep)]
            picks.append(f"(extract: {omitted} of {omitted + keep} lines omitted)")
        return _clip("\n".join(picks), budget)


class LLMSummarizer:
    """Summaries from a language model, escalating normal -> aggressive -> deterministic.

    A text whose prompt would not fit the model's window is summarised in pieces that do, and the
    pieces' summaries are then summarised together (:mod:`core.llm.fitting`).
    """

    def __init__(self, generate: Callable[[str], str], fallback: DeterministicSummarizer | None = None,
                 window: ContextWindow | None = None) -> None:
        """``generate(prompt) -> text`` calls the model (any backend); ``window`` is its window (by default
        the window of the backend behind ``generate``, else Ollama's default)."""
        self.generate = generate
        self.fallback = fallback or DeterministicSummarizer()
        self.window = window

    def summarize(self, text: str, options: SummarizeOptions) -> str:
        """A summary no longer than 150% of the target.

        Raises:
            SummarizerError: the model failed or answered with nothing.
        """
        window = self.window or window_of_generate(self.generate)
        room = room_chars(window, len(build_prompt("", replace(options, aggressive=True))) + 32)
        if len(text) <= room:
            return self._escalated(text, options)
        target = target_tokens(text, options)

        def piece(part: str, index: int) -> str:
            share = max(1, target * len(part) // max(1, len(text)))
            return self._escalated(part,
                                   replace(options, target_tokens=max(share, estimate_tokens(part) // 6)))

        def merge(summaries: str, round_: int) -> str:
            return self._escalated(summaries,
                                   replace(options, is_condensed=True, previous="", target_tokens=target))

        summary, calls = map_reduce(text.splitlines(), room, piece, merge)
        log.info("summary of %d characters in pieces of %d: %d model calls", len(text), room, calls)
        return summary

    def _escalated(self, text: str, options: SummarizeOptions) -> str:
        prompts = [build_prompt(text, replace(options, aggressive=aggressive))
                   for aggressive in (False, True)]
        return summarize_escalating(self._ask, prompts, target_tokens(text, options),
                                    lambda: self.fallback.summarize(text, options)).text

    def _ask(self, prompt: str) -> str:
        try:
            answer = self.generate(prompt)
        except AgentOSError as exc:
            raise SummarizerError(f"the summarizer's model failed: {exc}") from exc
        if not isinstance(answer, str):
            raise SummarizerError(f"the summarizer's model returned {type(answer).__name__}, not text")
        answer = _THINK.sub("", answer).strip()
        if not answer:
            raise SummarizerError("the summarizer's model returned an empty answer")
        return answer


def call_with_timeout(summarizer, text: str, options: SummarizeOptions, timeout_s: float) -> str:
    """Run ``summarizer.summarize`` in a worker thread and check its answer.

    A daemon thread is used because a hung model call cannot be cancelled;
    its late answer is discarded.

    Raises:
        SummarizerError: it raised, timed out, or returned something that is not a usable summary.
    """
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = summarizer.summarize(text, options)
        except BaseException as exc:  # handed to the caller below, never swallowed
            outcome["error"] = exc

    worker = background_thread(run, name="lcm-summarizer")
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise SummarizerError(f"the summarizer did not answer within {timeout_s:g}s")
    if "error" in outcome:
        error = outcome["error"]
        if isinstance(error, SummarizerError):
            raise error
        raise SummarizerError(f"the summarizer failed: {type(error).__name__}: {error}") from error
    return check_summary(outcome.get("value"), text)


def check_summary(summary: object, source: str) -> str:
    """Return ``summary`` stripped if it is non-empty text shorter than ``source``, else raise
    SummarizerError."""
    if not isinstance(summary, str):
        raise SummarizerError(f"the summarizer returned {type(summary).__name__}, not text")
    summary = summary.strip()
    if not summary:
        raise SummarizerError("the summarizer returned an empty summary")
    try:
        summary.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SummarizerError(f"the summarizer returned invalid text: {exc}") from exc
    if estimate_tokens(summary) >= estimate_tokens(source):
        raise SummarizerError(
            f"the summary ({estimate_tokens(summary)} tokens) is not shorter than its source "
            f"({estimate_tokens(source)} tokens)"
        )
    return summary


def _first_sentence(line: str) -> str:
    line = " ".join(line.split())
    match = _SENTENCE_END.search(line)
    sentence = line[: match.end()].strip() if match else line
    return _clip(sentence, LINE_CHARS)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: max(1, limit - 1)]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut + "…"
