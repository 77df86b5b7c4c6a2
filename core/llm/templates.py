"""Prompt templates: Markdown files shipped as package data in a package's ``prompts/`` folder.

    load_prompt("core.memory.compaction", "log_summary")   # core/memory/compaction/prompts/log_summary.md

Read with :mod:`importlib.resources`, so a prompt is found wherever the package is installed (a wheel,
a zip), never by a path relative to a module or the working folder.
"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=None)
def load_prompt(package: str, name: str) -> str:
    """The text of ``prompts/<name>.md`` in ``package`` (a dotted name, e.g. ``core.engine``), as written."""
    from importlib.resources import files  # 16 ms of imports, paid by the processes that ask a model

    return files(package).joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")


def fill(template: str, **values: str) -> str:
    """Replace ``{{key}}`` placeholders (plain replacement, in one pass: values may hold braces)."""
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values.get(m.group(1), m.group(0)), template)
