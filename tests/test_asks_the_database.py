"""Code above storage asks a database its kind, never its class (core/memory/storage/protocol.py): the same
code runs on one agent's SQLite file and on its PostgreSQL schema."""

from __future__ import annotations

import ast

from tests.architecture import modules

DATABASE_CLASSES = {"Database", "SqliteDatabase", "PostgresDatabase", "Connection"}
"""The database classes (and the driver's connection class, ``sqlite3.Connection``)."""


def _named(node: ast.expr) -> set[str]:
    """The class names an isinstance's second argument names (a name, an attribute or a tuple of them)."""
    if isinstance(node, ast.Tuple):
        return set().union(*(_named(element) for element in node.elts))
    if isinstance(node, ast.Attribute):
        return {node.attr}
    return {node.id} if isinstance(node, ast.Name) else set()


def test_no_isinstance_on_a_database_class():
    """``db.kind == "sqlite"``, not ``isinstance(db, Database)`` (which was the SQLite class under another
    name)."""
    found = []
    for name, module in modules().items():
        for node in ast.walk(ast.parse(module.path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func,
                                                          ast.Name) and node.func.id == "isinstance"
                    and len(node.args) == 2 and _named(node.args[1]) & DATABASE_CLASSES):
                found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_database_annotations_name_the_protocol():
    """A ``Database`` in core is the protocol both databases answer: storage's SQLite module keeps no
    alias."""
    from core.memory.storage import Database, protocol, sqlite

    assert Database is protocol.Database
    assert not hasattr(sqlite, "Database")
    found = [f"{name}:{node.lineno}" for name, module in modules().items()
             for node in ast.walk(ast.parse(module.path.read_text(encoding="utf-8")))
             if isinstance(node, ast.ImportFrom) and node.module == "core.memory.storage.sqlite"
             and any(alias.name == "Database" for alias in node.names)]
    assert found == []
