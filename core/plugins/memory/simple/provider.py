"""SimpleProvider: a sliding window over ``ctx_messages``, no summaries.

It stores messages exactly as LCM does, so a session can switch between the
two providers and keep its history.
"""

from __future__ import annotations

from pathlib import Path

from core.config import ProviderConfig
from core.memory.provider.messages import Message
from core.memory.provider.types import Session
from core.plugins.memory import window
from core.plugins.memory.base import StoredConversations
from core.plugins.memory.store import check_session, message_from_row


class SimpleProvider(StoredConversations):
    """Provider + ProfileStore + SessionManager: the newest messages that fit the budget."""

    name = "simple"

    def __init__(self, db_path: Path | str, summarizer: object = None, config: ProviderConfig | None = None) -> None:
        """Open the provider over memory.db at ``db_path`` (it keeps no summaries: ``summarizer`` is unused)."""
        super().__init__(db_path, config)

    def assemble(self, session: Session, budget: int, fresh_tail: int | None = None) -> list[Message]:
        """The last ``fresh_tail`` messages always, then older ones while they fit ``budget``; oldest first."""
        budget, fresh_tail = window.check_window(budget, self.config.fresh_tail if fresh_tail is None else fresh_tail)
        conv = self.store.conversation_id(check_session(session).id)
        if conv is None:
            return []
        items = (
            window.WindowItem(message_from_row(row), row["token_count"])
            for row in self.store.messages_newest_first(conv)
        )
        return window.select(items, budget, fresh_tail)
