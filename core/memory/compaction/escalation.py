"""Seed 001's summary escalation, shared by LOG.md compaction and the LCM provider.

The normal prompt first; if its answer is empty or longer than 150% of the
target, the aggressive prompt; if that fails too, the caller falls back to its
deterministic summary of the *source*. What a failing model means differs by
caller (LOG.md compaction goes on deterministically, LCM leaves the session
untouched), so errors of ``generate`` propagate.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable

from core.memory.tokens import estimate_tokens

log = logging.getLogger(__name__)

OVERSIZE_RATIO = 1.5
"""An answer longer than this multiple of the target escalates to the next prompt."""


def escalate(generate: Callable[[str], str], prompts: Iterable[str], target_tokens: int) -> tuple[int, str] | None:
    """Ask ``prompts`` in turn; return ``(index, answer)`` of the first usable answer, or None if none is."""
    limit = OVERSIZE_RATIO * target_tokens
    for index, prompt in enumerate(prompts):
        answer = generate(prompt)
        answer = answer.strip() if isinstance(answer, str) else ""
        if answer and estimate_tokens(answer) <= limit:
            return index, answer
        log.info("summary of %d tokens is over %d (prompt %d); escalating", estimate_tokens(answer), int(limit), index)
    return None
