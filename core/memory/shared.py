"""One MemoryManager per agent and process, shared by everything in the process that writes its memory.

The engine, its skills, the MCP server and the LangGraph store each call :func:`shared_manager`, so their
writes go through the same manager: one agent lock holder, one cold tier, one background compaction.
Closing it (``manager.close()``) lets it go: the next call opens the agent again, and a process that serves
many agents one after the other keeps only those not closed. What only reads (the ``recall_memory`` and
``get_fact`` skills) calls :func:`shared_reader`: the process's manager when one is open, which sees its own
writes at once, else one :class:`~core.memory.reader.MemoryReader` per agent, which writes nothing.
"""

from __future__ import annotations

import threading
from pathlib import Path

from core.memory.manager import MemoryManager
from core.memory.reader import MemoryReader
from core.paths import agents_home, existing_agent

__all__ = ["close_shared", "close_shared_managers", "shared_manager", "shared_reader"]

_managers: dict[tuple[str, str], MemoryManager] = {}
_readers: dict[tuple[str, str], MemoryReader] = {}
_managers_guard = threading.Lock()


def shared_manager(agent_name: str) -> MemoryManager:
    """The process's MemoryManager for ``agent_name`` in the current agents home (opened once).

    Raises:
        InvalidAgentNameError: the name is not a valid agent name; nothing is created.
    """
    key = (str(agents_home()), agent_name)
    with _managers_guard:
        manager = _managers.get(key)
        if manager is None:
            manager = _managers[key] = MemoryManager(agent_name)
            manager.on_close.append(lambda: _forget(key, manager))
        return manager


def shared_reader(agent_name: str) -> MemoryManager | MemoryReader:
    """What reads ``agent_name``'s memory in this process: its shared MemoryManager while one is open; else
    the process's MemoryReader of it, opened once, when it needs nothing of a writer (see
    :meth:`MemoryReader.behind <core.memory.reader.MemoryReader.behind>`); else the shared MemoryManager,
    opened now (it repairs and indexes as it opens).

    Raises:
        UnknownAgentError: no such agent (nothing is created).
    """
    key = (str(agents_home()), agent_name)
    with _managers_guard:
        found = _managers.get(key) or _readers.get(key)
    if found is not None:
        return found
    existing_agent(agent_name)
    reader = MemoryReader(agent_name)
    try:
        work = reader.behind()
    except BaseException:
        reader.close()
        raise
    if work:
        reader.close()
        return shared_manager(agent_name)
    with _managers_guard:
        found = _managers.get(key) or _readers.setdefault(key, reader)
    if found is not reader:
        reader.close()  # another thread opened one meanwhile
    return found


def _forget(key: tuple[str, str], manager: MemoryManager) -> None:
    with _managers_guard:
        if _managers.get(key) is manager:
            del _managers[key]


def close_shared(agent_name: str) -> None:
    """Close this process's shared reader and manager of ``agent_name`` in the current agents home, if open
    (the manager waits for its background work)."""
    key = (str(agents_home()), agent_name)
    with _managers_guard:
        reader, manager = _readers.pop(key, None), _managers.get(key)
    if reader is not None:
        reader.close()
    if manager is not None:
        manager.close()  # which forgets it (on_close)


def close_shared_managers(home: Path | None = None) -> int:
    """Close the process's shared managers and readers (of the agents home ``home``, or all): what a server
    that stops, or a test that ends, does so that no background thread outlives it. Return how many managers
    were closed."""
    with _managers_guard:
        chosen = [manager for (root, _), manager in _managers.items() if home is None or root == str(home)]
        readers = [key for key in _readers if home is None or key[0] == str(home)]
        closing = [_readers.pop(key) for key in readers]
    for reader in closing:
        reader.close()
    for manager in chosen:
        manager.close()  # which forgets it (on_close)
    return len(chosen)
