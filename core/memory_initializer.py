"""Create an agent's folders and memory stack, and say what was created.

    python -m core.memory_initializer --agent finn [--show]    # the same as: agentos init --agent finn

Idempotent: a second run creates nothing and says so. ``--show`` prints the
agent's memory as the model sees it.
"""

from __future__ import annotations

import sys

from core.memory.agent_folder import AGENT_TEMPLATE, initialize_agent_memory, report

__all__ = ["AGENT_TEMPLATE", "initialize_agent_memory", "main", "report"]


def main(argv: list[str] | None = None) -> int:
    """``python -m core.memory_initializer``: the same as ``agentos init``."""
    from core.commands import main as agentos

    return agentos(["init", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
