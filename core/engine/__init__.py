"""The engine: a LangGraph loop that runs one agent on its memory.

    python -m core.engine --agent finn "Research Python asyncio and create a summary"

Its public names load the graph's modules (LangGraph) on first use, so that
``python -m core.engine --help`` and the CLI's start stay quick; a type checker sees them as usual.
"""

from __future__ import annotations

import typing

if typing.TYPE_CHECKING:
    from core.engine.cli import main
    from core.engine.runner import LOCAL_USER, Engine

__all__ = ["LOCAL_USER", "Engine", "main"]


def __getattr__(name: str) -> typing.Any:
    if name in ("Engine", "LOCAL_USER"):
        from core.engine import runner

        return getattr(runner, name)
    if name == "main":
        from core.engine.cli import main

        return main
    raise AttributeError(f"module 'core.engine' has no attribute {name!r}")
