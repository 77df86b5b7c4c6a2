"""What every provider over memory.db shares: the conversation store, sessions and profiles.

LCM and Simple store messages, session metadata, profile and soul in the same
tables, which is what lets a session switch between them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from core.config import ProviderConfig
from core.memory.storage import Database, SqliteDatabase
from core.memory.provider import ListOptions, Message, Session, SessionInfo, SessionStats
from core.memory.secrets import redactor_of
from core.plugins.memory import window
from core.plugins.memory.profile import ProfileRepository
from core.plugins.memory.store import ConversationStore, check_session, redacted


class StoredConversations:
    """Provider basics + SessionManager + ProfileStore over one memory.db."""

    def __init__(self, db: Path | str | Database, config: ProviderConfig | None = None) -> None:
        """``db``: the path of memory.db, or an open database
        (``core.memory.storage.backend.open_database``)."""
        self.config = config or ProviderConfig()
        self.db = SqliteDatabase(Path(db)) if isinstance(db, (str, Path)) else db
        self.store = ConversationStore(self.db)
        self.profiles = ProfileRepository(self.db)

    # -- Provider --------------------------------------------------------------

    def bootstrap(self, session: Session) -> None:
        """Create the session's conversation record if missing."""
        self.store.ensure(session)

    def append(self, session: Session, messages: list[Message]) -> None:
        """Store one turn in one transaction."""
        self.store.append(session, messages)

    def assemble(self, session: Session, budget: int, fresh_tail: int | None = None) -> list[Message]:
        """The fresh tail always, then older context while it fits ``budget``; oldest first."""
        budget, fresh_tail = window.check_window(budget,
                                                 self.config.fresh_tail if fresh_tail is None else fresh_tail)
        conv = self._conversation(session)
        if conv is None:
            return []
        redactor = redactor_of(self.db)  # a message stored before its secret was, and not yet scrubbed
        return [redacted(m, redactor) for m in window.select(self._window_items(conv), budget, fresh_tail)]

    def _window_items(self, conv: int) -> Iterable[window.WindowItem]:
        """The conversation's context, newest first, as ``assemble`` chooses from it."""
        raise NotImplementedError

    def _conversation(self, session: Session) -> int | None:
        """The id of the session's conversation, or None when it has none yet."""
        return self.store.conversation_id(check_session(session).id)

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
