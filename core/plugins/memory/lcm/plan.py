"""Which context items a compaction pass summarises: pure functions over the item list.

Leaf chunks are contiguous runs of messages outside the fresh tail, at least
``min_messages`` long unless cut by the token cap, never separating a tool
result from its call. Condensed groups are contiguous runs of at least two
summaries of the same depth, capped by tokens.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    """One row of ``ctx_items`` with what planning needs."""

    position: int
    message_id: int | None
    summary_id: str | None
    tokens: int
    role: str = ""
    """The message's role ("" for a summary)."""
    depth: int = -1
    """The summary's depth (-1 for a message)."""

    @property
    def is_message(self) -> bool:
        return self.message_id is not None

    @property
    def is_tool_result(self) -> bool:
        return self.role == "tool"

    @property
    def key(self) -> tuple:
        return (self.position, self.message_id, self.summary_id)


def tail_start(items: list[Item], fresh_tail: int) -> int:
    """Index of the first item of the fresh tail (``len(items)`` when the tail is empty).

    The tail holds the newest ``fresh_tail`` messages (all of them when there
    are fewer) and reaches back to the call of any tool result it starts with.
    """
    if fresh_tail <= 0:
        return len(items)
    start = len(items)
    seen = 0
    while start > 0 and seen < fresh_tail:
        start -= 1
        seen += items[start].is_message
    while 0 < start < len(items) and items[start].is_tool_result:
        start -= 1
    return start


def leaf_chunks(items: list[Item], min_messages: int, max_tokens: int) -> list[list[Item]]:
    """Chunks of contiguous messages to summarise into leaf summaries, oldest first."""
    chunks: list[list[Item]] = []
    index = 0
    while index < len(items):
        if not items[index].is_message:
            index += 1
            continue
        chunk, tokens = [], 0
        while index < len(items) and items[index].is_message:
            item = items[index]
            if chunk and tokens + item.tokens > max_tokens and not item.is_tool_result:
                break
            chunk.append(item)
            tokens += item.tokens
            index += 1
        capped = index < len(items) and items[index].is_message
        if len(chunk) >= min_messages or (capped and len(chunk) > 1):
            chunks.append(chunk)
    return chunks


def condensed_groups(items: list[Item], max_tokens: int, min_children: int = 2) -> list[list[Item]]:
    """Groups of contiguous same-depth summaries to condense, oldest first."""
    groups: list[list[Item]] = []
    index = 0
    while index < len(items):
        first = items[index]
        if first.is_message:
            index += 1
            continue
        group, tokens = [first], first.tokens
        index += 1
        while index < len(items):
            item = items[index]
            if item.is_message or item.depth != first.depth or tokens + item.tokens > max_tokens:
                break
            group.append(item)
            tokens += item.tokens
            index += 1
        if len(group) >= min_children:
            groups.append(group)
    return groups
