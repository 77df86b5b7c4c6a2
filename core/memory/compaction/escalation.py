"""The one summarizer contract, and seed 001's escalation behind every summary a model writes.

LOG.md compaction (:mod:`core.memory.compaction.summarizer`) and the LCM provider
(:mod:`core.plugins.memory.lcm.summarizer`) both summarise through :func:`summarize_escalating`:

1. the normal prompt;
2. if its answer is empty or longer than 150% of the target, the aggressive prompt;
3. if that fails too, the caller's deterministic summary of the *source* (never of the model's answer).

What a failing model means differs by caller: LOG.md compaction goes on deterministically
(``fallback_on_error=True``), LCM leaves the session untouched (the error propagates).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol

from core.errors import SummarizerError
from core.llm import estimate_tokens

__all__ = ["METHODS", "OVERSIZE_RATIO", "SummarizeOptions", "Summarizer", "Summary", "escalate",
           "summarize_escalating"]

log = logging.getLogger(__name__)

OVERSIZE_RATIO = 1.5
"""An answer longer than this multiple of the target escalates to the next prompt."""
METHODS = ("llm", "llm-aggressive")
"""The method of a summary by each prompt in turn; ``deterministic`` when none was usable."""


@dataclass(frozen=True)
class SummarizeOptions:
    """How a summary should be written."""

    is_condensed: bool = False
    """True when the text is a run of summaries rather than messages."""
    depth: int = 0
    aggressive: bool = False
    previous: str = ""
    """The summary just before this one, for continuity."""
    target_tokens: int = 0
    """Desired length; 0 = a third of the input."""


@dataclass(frozen=True)
class Summary:
    """A summary and how it was made."""

    text: str
    method: str
    """``llm``, ``llm-aggressive``, ``deterministic`` or ``given``."""


class Summarizer(Protocol):
    """Turns a text into a shorter one: what a conversation-memory provider is given to write its summaries
    (:class:`core.plugins.memory.lcm.LLMSummarizer`, or the model-free ``DeterministicSummarizer``)."""

    def summarize(self, text: str, options: SummarizeOptions) -> str:
        """A non-empty summary of ``text``.

        Raises:
            SummarizerError: no usable summary could be produced.
        """


def escalate(generate: Callable[[str], str], prompts: Iterable[str],
             target_tokens: int) -> tuple[int, str] | None:
    """Ask ``prompts`` in turn; return ``(index, answer)`` of the first usable answer, or None if none is."""
    limit = OVERSIZE_RATIO * target_tokens
    for index, prompt in enumerate(prompts):
        answer = generate(prompt)
        answer = answer.strip() if isinstance(answer, str) else ""
        if answer and estimate_tokens(answer) <= limit:
            return index, answer
        log.info("summary of %d tokens is over %d (prompt %d); escalating", estimate_tokens(answer),
                 int(limit), index)
    return None


def summarize_escalating(
    generate: Callable[[str], str], prompts: Iterable[str], target_tokens: int,
    deterministic: Callable[[], str], *, fallback_on_error: bool = False,
) -> Summary:
    """The first usable answer to ``prompts`` (normal, then aggressive), else ``deterministic()``.

    Args:
        generate: asks the model; raises SummarizerError when it fails.
        prompts: the normal and the aggressive prompt, built lazily if an iterator.
        target_tokens: the summary's length; an answer over 150% of it escalates.
        deterministic: the model-free summary of the source.
        fallback_on_error: a failing model gives the deterministic summary too (else its error propagates).

    Raises:
        SummarizerError: the model failed and ``fallback_on_error`` is False.
    """
    try:
        found = escalate(generate, prompts, target_tokens)
    except SummarizerError as exc:
        if not fallback_on_error:
            raise
        log.warning("LLM summary failed (%s): using the deterministic summary", exc)
        return Summary(deterministic(), "deterministic")
    if found is None:  # twice over the target: a model that will not keep to it
        log.warning("LLM summaries over %d tokens: using the deterministic summary", target_tokens)
        return Summary(deterministic(), "deterministic")
    index, text = found
    return Summary(text, METHODS[index])
