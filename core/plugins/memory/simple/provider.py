"""SimpleProvider: a sliding window over ``ctx_messages``, no summaries.

It stores messages exactly as LCM does, so a session can switch between the
two providers and keep its history.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from core.config import ProviderConfig
from core.memory.secrets import forgotten_of
from core.plugins.memory import window
from core.plugins.memory.base import StoredConversations
from core.plugins.memory.store import shown_message, shown_tokens


class SimpleProvider(StoredConversations):
    """Provider + ProfileStore + SessionManager: the newest messages that fit the budget."""

    name = "simple"

    def __init__(self, db: Path | str | Any, summarizer: Any = None,
                 config: ProviderConfig | None = None) -> None:
        """Open the provider over memory.db (a path or an open database); ``summarizer`` is not used: the
        Simple provider writes no summaries (it is taken so that every provider opens alike)."""
        super().__init__(db, config)

    def _window_items(self, conv: int) -> Iterator[window.WindowItem]:
        """Every stored message, newest first: no summaries stand in for older ones."""
        forgotten = forgotten_of(self.db, "msg:")
        return (
            window.WindowItem(shown_message(row, forgotten), shown_tokens(row, forgotten))
            for row in self.store.messages_newest_first(conv)
        )
