"""A model's context window: how many tokens one request may hold, and how text is counted (the rough
estimate shared by every tier and provider, :func:`estimate_tokens`, and a window's learned ratio).

The window is chosen per model (see :mod:`core.llm.served`: each server is asked its own way); every budget of
the engine and of the summarizers is derived from it. ``chars_per_token`` starts at four and is
refined from what the server reports it really counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

DEFAULT_CHARS_PER_TOKEN = 4.0


@dataclass
class ContextWindow:
    """The token window of one model."""

    num_ctx: int
    """Tokens the model is run with (sent as ``options.num_ctx`` on every call)."""
    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN
    """Characters per token for this model's tokenizer (learned from ``prompt_eval_count``)."""

    def tokens(self, text: str) -> int:
        """Estimated tokens of ``text``: at least one for non-empty text."""
        if not text:
            return 0
        return max(1, int(len(text) / self.chars_per_token + 0.999))

    def chars(self, tokens: int) -> int:
        """How many characters of text fit in ``tokens`` tokens."""
        return max(0, int(tokens * self.chars_per_token))


def tools_text(tools: list[dict[str, Any]]) -> str:
    """Tool definitions as Ollama's chat templates render them: compact JSON (Go's ``json.Marshal``)."""
    return json.dumps(tools, ensure_ascii=False, separators=(",", ":")) if tools else ""


def estimate_tokens(text: str) -> int:
    """Return a rough token count: about four characters a token, at least one for non-empty text."""
    if not text:
        return 0
    return (len(text) + 3) // 4
