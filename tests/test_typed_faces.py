"""A type checker sees the public faces' types: mypy checks the faces (and the library's top-level modules)
and a program that uses every exported name, where a name typed ``Any`` (as a face that loads its names
through a module ``__getattr__`` alone makes them) is an error."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_exported_members import FACES

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _face_file(name: str) -> str:
    path = ROOT / name.replace(".", "/")
    return str((path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).relative_to(ROOT))


def test_mypy_sees_every_public_name_typed(tmp_path: Path) -> None:
    """Every name of every face has a type (never ``Any``), and the faces themselves type-check."""
    use = tmp_path / "uses_the_faces.py"
    lines = [f"import {name}" for name in FACES]
    lines += [f"{name}.{member}" for name in FACES for member in importlib.import_module(name).__all__]
    use.write_text("\n".join(lines) + "\n", encoding="utf-8")
    faces = [_face_file(name) for name in FACES] + ["core/memory_manager.py"]
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), *faces]
    checked = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    strict = subprocess.run([*command[:-len(faces)], "--disallow-any-expr", str(use)], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert strict.returncode == 0, strict.stdout + strict.stderr
