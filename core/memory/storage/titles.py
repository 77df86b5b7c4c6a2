"""A conversation's title: its first request, shortened; as shown, never a request that was forgotten."""

from __future__ import annotations

from typing import Any

TITLE_CHARS = 60
"""Longest conversation title."""
_USER_MESSAGES = (
    "SELECT id, content FROM ctx_messages WHERE conversation_id = ? AND role = 'user' ORDER BY seq"
)


def title_of(request: str) -> str:
    """A conversation's title made of a request: its words, at most :data:`TITLE_CHARS` characters."""
    text = " ".join(request.split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def shown_title(conn: Any, conv: int, title: str, forgotten: set[str]) -> str:
    """``title`` of conversation ``conv``, or, when it was taken from a request that was forgotten since
    (``forgotten`` holds ``msg:<id>`` ids), the next request's that was not (empty if none)."""
    requests = (r for r in conn.execute(_USER_MESSAGES, (conv,)) if r["content"].strip())
    first = next(requests, None)
    if first is None or f"msg:{first['id']}" not in forgotten or title_of(first["content"]) != title:
        return title  # not taken from a forgotten request (or set by the session's owner)
    return next((title_of(r["content"]) for r in requests if f"msg:{r['id']}" not in forgotten), "")
