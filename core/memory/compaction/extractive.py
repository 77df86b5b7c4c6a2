"""The deterministic summary of LOG.md entries: extractive, on the source, never empty.

It needs no model. It keeps, newest first within a budget, the entries that
matter when an agent resumes: the latest status, errors, decisions, user
feedback, saved facts and the last activity, each quoted from the source with
its seq, so the archive can be consulted for the rest.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable, Sequence

from core.durable import foreground
from core.memory.files.log_format import LogEntry

_DECISION = re.compile(
    r"\b(decid\w*|decision|chose|choose|chosen|agreed|will use|going with|switch(ed)? to|instead "
    r"of|plan(ned)? to)\b",
    re.IGNORECASE,
)
_SAVED_FACT = re.compile(r"save_fact|saved? (a )?fact|remember(ed)? that", re.IGNORECASE)
_ITEM_CHARS = 220


def _status(e: LogEntry) -> bool:
    return e.type in ("NOW_UPDATE", "RUN_START", "RUN_END", "INTERRUPTED")


def _fact(e: LogEntry) -> bool:
    return (e.type == "FACT" or e.metadata.get("tool") == "save_fact"
            or e.metadata.get("skill") == "save_fact"
            or bool(_SAVED_FACT.search(e.content)))


def _decision(e: LogEntry) -> bool:
    return e.type not in ("ERROR", "USER_FEEDBACK", "SUMMARY") and bool(_DECISION.search(e.content))


SECTIONS: tuple[tuple[str, Callable[[LogEntry], bool], int], ...] = (
    ("Latest status", _status, 3),
    ("Errors", lambda e: e.type == "ERROR", 0),
    ("User feedback", lambda e: e.type == "USER_FEEDBACK", 0),
    ("Decisions", _decision, 0),
    ("Saved facts", _fact, 0),
    ("Earlier summary", lambda e: e.type == "SUMMARY", 1),
    ("Last activity", lambda e: True, 5),
)
"""(title, selector, most items kept; 0 = as many as the budget allows)."""


def extractive_summary(entries: Sequence[LogEntry], target_tokens: int) -> str:
    """Summarise ``entries`` within about ``target_tokens`` tokens (4 characters a token)."""
    budget = max(400, target_tokens * 4)
    lines = [_headline(entries)]
    used = len(lines[0])
    taken: set[int] = set()
    for index, (title, selector, most) in enumerate(SECTIONS):
        share = (budget - used) // (len(SECTIONS) - index)
        items = _pick([e for e in foreground.paced(entries) if selector(e) and e.seq not in taken], share,
                      most)
        if not items:
            continue
        block = [f"\n{title}:"] + [_item(e) for e in items[1]]
        if items[0]:
            block.append(f"- (+{items[0]} more in the archive)")
        taken.update(e.seq for e in items[1])
        lines.extend(block)
        used += sum(len(line) + 1 for line in block)
    return "\n".join(lines)


def _headline(entries: Sequence[LogEntry]) -> str:
    if not entries:
        return "Compacted an empty stretch of the log."
    counts = Counter(e.type for e in entries)
    kinds = ", ".join(f"{n} {t}" for t, n in counts.most_common())
    return (
        f"Compacted {len(entries)} entries, seq {entries[0].seq}-{entries[-1].seq} "
        f"({entries[0].ts} to {entries[-1].ts}): {kinds}."
    )


def _pick(candidates: list[LogEntry], share: int, most: int) -> tuple[int, list[LogEntry]] | None:
    """The newest candidates that fit ``share`` characters, in log order, and how many were left out."""
    if not candidates:
        return None
    chosen: list[LogEntry] = []
    size = 0
    for entry in reversed(candidates):
        cost = len(_item(entry)) + 1
        if (most and len(chosen) >= most) or (chosen and size + cost > share):
            break
        chosen.append(entry)
        size += cost
    chosen.reverse()
    return len(candidates) - len(chosen), chosen


def _item(entry: LogEntry) -> str:
    text = " ".join(entry.content.split())
    if entry.type == "NOW_UPDATE":
        steps = entry.metadata.get("next_steps") or []
        if steps:
            text += " | next: " + "; ".join(str(s) for s in steps[:3])
    if len(text) > _ITEM_CHARS:
        text = text[: _ITEM_CHARS - 1] + "…"
    return f"- [seq {entry.seq} {entry.type}] {text}"
