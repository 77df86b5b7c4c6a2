"""Skill update_status: rewrite NOW.md with what the agent is doing and what comes next."""

from __future__ import annotations

from typing import Any, Literal

from core.memory import shared_manager
from core.skills.base import skill_metadata


def execute(
    agent_name: str,
    new_status: str,
    next_steps: list[str] | None = None,
    done_steps: list[str] | None = None,
    objective: str | None = None,
    state: Literal["active", "blocked", "error", "done"] | None = None,
) -> dict[str, Any]:
    """Update NOW.md (your status and plan) when the objective changes or a step is done.

    Args:
        new_status: what you are doing now, one line.
        next_steps: the open steps in order (replaces them).
    """
    now = shared_manager(agent_name).update_now(
        new_status, next_steps, done_steps=done_steps, objective=objective, state=state
    )
    return {key: now[key] for key in ("status", "objective", "current_step", "plan", "version")}


SKILL_METADATA = skill_metadata(execute, name="update_status")
