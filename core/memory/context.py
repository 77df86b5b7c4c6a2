"""The memory context injected into every prompt: NOW, recent LOG entries and facts."""

from __future__ import annotations

from core.memory.storage.facts import REDACTED, Fact
from core.memory.files.log_format import LogEntry
from core.memory.files.now_file import NowState
from core.llm import estimate_tokens

ENTRY_PREVIEW_CHARS = 400
FACTS_SHARE = 0.4
"""Facts may take this share of what is left after NOW; the LOG takes the rest."""


def render_now(now: NowState) -> list[str]:
    """NOW.md as prompt lines."""
    lines = [
        f"status: {now.status} (version {now.version}, updated {now.updated_at or 'never'})",
        f"objective: {now.objective or '(none)'}",
        f"current step: {now.current_step or '(none)'}",
    ]
    if now.plan:
        lines.append("plan:")
        lines += [f"- [{'x' if s.done else ' '}] {s.text}" for s in now.plan]
    if now.blockers:
        lines.append("blockers: " + "; ".join(now.blockers))
    if now.resume_hint:
        lines.append(f"resume hint: {now.resume_hint}")
    return lines


def render_entry(entry: LogEntry) -> str:
    """One LOG entry as a prompt line, its text shortened."""
    text = " ".join(entry.content.split())
    if len(text) > ENTRY_PREVIEW_CHARS:
        text = text[: ENTRY_PREVIEW_CHARS - 1] + "…"
    return f"- #{entry.seq} {entry.ts} {entry.type}: {text}"


def render_fact(fact: Fact) -> str:
    """One fact as a prompt line (one line whatever its key and value hold: a newline in them would write
    headings and lines of its own into the memory); a secret shows only that it exists."""
    key = " ".join(fact.key.split())
    if fact.category == "secret":
        return f"- {key} (secret): {REDACTED} (call get_fact to read it)"
    return f"- {key} ({fact.category}): {' '.join(fact.value.split())}"


LOG_TITLE = "## Recent activity (LOG.md, oldest first)"
FACTS_TITLE = "## Facts"


def format_context(
    agent: str, now: NowState, entries: list[LogEntry], facts: list[Fact], max_tokens: int
) -> str:
    """Return the memory context within ``max_tokens``: NOW first, then the newest LOG entries and facts."""
    head = [f"# Memory of agent {agent}", "", "## NOW (current objective and plan)", *render_now(now)]
    # The titles, placeholders and the "more facts" note are paid for up front, whether used or not,
    # so that the lines fitted below can never push the whole text over the budget.
    scaffold = ["", LOG_TITLE, "(no entries)", "", FACTS_TITLE, "(none saved)", more_facts_note(len(facts))]
    budget = max_tokens - estimate_tokens("\n".join(head + scaffold)) - 1
    if budget <= 0:
        return _clip("\n".join(head), max_tokens)
    fact_lines = fit_lines([render_fact(f) for f in facts], int(budget * FACTS_SHARE))
    budget -= sum(estimate_tokens(line) + 1 for line in fact_lines)
    log_lines = fit_newest([render_entry(e) for e in entries], budget)
    parts = head
    parts += ["", LOG_TITLE, *(log_lines or ["(no entries)"])]
    parts += ["", FACTS_TITLE, *(fact_lines or ["(none saved)"])]
    if len(fact_lines) < len(facts):
        parts.append(more_facts_note(len(facts) - len(fact_lines)))
    return "\n".join(parts)


def more_facts_note(count: int) -> str:
    return f"({count} more facts: use get_fact)"


def fit_lines(lines: list[str], budget: int) -> list[str]:
    """The leading ``lines`` that fit ``budget`` tokens together."""
    kept = []
    for line in lines:
        cost = estimate_tokens(line) + 1
        if cost > budget:
            break
        kept.append(line)
        budget -= cost
    return kept


def fit_newest(lines: list[str], budget: int) -> list[str]:
    """The trailing ``lines`` that fit ``budget`` tokens together, in their order."""
    return list(reversed(fit_lines(list(reversed(lines)), budget)))


def _clip(text: str, max_tokens: int) -> str:
    return text[: max(0, max_tokens) * 4]
