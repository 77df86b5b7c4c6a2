"""Session compaction (seed 002): on demand (``/compact``) and automatically before a turn.

With a provider that compacts (LCM) its full compaction runs; otherwise the
backend writes a handoff summary (Goal, Progress, Key Decisions, Files Changed,
Current State, Blockers / Gotchas, Next Steps) that replaces all but the last
``keep_tail`` messages. Failure modes: a failed or empty summary is an error
and the session is untouched; a failed automatic compaction is a warning and
the turn goes on with the full history.
"""

from __future__ import annotations

import logging

from core.config import SessionCompactionConfig
from core.engine.conversation import CompactionReport, Conversation
from core.errors import AgentOSError, BackendError, SummarizerError
from core.llm import Backend, generate_with
from core.memory import MemoryManager

log = logging.getLogger(__name__)


def needs_compaction(conversation: Conversation, config: SessionCompactionConfig) -> bool:
    """True when automatic compaction is on (``max_tokens`` ≠ -1) and the session holds more tokens."""
    if config.max_tokens == -1:
        return False
    return conversation.tokens() > config.max_tokens


def compact_session(
    conversation: Conversation, backend: Backend, config: SessionCompactionConfig, manager: MemoryManager
) -> CompactionReport:
    """Compact now and log it.

    Raises:
        SummarizerError: the summary failed or was empty; the session is untouched.
        ValidationError: there is nothing to compact yet.
    """
    try:
        report = conversation.compact(generate_with(backend), config.keep_tail)
    except BackendError as exc:
        raise SummarizerError(f"the backend could not write the summary: {exc}; the session was left "
                              "untouched") from exc
    manager.append_log("SYSTEM", f"session {conversation.session.id} compacted ({report.method}): "
                                 f"{report.tokens_before} -> {report.tokens_after} tokens",
                       {"kind": "session_compaction", "method": report.method,
                        "tokens_before": report.tokens_before, "tokens_after": report.tokens_after})
    return report


def auto_compact(
    conversation: Conversation, backend: Backend, config: SessionCompactionConfig, manager: MemoryManager
) -> CompactionReport | None:
    """Compact before a turn if the session is over the threshold; a failure only warns."""
    if not needs_compaction(conversation, config):
        return None
    try:
        return compact_session(conversation, backend, config, manager)
    except AgentOSError as exc:
        # Once per session and kind: a tail that alone is over the threshold would otherwise warn every turn.
        kind = type(exc).__name__
        if kind not in conversation.warned:
            conversation.warned.add(kind)
            log.warning("automatic session compaction failed, continuing with the full history: %s", exc)
            manager.append_log("SYSTEM", f"automatic session compaction failed: {exc}",
                               {"kind": "session_compaction", "outcome": "warning"})
        return None
