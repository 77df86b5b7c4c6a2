"""The team most space tests use, on whatever storage the agents home is set up for."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from core.memory.spaces import Space
from core.memory_manager import MemoryManager


@contextmanager
def research_team() -> Iterator[dict[str, MemoryManager]]:
    """A researcher (read-write), a writer (read-only) and an outsider, a ``research`` space for the first
    two."""
    agents = {name: MemoryManager(name) for name in ("researcher", "writer", "outsider")}
    Space.create("research", {"researcher": "read-write", "writer": "read-only"})
    try:
        yield agents
    finally:
        for manager in agents.values():
            manager.close()
