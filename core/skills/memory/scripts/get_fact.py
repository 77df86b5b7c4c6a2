"""Skill get_fact: read back a saved fact, secrets included."""

from __future__ import annotations

from typing import Any

from core.memory.shared import shared_manager
from core.skills.base import skill_metadata


def execute(agent_name: str, key: str) -> dict[str, Any]:
    """Read a saved fact by its key."""
    manager = shared_manager(agent_name)
    fact = manager.facts.get(key)
    if fact is None:
        known = [f["key"] for f in manager.list_facts()]
        return {"key": key, "found": False, "known_keys": known}
    return {"key": key, "found": True, "value": fact.value, "category": fact.category}


SKILL_METADATA = skill_metadata(execute, name="get_fact")
