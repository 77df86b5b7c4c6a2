"""The engine's prompts, kept as Markdown files in this folder (package data)."""

from __future__ import annotations

from core.llm import load_prompt


def load(name: str) -> str:
    """The text of ``<name>.md`` in this folder, without trailing whitespace."""
    return load_prompt("core.engine", name).rstrip()
