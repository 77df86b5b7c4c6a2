"""AgentState: what the engine's graph carries from node to node, checkpointed after each node.

The messages are those of the current turn only (the user's request, the
model's replies and the tool results); earlier turns live in the provider and
come back through ``assemble``. Everything else durable lives in the agent's
memory files; the checkpoint holds only what a killed turn needs to go on.
"""

from __future__ import annotations

from typing import Any, Optional, TypedDict


class AgentState(TypedDict, total=False):
    """The state of one turn of one agent session."""

    # -- memory system fields (seed 003) --
    memory_context: Optional[str]
    """The memory part of the last system prompt (NOW + LOG + facts), for inspection."""
    agent_name: Optional[str]
    """The agent whose memory is used; bound by the engine, never by the model."""
    auto_log_enabled: Optional[bool]
    """Log intents, tool calls, responses and errors to LOG.md automatically."""

    # -- the turn --
    task: str
    """The user's request that started the turn."""
    turn_id: str
    """Stable id of the turn; tool call ids derive from it, so a resumed turn never repeats a call."""
    session_id: str
    """The conversation session (also the checkpoint thread)."""
    messages: list[dict[str, Any]]
    """Ollama chat dicts of this turn: the user message, assistant replies, tool results."""
    pending_tool_calls: list[dict[str, Any]]
    """Tool calls of the last assistant message not yet run: ``{id, name, arguments}``."""
    steps: int
    """LLM calls made so far in this turn."""
    tool_calls_done: int
    """Tool calls executed so far in this turn."""
    retries: int
    """Recovery attempts after errors so far in this turn."""
    errors: list[str]
    """One line per error met in this turn, oldest first."""
    final_response: str
    """The answer given to the user, once the model stops calling tools."""
    outcome: str
    """``done``, ``error`` or ``step_limit`` once the turn is finalized; empty before."""
