"""What the nodes share during one run: memory, backend, tools, conversation, config."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from core.config import Config
from core.engine.conversation import Conversation
from core.llm import Backend
from core.memory import MemoryManager
from core.engine.prompting.system_prompt import Identity
from core.engine.toolbox.toolbox import Toolbox

SCAN_ENTRIES = 400
"""How far back in LOG.md a node looks for what it already did."""
RESULT_PREVIEW_CHARS = 2000



@dataclass
class Runtime:
    """Everything a node needs besides the state; rebuilt by each process, never checkpointed."""

    manager: MemoryManager
    backend: Backend
    toolbox: Toolbox
    conversation: Conversation
    config: Config
    identity: Callable[[], Identity] = Identity
    """Reads soul, constraints and profile fresh (they may change between calls)."""
    run_id: str = ""
    """The current process's run (RUN_START ... RUN_END)."""
    resumed: bool = False
    """True when this run continues a turn from its checkpoint."""
    notes: list[str] = field(default_factory=list)
    """Extra system prompt sections for this run (e.g. a compaction warning)."""
    stale_blockers: list[str] = field(default_factory=list)
    """NOW.md blockers that the next model reply shows are gone: those an earlier run left, and this
    run's failed model calls (see :func:`core.engine.nodes.planner.planner`)."""
    cut_replies: list[int | None] = field(default_factory=list)
    """The generated tokens (None: not reported) of each reply of this run that stopped at the token limit,
    for :func:`cut_warning`."""
    context: Any = None
    """The session's :class:`core.engine.prompting.context_builder.ContextBuilder` (set by the engine)."""
    on_text: Any = None
    """A :class:`core.terminal.reply_display.ReplyDisplay` (or any text sink with ``end_reply()``) that shows
    the model's reply as it streams; None when nobody watches."""

    def log(self, entry_type: str, content: Any, **meta: Any) -> int:
        """Append to LOG.md as the system, with the run id in the metadata (the engine finds its own entries
        by it)."""
        return self.manager.append_system(entry_type, content, {"run_id": self.run_id, **meta})

    def logged(self, entry_type: str, key: str) -> dict[Any, dict[str, Any]]:
        """Recent LOG entries of ``entry_type`` by their metadata ``key`` (the newest wins), in one read."""
        return {e["metadata"].get(key): e for e in self.manager.read_log(SCAN_ENTRIES)
                if e["type"] == entry_type}

    def find_logged(self, entry_type: str, key: str, value: str) -> dict[str, Any] | None:
        """The newest recent LOG entry of ``entry_type`` whose metadata ``key`` equals ``value``."""
        return self.logged(entry_type, key).get(value)


_CONTINUE = re.compile(r"^\s*(continue|resume|go on|carry on|keep going)\b[\s.!]*$", re.IGNORECASE)


_STATUS = re.compile(r"^\s*(status|what are you doing|where are we)\b[\s.?!]*$", re.IGNORECASE)


def is_continue(task: str) -> bool:
    """True if the user only asks to continue the interrupted objective."""
    return bool(_CONTINUE.match(task))


def is_status(task: str) -> bool:
    """True if the user only asks where the agent stands: NOW.md is read, not changed."""
    return bool(_STATUS.match(task))


def keeps_objective(task: str) -> bool:
    """True for requests about the current objective ("continue", "status") that must not replace it."""
    return is_continue(task) or bool(_STATUS.match(task))


def to_json(value: Any) -> str:
    """A tool result as the JSON text sent back to the model."""
    return json.dumps(value, ensure_ascii=False, default=str)


def preview(text: str, limit: int = RESULT_PREVIEW_CHARS) -> str:
    """``text`` shortened for the log."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def cut_warning(rt: Runtime) -> str:
    """One line telling the user that replies of this run were cut, and what to raise; empty when none was."""
    if not rt.cut_replies:
        return ""
    limit = getattr(rt.backend, "max_reply_tokens", None)
    replies = "reply" if len(rt.cut_replies) == 1 else f"{len(rt.cut_replies)} replies"
    if isinstance(limit, int) and any(tokens is None or tokens >= limit for tokens in rt.cut_replies):
        return (f"the model's {replies} stopped at llm.max_reply_tokens ({limit:,} tokens): raise "
                "llm.max_reply_tokens in config.yaml for longer replies")
    return (f"the model's {replies} stopped at the token limit of the window or the server: raise "
            "llm.num_ctx (and the server's window), or the server's own limit (llama-server --n-predict)")
