"""Skill save_fact: store a durable fact about the user or the task."""

from __future__ import annotations

from typing import Any, Literal

from core.memory.shared import shared_manager
from core.skills.base import skill_metadata


def execute(
    agent_name: str,
    key: str,
    value: str,
    category: Literal["general", "preference", "personal", "config", "secret"] = "general",
) -> dict[str, Any]:
    """Save a fact (name, preference, setting, credential) so it survives restarts. Save facts as soon as you learn them.

    Args:
        key: a short snake_case name, e.g. preferred_currency.
        value: the value to remember.
        category: general, preference, personal, config, or secret (API keys, passwords: never shown in prompts or logs).
    """
    fact = shared_manager(agent_name).save_fact(key, value, category)
    return {"saved": fact["key"], "category": fact["category"]}


SKILL_METADATA = skill_metadata(execute, name="save_fact")
