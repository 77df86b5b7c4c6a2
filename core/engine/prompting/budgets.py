"""The token budgets of one planner call, derived from the model's window.

A prompt is: the system prompt (instructions, identity), the tool definitions, the assembled
conversation (earlier turns, then this turn's messages), the memory message (the memory context
of NOW.md, the LOG.md tail and the facts) and, after it, room for the reply. With a window of
``num_ctx`` tokens:

- reply reserve: an eighth of the window, between 256 and 2,048 tokens;
- template margin: a thirty-second of the window, at least 128 (role headers and markers);
- memory context: at most ``engine.memory_tokens``, or 15% of the window between 400 and 4,000
  (the conversation gets what the memory message as built leaves of it);
- tools: what their definitions measure (the full set when the conversation keeps a quarter of the
  window beside it, else the core set);
- history: ``engine.context_budget``, or whatever the window has left.

The engine's own estimates count ``chars / 4`` (stored token counts of the
conversation and of the memory context); :func:`estimate_units` converts a
budget in the model's tokens into those units with the learned ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.config import Config, LLMConfig
from core.errors import ContextWindowTooSmallError
from core.llm import ContextWindow, tools_text

MIN_HISTORY_TOKENS = 512
"""Fewest tokens left for the conversation (the user's request and a tool result or two)."""
FULL_TOOLS_HISTORY_SHARE = 0.25
"""Share of the window the conversation must keep beside the full tool set; with less, the engine offers
the core set (:data:`core.engine.toolbox.toolbox.CORE_TOOLS`)."""
ESTIMATE_CHARS_PER_UNIT = 4
"""Characters per unit of the engine's stored estimates (``core.llm.window.estimate_tokens``)."""


@dataclass(frozen=True)
class Budgets:
    """Tokens of each part of one prompt."""

    num_ctx: int
    reply: int
    margin: int
    tools: int
    system: int
    """The system prompt without the memory context."""
    memory: int
    history: int
    """Earlier turns plus this turn's messages."""

    @property
    def fixed(self) -> int:
        """Tokens needed before any conversation."""
        return self.reply + self.margin + self.tools + self.system + self.memory


def window_of(backend: Any, config: Config) -> ContextWindow:
    """The backend's window, or one of ``llm.num_ctx`` tokens for a backend that has none."""
    window = getattr(backend, "window", None)
    if isinstance(window, ContextWindow):
        return window
    return ContextWindow(config.llm.num_ctx or LLMConfig.num_ctx)


def reply_reserve(num_ctx: int) -> int:
    return min(2048, max(256, num_ctx // 8))


def template_margin(num_ctx: int) -> int:
    return max(128, num_ctx // 32)


def memory_budget(num_ctx: int, config: Config) -> int:
    """Tokens of the memory context: the configured value, else 15% of the window within 400..4000."""
    return config.engine.memory_tokens or min(4000, max(400, int(num_ctx * 0.15)))


def tools_tokens(window: ContextWindow, tools: list[dict[str, Any]]) -> int:
    """Tokens of the tool definitions as the chat template renders them."""
    return window.tokens(tools_text(tools))


def leaves_room(budgets: Budgets) -> bool:
    """True when the conversation keeps :data:`FULL_TOOLS_HISTORY_SHARE` of the window."""
    return budgets.num_ctx - budgets.fixed >= budgets.num_ctx * FULL_TOOLS_HISTORY_SHARE


def plan(window: ContextWindow, config: Config, tools: int, system: int, model: str = "the model",
         tool_set: str = "") -> Budgets:
    """The budgets for a prompt whose system part (without memory) takes ``system`` tokens and whose
    tool definitions (``tool_set``, e.g. "the core set", named in the error) take ``tools``.

    Raises:
        ContextWindowTooSmallError: the fixed parts leave less than ``MIN_HISTORY_TOKENS`` for the
            conversation.
    """
    num_ctx = window.num_ctx
    budgets = Budgets(num_ctx=num_ctx, reply=reply_reserve(num_ctx), margin=template_margin(num_ctx),
                      tools=tools, system=system, memory=memory_budget(num_ctx, config), history=0)
    left = num_ctx - budgets.fixed
    if left < MIN_HISTORY_TOKENS:
        needed = budgets.fixed + MIN_HISTORY_TOKENS
        raise ContextWindowTooSmallError(
            f"{model}'s context window of {num_ctx} tokens is too small: the system prompt ({system}), the "
            f"tool definitions ({tools}{', ' + tool_set if tool_set else ''}), the memory context "
            f"({budgets.memory}), the reply reserve ({budgets.reply}) and the template ({budgets.margin}) "
            f"take {budgets.fixed} tokens, and at least {MIN_HISTORY_TOKENS} are needed for the "
            f"conversation: {needed} tokens in all. Use a model with a longer context, or raise llm.num_ctx "
            f"(and the model's num_ctx, e.g. PARAMETER num_ctx in its Modelfile) to at least {needed}, or "
            "lower engine.memory_tokens"
        )
    history = min(config.engine.context_budget, left) if config.engine.context_budget else left
    return Budgets(**{**budgets.__dict__, "history": history})


def estimate_units(window: ContextWindow, tokens: int) -> int:
    """``tokens`` of the model expressed in the engine's ``chars / 4`` estimate units."""
    return max(0, window.chars(tokens) // ESTIMATE_CHARS_PER_UNIT)
