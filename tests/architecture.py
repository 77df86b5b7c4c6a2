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
# A unit is a package or a module; the longest unit that contains a module is its unit.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core", "core.errors", "core.memory", "core.memory.tokens", "core.memory.foreground", "core.memory.faces"),
    ("core.memory.files", "core.memory.results"),
    ("core.paths", "core.memory.secrets.redaction"),
    ("core.config", "core.memory.secrets.forgotten"),
    ("core.llm",),
    ("core.memory.storage",),
    ("core.memory.recall", "core.memory.context"),
    ("core.memory.compaction", "core.memory.spaces"),
    ("core.memory.upkeep", "core.memory.provider"),
    ("core.memory.reflection",),
    ("core.memory.secrets",),
    ("core.memory_manager",),
    ("core.memory.shared", "core.memory.agent_folder", "core.plugins"),
    ("core.skills", "core.langgraph_store", "core.transfer"),
    ("core.terminal",),
    ("core.engine",),
    ("core.mcp_server", "core.inspector"),
    ("core.commands",),
    ("core.memory_initializer", "core.__main__"),
)
EXACT = ("core", "core.memory")
"""Packages whose unit is their ``__init__`` alone: their modules belong to the units listed for them."""
LIBRARY = ("core.errors", "core.paths", "core.config", "core.llm", "core.memory", "core.memory_manager",
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
    """Each module's imports of other modules of core (``from p import m`` counts as ``p.m`` when m is a module)."""
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


def unit_of(name: str) -> str:
    """The unit of :data:`LAYERS` a module belongs to: the longest that contains it ("" if none)."""
    best = ""
    for layer in LAYERS:
        for unit in layer:
            inside = name == unit or (unit not in EXACT and name.startswith(unit + "."))
            if inside and len(unit) > len(best):
                best = unit
    return best


def layer_of(unit: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if unit in layer)


def broken_layers(graph: dict[str, set[str]]) -> list[str]:
    """Each import that goes up the layers or sideways within one (from one unit to another)."""
    broken = []
    for source, targets in sorted(graph.items()):
        here = unit_of(source)
        for target in sorted(targets):
            there = unit_of(target)
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
