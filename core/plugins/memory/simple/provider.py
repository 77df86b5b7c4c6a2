"""SimpleProvider: a sliding window over ``ctx_messages``, no summaries.

It stores messages exactly as LCM does, so a session can switch between the
two providers and keep its history.
"""

from __future__ import annotations

from pathlib import Path

from core.config import ProviderConfig
from core.memory.db import Database
from core.memory.provider.messages import Message
from core.memory.provider.types import ListOptions, Session, SessionInfo, SessionStats
from core.plugins.memory import window
from core.plugins.memory.profile import ProfileRepository
from core.plugins.memory.store import ConversationStore, check_session, message_from_row


class SimpleProvider:
    """Provider + ProfileStore + SessionManager: the newest messages that fit the budget."""

    name = "simple"

    def __init__(self, db_path: Path | str, config: ProviderConfig | None = None, **_ignored) -> None:
        """Open the provider over memory.db at ``db_path`` (a summarizer, if passed, is not used)."""
        self.config = config or ProviderConfig()
        self.db = Database(Path(db_path))
        self.store = ConversationStore(self.db)
        self.profiles = ProfileRepository(self.db)

    def bootstrap(self, session: Session) -> None:
        """Create the session's conversation record if missing."""
        self.store.ensure(session)

    def append(self, session: Session, messages: list[Message]) -> None:
        """Store one turn in one transaction."""
        self.store.append(session, messages)

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

    def stats(self, session: Session) -> SessionStats:
        """Counts of the session; zeros when unknown."""
        return self.store.stats(session)

    def close(self) -> None:
        """Close the database connections; safe twice."""
        self.db.close()

    # -- SessionManager --------------------------------------------------------

    def save_info(self, info: SessionInfo) -> None:
        """Create or update a session's metadata."""
        self.store.save_info(info)

    def load_info(self, session_id: str) -> SessionInfo:
        """A session's metadata (SessionNotFoundError when unknown)."""
        return self.store.load_info(session_id)

    def list_info(self, options: ListOptions = ListOptions()) -> list[SessionInfo]:
        """Sessions, most recently active first."""
        return self.store.list_info(options)

    def load_history(self, session_id: str) -> list[Message]:
        """Every stored message, oldest first."""
        return self.store.load_history(session_id)

    # -- ProfileStore ------------------------------------------------------------

    def get_profile(self, user_id: str, agent_id: str) -> str:
        return self.profiles.get("profile", user_id, agent_id)

    def set_profile(self, user_id: str, agent_id: str, content: str) -> None:
        self.profiles.set("profile", user_id, agent_id, content)

    def get_agent_soul(self, user_id: str, agent_id: str) -> str:
        return self.profiles.get("soul", user_id, agent_id)

    def set_agent_soul(self, user_id: str, agent_id: str, content: str) -> None:
        self.profiles.set("soul", user_id, agent_id, content)
