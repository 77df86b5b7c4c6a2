"""Skill save_fact: store a durable fact about the user or the task."""

from __future__ import annotations

from typing import Any, Literal

from core.memory import shared_manager
from core.skills.base import skill_metadata


def execute(
    agent_name: str,
    key: str,
    value: str,
    category: Literal["general", "preference", "personal", "config", "secret"] = "general",
) -> dict[str, Any]:
    """Save a fact about the user or the task at once; category secret for credentials.

    Args:
        key: snake_case, e.g. preferred_currency.
    """
    fact = shared_manager(agent_name).save_fact(key, value, category)
    return {"saved": fact["key"], "category": fact["category"]}


SKILL_METADATA = skill_metadata(execute, name="save_fact")
