"""Skill get_fact: read back a saved fact, secrets included, and with ``history`` the values it held
before."""

from __future__ import annotations

from typing import Any

from core.memory import shared_reader
from core.skills.base import skill_metadata


def execute(agent_name: str, key: str, history: bool = False) -> dict[str, Any]:
    """Read a saved fact (history: with its earlier values)."""
    manager = shared_reader(agent_name)
    if history:
        return _with_history(manager, key)
    fact = manager.facts.get(key)
    if fact is None:
        return _missing(manager, key)
    return {"key": key, "found": True, "value": fact.value, "category": fact.category}


def _with_history(manager: Any, key: str) -> dict[str, Any]:
    """The fact and ``history``: its values newest first, as ``MemoryManager.get_fact(key, history=True)``
    lists them (the current one first, then each earlier one with when it was saved and replaced)."""
    versions = manager.get_fact(key, history=True)
    if not versions:
        return _missing(manager, key)
    # The reply reaches the model unredacted (it asked for this fact); other facts' secrets must not ride
    # along inside an earlier value.
    earlier = manager.facts.redactor()(versions[1:])
    current = versions[0]
    return {"key": key, "found": True, "value": current["value"], "category": current["category"],
            "history": [current, *earlier]}


def _missing(manager: Any, key: str) -> dict[str, Any]:
    return {"key": key, "found": False, "known_keys": [f["key"] for f in manager.list_facts()]}


SKILL_METADATA = skill_metadata(execute, name="get_fact")
