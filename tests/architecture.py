"""The layout's rules and figures, read from the code's own import statements.

    python -m tests.architecture        # the figures docs/architecture.md shows

Every ``import`` and ``from ... import`` in ``core`` counts: those in function
bodies and ``TYPE_CHECKING`` blocks too, since each is a dependency a reader
must follow.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core"

# Who may import whom: the units of core in layers, lowest first. A module may import its own
# unit and the units of lower layers, never a higher one; units of one layer do not import each other.
# A unit is a folder: a module belongs to the nearest folder holding it that is listed here (so a
# sub-package belongs to its package unless listed itself), and a module directly in core/ is a unit
# of its own. A module is never listed alone: where one belongs elsewhere, it moves.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core", "core.errors"),
    ("core.durable",),
    ("core.paths",),
    ("core.config",),
    ("core.llm",),
    ("core.memory.files",),
    ("core.memory.secrets",),
    ("core.memory.storage",),
    ("core.memory.recall",),
    ("core.memory.compaction", "core.memory.spaces"),
    ("core.memory.upkeep", "core.memory.provider"),
    ("core.memory.reflection",),
    ("core.memory",),
    ("core.memory_manager", "core.plugins"),
    ("core.skills", "core.langgraph_store", "core.transfer"),
    ("core.terminal",),
    ("core.engine",),
    ("core.mcp_server", "core.inspector"),
    ("core.commands",),
    ("core.memory_initializer", "core.__main__"),
)
UNITS = {unit for layer in LAYERS for unit in layer}
LIBRARY = ("core.errors", "core.durable", "core.paths", "core.config", "core.llm", "core.memory",
           "core.memory_manager",
           "core.plugins", "core.skills", "core.langgraph_store", "core.transfer")
APPLICATIONS = ("core.engine", "core.commands", "core.mcp_server", "core.inspector", "core.terminal",
                "core.memory_initializer", "core.__main__")


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool

    @property
    def lines(self) -> int:
        return len(self.path.read_text(encoding="utf-8").splitlines())


def modules() -> dict[str, Module]:
    """Every module of core by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in sorted(CORE.rglob("*.py")):
        if (path.with_suffix("") / "__init__.py").exists():
            continue  # a script beside the package of its name (core/engine.py), run only by its path
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


def imports(mods: dict[str, Module] | None = None) -> dict[str, set[str]]:
    """Each module's imports of other modules of core (``from p import m`` counts as ``p.m`` when m is a
    module)."""
    mods = mods or modules()

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, module in mods.items():
        package = name if module.is_package else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(module.path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(owner(a.name) for a in node.names if a.name.split(".")[0] == "core")
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                if base.split(".")[0] != "core":
                    continue
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in mods else owner(base))
        targets.discard(None)
        targets.discard(name)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def folder_of(name: str, mods: dict[str, Module] | None = None) -> str:
    """The folder (package) that holds a module, by dotted name; a module directly in core/ is its own."""
    module = (mods or _modules())[name]
    if module.is_package:
        return name
    parent = name.rpartition(".")[0]
    return name if parent == "core" else parent


def unit_of(name: str, mods: dict[str, Module] | None = None) -> str:
    """The unit of :data:`LAYERS` a module belongs to: the nearest listed folder that holds it ("" if
    none)."""
    folder = folder_of(name, mods)
    while folder and folder not in UNITS:
        folder = folder.rpartition(".")[0]
        if folder == "core":
            return ""
    return folder


_cache: dict[str, Module] = {}


def _modules() -> dict[str, Module]:
    if not _cache:
        _cache.update(modules())
    return _cache


def layer_of(unit: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if unit in layer)


def broken_layers(graph: dict[str, set[str]]) -> list[str]:
    """Each import that goes up the layers or sideways within one (from one unit to another)."""
    broken = []
    mods = modules()
    for source, targets in sorted(graph.items()):
        here = unit_of(source, mods)
        for target in sorted(targets):
            there = unit_of(target, mods)
            if here and there and there != here and layer_of(there) >= layer_of(here):
                broken.append(f"{source} imports {target} ({here} is not above {there})")
    return broken


def figures() -> dict[str, object]:
    """The layout's measured figures, beside the targets docs/architecture.md names."""
    mods = modules()
    graph = imports(mods)
    files = [m for m in mods.values()]
    per_folder = Counter(m.path.parent for m in files)
    biggest = max(files, key=lambda m: m.lines)
    return {
        "modules": len(files),
        "import cycles": len(cycles(graph)),
        "modules loose at core/'s top level": len(list(CORE.glob("*.py"))),
        "most modules in one folder": max(per_folder.values()),
        "folder with the most": str(max(per_folder, key=per_folder.get).relative_to(ROOT)),
        "longest module (lines)": biggest.lines,
        "longest module": biggest.name,
        "imports against the layers": len(broken_layers(graph)),
    }


if __name__ == "__main__":
    for key, value in figures().items():
        print(f"{key:40} {value}")
