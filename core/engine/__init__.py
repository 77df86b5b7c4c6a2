"""The engine: a LangGraph loop that runs one agent on its memory.

    python -m core.engine --agent finn "Research Python asyncio and create a summary"

Its public names load the graph's modules (LangGraph) on first use, so that
``python -m core.engine --help`` and the CLI's start stay quick.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Engine", "LOCAL_USER", "main"]


def __getattr__(name: str) -> Any:
    if name in ("Engine", "LOCAL_USER"):
        from core.engine import runner

        return getattr(runner, name)
    if name == "main":
        from core.engine.cli import main

        return main
    raise AttributeError(f"module 'core.engine' has no attribute {name!r}")
