"""The layout's targets hold: no import cycle, imports only downwards, small modules and folders."""

from __future__ import annotations

from collections import Counter

from tests.architecture import CORE, LAYERS, ROOT, broken_layers, cycles, imports, modules

MAX_LOOSE_AT_TOP = 8
MAX_PER_FOLDER = 15
MAX_LINES = 400


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
    """At most 8 modules loose at core/'s top level, 15 side by side in a folder, 400 lines in a module."""
    mods = modules().values()
    per_folder = Counter(m.path.parent for m in mods)
    assert len(list(CORE.glob("*.py"))) <= MAX_LOOSE_AT_TOP
    assert {str(f.relative_to(ROOT)): n for f, n in per_folder.items() if n > MAX_PER_FOLDER} == {}
    assert {m.name: m.lines for m in mods if m.lines > MAX_LINES} == {}


def test_layers_list_each_unit_once():
    units = [unit for layer in LAYERS for unit in layer]
    assert len(units) == len(set(units))


FACED = ("core.memory.files", "core.memory.recall", "core.memory.compaction", "core.memory.upkeep",
         "core.memory.secrets", "core.memory.storage", "core.memory.provider", "core.memory.spaces")
"""The memory's packages with a face (``__all__``): the names code outside them imports."""


def test_code_outside_a_memory_package_imports_its_face():
    """The applications and the other library packages name ``core.memory.recall``, not ``...recall.docs``."""
    import ast

    reaching = []
    for name, module in modules().items():
        for node in ast.walk(ast.parse(module.path.read_text(encoding="utf-8"))):
            target = node.module if isinstance(node, ast.ImportFrom) and not node.level else None
            for package in FACED:
                inside = name == package or name.startswith(package + ".")
                if target and target.startswith(package + ".") and not inside and not name.startswith("core.memory."):
                    reaching.append(f"{name}: from {target} import ...")
    assert reaching == []
