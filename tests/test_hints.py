"""Every message names a command a pip user has: ``agentos ...``, never a script of the checkout
(``python scripts/rebuild_index.py``) or a module run by its path (``python -m core.engine --resume``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKOUT_ONLY = re.compile(r"python3?\s+(?:-m\s+core\b|scripts/)|\bscripts/\w+\.py")
"""A command that only a checkout has, or one that another name runs for a pip user."""
PROG = re.compile(r"python -m core(?:\.\w+)?")
"""A command line's own name (``prog``), shown in its usage by the command the user ran."""


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are docstrings (of modules, classes, functions, and data)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for n, statement in enumerate(body):
            first = n == 0 and isinstance(node,
                                          (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            after_assignment = n > 0 and isinstance(body[n - 1], (ast.Assign, ast.AnnAssign))
            if (first or after_assignment) and isinstance(statement, ast.Expr) and isinstance(
                    statement.value, ast.Constant) and isinstance(statement.value.value, str):
                found.add(id(statement.value))
    return found


def _message_texts(source: str) -> list[tuple[int, str]]:
    """The strings of a module's source that can reach a user (docstrings aside): constants, and f-strings
    whole (their fields as ``{}``)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    texts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            texts.append((node.lineno,
                          "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)))
            skip.update(id(v) for v in node.values)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            texts.append((node.lineno, node.value))
    return texts


def test_messages_name_commands_a_pip_user_has():
    """No message, hint or help text of core (nor a prompt) names a checkout's script or `python -m core...`
    with arguments: resume hints say `agentos run --agent NAME --resume`, re-index hints `agentos
    rebuild-index --agent NAME`."""
    wrong = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        for line, text in _message_texts(path.read_text(encoding="utf-8")):
            if CHECKOUT_ONLY.search(text) and not PROG.fullmatch(text.strip()):
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {text.strip()[:100]}")
    for path in sorted((ROOT / "core").rglob("*.md")):
        for line, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if CHECKOUT_ONLY.search(text):
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {text.strip()[:100]}")
    assert wrong == []


def test_the_scan_finds_a_checkout_command():
    """The scan above sees a hint in an f-string and a constant, and leaves docstrings and a prog name
    alone."""
    source = ('"""Run python scripts/x.py."""\n'
              'HINT = f"re-index it with: python scripts/rebuild_index.py --agent {name}"\n'
              'RESUME = "Run: python -m core.engine --agent finn --resume"\n'
              'PROG = "python -m core.engine"\n')
    found = [t for _, t in _message_texts(source)
             if CHECKOUT_ONLY.search(t) and not PROG.fullmatch(t.strip())]
    assert found == ["re-index it with: python scripts/rebuild_index.py --agent {}",
                     "Run: python -m core.engine --agent finn --resume"]
