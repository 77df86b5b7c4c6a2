"""Choosing the context window: the fresh tail always, then older items newest first within the budget.

Tool results travel with the assistant message that called them: a group
(assistant with tool calls + its results) is taken whole or not at all, so
the model never sees a result without its call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

from core.errors import ValidationError, shown
from core.memory.provider import Message


@dataclass(frozen=True)
class WindowItem:
    """One candidate for the context, with its cost."""

    message: Message
    tokens: int
    is_summary: bool = False

    @property
    def is_tool_result(self) -> bool:
        return not self.is_summary and self.message.role == "tool"


def groups_newest_first(items: Iterable[WindowItem]) -> Iterator[list[WindowItem]]:
    """Yield items newest first, tool results bundled with the message before them (oldest first inside)."""
    pending: list[WindowItem] = []
    for item in items:
        if item.is_tool_result:
            pending.append(item)
            continue
        if pending and item.is_summary:
            # Results whose call was summarised away (malformed history): never send them alone.
            yield list(reversed(pending))
            pending = []
        yield [item, *reversed(pending)]
        pending = []
    if pending:
        yield list(reversed(pending))


def select(items_newest_first: Iterable[WindowItem], budget: int, fresh_tail: int) -> list[Message]:
    """The messages to send, oldest first.

    The newest groups holding ``fresh_tail`` messages are always taken (all of
    them when there are fewer); older groups follow while the total stays
    within ``budget`` tokens, stopping at the first that does not fit so the
    context has no holes.
    """
    chosen: list[list[WindowItem]] = []
    used = 0
    tail_messages = 0
    for group in groups_newest_first(items_newest_first):
        cost = sum(item.tokens for item in group)
        orphan = group[0].is_tool_result
        if tail_messages < fresh_tail:
            tail_messages += sum(1 for item in group if not item.is_summary)
        elif orphan:
            continue
        elif used + cost > budget:
            break
        chosen.append(group)
        used += cost
    return [item.message for group in reversed(chosen) for item in group]


def check_window(budget: object, fresh_tail: object) -> tuple[int, int]:
    """Return ``(budget, fresh_tail)`` if both are non-negative integers, else raise ValidationError."""
    for name, value in (("budget", budget), ("fresh_tail", fresh_tail)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValidationError(f"{name} must be a non-negative integer, got {shown(value)}")
    return budget, fresh_tail  # type: ignore[return-value]
