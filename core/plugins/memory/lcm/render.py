"""How stored messages and summaries are shown to a summarizer and to the model."""

from __future__ import annotations

from typing import Any

from core.memory.secrets import FORGOTTEN
from core.memory.provider import Message
from core.plugins.memory.store import message_from_row


def render_summary(summary_id: str, kind: str, depth: int, descendants: int,
                   earliest_at: str, latest_at: str, content: str) -> str:
    """A summary as the model sees it in context: it names its id so the model can expand it."""
    return (
        f"[summary {summary_id} · {kind}, depth {depth}, {descendants} messages, {earliest_at} to "
        f"{latest_at}; call the memory tool with action=expand id={summary_id} for the details]\n{content}"
    )


def summary_message(row) -> Message:
    """A ``ctx_summaries`` row (or a dict of its columns) as an assembled context message."""
    text = render_summary(row["id"], row["kind"], row["depth"], row["descendant_count"],
                          row["earliest_at"], row["latest_at"], row["content"])
    return Message(role="user", content=text, created_at=row["latest_at"], summary_id=row["id"])


FORGOTTEN_LINE = FORGOTTEN
"""What a summarizer reads in place of a message or summary the user had forgotten."""


def render_message_line(row: Any) -> str:
    """A ``ctx_messages`` row as one block of summarizer input."""
    message = message_from_row(row)
    who = f"tool {message.tool_name}" if message.role == "tool" and message.tool_name else message.role
    return f"[{row['created_at']} {who}] {message.text()}"


def render_summary_line(row: Any) -> str:
    """A ``ctx_summaries`` row as one block of condensed-summary input."""
    return (
        f"[{row['earliest_at']} to {row['latest_at']}, {row['descendant_count']} messages] {row['content']}"
    )
