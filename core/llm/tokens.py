"""Token estimates shared by every tier and provider."""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    """Return a rough token count: about four characters a token, at least one for non-empty text."""
    if not text:
        return 0
    return (len(text) + 3) // 4
