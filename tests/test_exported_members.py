"""Each public package shows one face: its ``__all__`` names every public member, sorted, and each resolves
(as httpx's tests/test_exported_members.py pins its own). A name loaded on first use is imported under
``TYPE_CHECKING`` too, so that a type checker sees its type (tests/test_typed_faces.py runs one)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

FACES = (
    "core", "core.errors", "core.paths", "core.config", "core.durable", "core.llm", "core.memory",
    "core.memory.files", "core.memory.secrets", "core.memory.storage", "core.memory.recall",
    "core.memory.compaction", "core.memory.spaces", "core.memory.upkeep", "core.memory.provider",
    "core.memory.reflection", "core.plugins.memory", "core.transfer", "core.langgraph_store", "core.terminal",
    "core.engine", "core.inspector",
)
"""The packages (and the library's top-level modules) whose names code outside them imports."""

MEMORY = [
    "CATEGORIES", "ENTRY_PREVIEW_CHARS", "READ_ONLY", "READ_WRITE", "REDACTED", "CompactionReport", "Fact",
    "Forgotten", "Handoff", "LogEntry", "MemoryManager", "MemoryReader", "NowState", "PassReport",
    "ProfileLine", "Recalled", "Redactor", "Refused", "ScanResult", "ScrubReport", "SessionHandoff", "Space",
    "StoredMemories", "check_text", "close_shared", "fit_lines", "fit_newest", "hold_lease",
    "initialize_agent_memory", "list_spaces", "more_facts_note", "open_checkpointer", "open_database",
    "open_for_reading", "render_fact", "render_now", "shared_manager", "shared_reader",
]
"""The memory's face: what a user of ``core.memory`` imports (a change here is a change of the public API)."""


def isort_order(name: str) -> tuple[int, str]:
    """The order of ``__all__`` (isort's, as ruff's RUF022 checks it): CONSTANTS, then Classes, then the
    rest."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2), name


def _source(module) -> str:
    return Path(inspect.getfile(module)).read_text(encoding="utf-8")


def _type_checking_names(module) -> set[str]:
    """The names a module imports inside ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    names = set()
    for node in ast.walk(ast.parse(_source(module))):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom):
                    names |= {alias.asname or alias.name for alias in inner.names}
    return names


@pytest.mark.parametrize("name", FACES)
def test_all_is_sorted_and_resolves(name: str) -> None:
    """``__all__`` is sorted, names each member once, and every name in it can be imported."""
    module = importlib.import_module(name)
    assert module.__all__ == sorted(set(module.__all__), key=isort_order)
    assert [member for member in module.__all__ if not hasattr(module, member)] == []


@pytest.mark.parametrize("name", FACES)
def test_all_names_every_public_member(name: str) -> None:
    """A face exports every public member it holds from its own package (its modules aside, unless exported;
    the helpers it imports from elsewhere, such as ``typing.Any``, are not its own)."""
    module = importlib.import_module(name)
    public = {member for member, value in vars(module).items()
              if not member.startswith("_") and not inspect.ismodule(value) and member != "annotations"
              and (getattr(value, "__module__", None) or name).startswith(name)}
    assert sorted(public - set(module.__all__)) == []


@pytest.mark.parametrize("name", FACES)
def test_a_name_loaded_on_first_use_keeps_its_type(name: str) -> None:
    """A name of ``__all__`` that the face does not import at once is imported under TYPE_CHECKING."""
    module = importlib.import_module(name)
    later = [member for member in module.__all__ if member not in vars(module)]
    assert sorted(set(later) - _type_checking_names(module)) == []


def test_the_memory_shows_its_public_names() -> None:
    """``core.memory``'s face is pinned: what it exports changes only on purpose."""
    import core.memory

    assert core.memory.__all__ == MEMORY


def test_the_memory_face_is_eager() -> None:
    """``core.memory`` and its packages import their names at once (no module ``__getattr__``), but for the
    storage's copies between databases, which need psycopg."""
    lazy = [name for name in FACES if name.startswith("core.memory")
            and "__getattr__" in vars(importlib.import_module(name))]
    assert lazy == ["core.memory.storage"]
    from core.memory import storage

    assert sorted(m for m in storage.__all__ if m not in vars(storage)) == ["snapshot", "to_postgres",
                                                                            "to_sqlite"]
