"""YAML as AgentOS reads it: plain data, with no alias (``*name``) and a bounded depth.

A YAML alias repeats a node by reference, so 500 bytes of nested aliases stand for millions of
values: harmless until something walks them (a message echoing the value, a copy, JSON), which then
takes minutes and gigabytes. An agent's config.yaml and NOW.md can come from elsewhere (an archive),
and none of AgentOS's own YAML needs an alias: a document that has one is refused with the line and
column of the first, before any value is built.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

MAX_DEPTH = 50
"""Deepest nesting of mappings and lists accepted (AgentOS's own files nest three deep)."""



@cache
def _loader() -> Any:
    """libyaml's C loader, ~10x faster than pure Python's. PyYAML is imported here, on first use: a process
    that reads no YAML file (a recall, with no config.yaml) does not pay for its import."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """The data of the YAML document ``text`` (None when empty), as ``yaml.safe_load`` reads it.

    Raises:
        yaml.YAMLError: invalid YAML; a ``MarkedYAMLError`` (with the line and column) for an alias or a
            nesting deeper than ``MAX_DEPTH``.
    """
    loader = _loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check(root: yaml.Node) -> None:
    """Refuse a node met twice (an alias refers to its anchor's node) or nested deeper than ``MAX_DEPTH``."""
    import yaml

    seen: set[int] = set()
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            raise yaml.composer.ComposerError(
                None, None,
                "the value anchored here (&name) is repeated by an alias (*name); AgentOS reads no "
                "alias in its files: write the value out where it is used", node.start_mark)
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"values nested more than {MAX_DEPTH} deep: AgentOS's files need no such depth",
                node.start_mark)
        if isinstance(node, yaml.MappingNode):
            stack.extend((part, depth + 1) for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in node.value)


def yaml_error_line(path: Path, exc: yaml.MarkedYAMLError) -> str:
    """One line: ``<file>:<line>:<column>: invalid YAML: <problem>; fix the file or remove it`` (from 1)."""
    mark = exc.problem_mark or exc.context_mark
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
    problem = " ".join(str(exc.problem or exc.context or "syntax error").split())
    return f"{where}: invalid YAML: {problem}; fix the file or remove it"
