"""The layout's targets hold: no import cycle, imports only downwards, small modules and folders."""

from __future__ import annotations

from collections import Counter

from tests.architecture import CORE, LAYERS, ROOT, broken_layers, cycles, imports, modules

MAX_LOOSE_AT_TOP = 8
MAX_PER_FOLDER = 15
MAX_LINES = 450
"""A module holds one concern, sized by it (about 400 lines, docs/architecture.md); past this bound it holds
two."""


def test_no_import_cycles():
    """No module of core reaches itself through imports (every import statement counts, lazy ones too)."""
    assert cycles(imports()) == []


def test_imports_only_go_down_the_layers():
    """A module imports only its own unit or the units in the layers below it (docs/architecture.md)."""
    assert broken_layers(imports()) == []


def test_every_module_belongs_to_a_layer():
    """Adding a package means placing it in LAYERS, so the diagram stays whole."""
    from tests.architecture import unit_of

    assert [name for name in modules() if not unit_of(name)] == []


def test_small_folders_and_modules():
    """At most 8 modules loose at core/'s top level, 15 side by side in a folder, 450 lines in a module."""
    mods = modules().values()
    per_folder = Counter(m.path.parent for m in mods)
    assert len(list(CORE.glob("*.py"))) <= MAX_LOOSE_AT_TOP
    assert {str(f.relative_to(ROOT)): n for f, n in per_folder.items() if n > MAX_PER_FOLDER} == {}
    assert {m.name: m.lines for m in mods if m.lines > MAX_LINES} == {}


def test_layers_list_each_unit_once():
    units = [unit for layer in LAYERS for unit in layer]
    assert len(units) == len(set(units))


def test_each_unit_is_a_folder():
    """A layer lists folders (and the modules directly in core/, each a unit of its own), never a module
    inside a package: a module whose place differs from its folder's moves to a folder of that place."""
    mods = modules()
    assert [unit for layer in LAYERS for unit in layer
            if unit not in mods or not (mods[unit].is_package or unit.count(".") == 1)] == []


FACED = ("core.durable", "core.llm")
"""Packages whose face (``__all__``) is what every module outside them imports."""
MEMORY_FACED = ("core.memory.files", "core.memory.recall", "core.memory.compaction", "core.memory.upkeep",
                "core.memory.secrets", "core.memory.storage", "core.memory.provider", "core.memory.spaces",
                "core.memory.reflection")
"""The memory's packages: code outside the memory imports their faces (the memory's own packages import
each other's modules)."""


def _reaching(packages: tuple[str, ...], exempt) -> list[str]:
    import ast

    reaching = []
    for name, module in modules().items():
        for node in ast.walk(ast.parse(module.path.read_text(encoding="utf-8"))):
            target = node.module if isinstance(node, ast.ImportFrom) and not node.level else None
            for package in packages:
                inside = name == package or name.startswith(package + ".")
                if target and target.startswith(package + ".") and not inside and not exempt(name):
                    reaching.append(f"{name}: from {target} import ...")
    return reaching


def test_code_outside_a_faced_package_imports_its_face():
    """Everything outside core.durable and core.llm names ``core.llm``, not ``core.llm.window``."""
    assert _reaching(FACED, lambda name: False) == []


def test_code_outside_a_memory_package_imports_its_face():
    """The applications and the other library packages name ``core.memory.recall``, not ``...recall.docs``."""
    assert _reaching(MEMORY_FACED, lambda name: name.startswith("core.memory.")) == []


ENGINE_MEMORY_FACES = ("core.memory", "core.memory.provider")
"""What the engine may import of the memory: the memory's face (the manager, the reader and what their methods
take and return) and the conversation providers' contract, which the engine hosts (the manager does not stand
between the engine and a provider)."""


def test_the_engine_imports_only_the_memorys_faces():
    """core.engine (and core/engine.py) name ``core.memory`` and ``core.memory.provider``, never one of the
    memory's other packages or modules: what the engine needs of the memory goes through its face."""
    engine = {name: module for name, module in modules().items()
              if name == "core.engine" or name.startswith("core.engine.")}
    reaching = sorted(f"{name}: {target}" for name in engine for target in imports()[name]
                      if (target == "core.memory" or target.startswith("core.memory."))
                      and target not in ENGINE_MEMORY_FACES)
    assert reaching == []


def test_the_documented_module_count_is_the_trees():
    """docs/architecture.md's figures table says how many modules core and the tests have: the counts of the
    tree, not a memory."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented = int(re.search(r"^\| modules \| (\d+) \|", text, re.M)[1])
    assert documented == len(modules()), f"write {len(modules())} in docs/architecture.md's '| modules |' row"
    test_files = len(list((ROOT / "tests").rglob("test_*.py")))
    documented = int(re.search(r"^\| test modules \| (\d+) \|", text, re.M)[1])
    assert documented == test_files, f"write {test_files} in docs/architecture.md's '| test modules |' row"
