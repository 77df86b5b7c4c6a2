"""Skill update_status: rewrite NOW.md with what the agent is doing and what comes next."""

from __future__ import annotations

from typing import Any, Literal

from core.memory.shared import shared_manager
from core.skills.base import skill_metadata


def execute(
    agent_name: str,
    new_status: str,
    next_steps: list[str] | None = None,
    done_steps: list[str] | None = None,
    objective: str | None = None,
    state: Literal["active", "blocked", "error", "done"] | None = None,
) -> dict[str, Any]:
    """Update NOW.md, your current status and plan. Call it whenever the objective changes or a step is finished.

    Args:
        new_status: what you are doing right now, in one line.
        next_steps: the remaining steps of the plan, in order (replaces the open steps).
        done_steps: steps you have just finished (they are ticked off the plan).
        objective: the overall objective, when it changes.
        state: lifecycle state; defaults to active.
    """
    now = shared_manager(agent_name).update_now(
        new_status, next_steps, done_steps=done_steps, objective=objective, state=state
    )
    return {key: now[key] for key in ("status", "objective", "current_step", "plan", "version")}


SKILL_METADATA = skill_metadata(execute, name="update_status")
