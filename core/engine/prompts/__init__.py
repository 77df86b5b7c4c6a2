"""The engine's prompts, kept as Markdown files beside this module."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

FOLDER = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def load(name: str) -> str:
    """The text of ``<name>.md`` in this folder, without trailing whitespace."""
    return (FOLDER / f"{name}.md").read_text(encoding="utf-8").rstrip()
