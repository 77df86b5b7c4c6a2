"""Conversation storage shared by every provider: ``ctx_conversations``, ``ctx_messages`` and ``ctx_items``.

Because LCM and Simple store messages the same way, a session can switch
between them and keep its history.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Iterable, Iterator

from core.errors import SessionNotFoundError, ValidationError
from core.memory.storage import Connection, Database, shown_title, title_of
from core.memory.secrets import FORGOTTEN, Redactor, forgotten_of, redactor_of
from core.memory.files import utc_timestamp
from core.memory.provider import (
    Message,
    ToolCall,
    check_id,
    check_message,
    tool_calls_from_json,
    tool_calls_to_json,
)
from core.memory.provider import ListOptions, Session, SessionInfo, SessionStats
from core.llm import estimate_tokens

FORGOTTEN_TOKENS = estimate_tokens(FORGOTTEN)
"""What a forgotten message or summary costs in a prompt, which shows only its mark."""
_ID_BATCH = 500
MESSAGE_COLUMNS = "m.id, m.role, m.content, m.tool_calls, m.tool_name, m.created_at"


def shown_message(row: Any, forgotten: set[str]) -> Message:
    """A stored message as a prompt shows it: one that was forgotten only says so (it stays stored, the
    conversation's record; ``forgotten`` holds the forgotten ``msg:<id>`` ids)."""
    message = message_from_row(row)
    if f"msg:{row['id']}" in forgotten:
        return replace(message, content=FORGOTTEN, tool_calls=())
    return message


def shown_tokens(row: Any, forgotten: set[str]) -> int:
    """The tokens of a stored message (``row`` has its ``token_count``) as a prompt shows it."""
    return FORGOTTEN_TOKENS if f"msg:{row['id']}" in forgotten else row["token_count"]


def message_from_row(row: Any) -> Message:
    """A stored message (selected with ``MESSAGE_COLUMNS``)."""
    return Message(
        role=row["role"],
        content=row["content"],
        tool_calls=tool_calls_from_json(row["tool_calls"]),
        tool_name=row["tool_name"],
        created_at=row["created_at"],
    )


def redacted(message: Message, redactor: Redactor) -> Message:
    """``message`` with the secrets hidden in its text and tool-call arguments."""
    if not redactor:
        return message
    calls = tuple(ToolCall(c.name, redactor(c.arguments)) for c in message.tool_calls)
    return replace(message, content=redactor.text(message.content), tool_calls=calls)


def check_session(session: object) -> Session:
    """Raise ValidationError unless ``session`` is a Session with a non-empty id, and ids within the
    limits."""
    if not isinstance(session, Session) or not isinstance(session.id, str) or not session.id:
        raise ValidationError(f"expected a Session with a non-empty id, got {repr(session)[:200]}")
    check_ids(session.id, session.agent_id, session.user_id, session.channel)
    return session


def check_ids(session_id: str, agent_id: str, user_id: str, channel: str) -> None:
    """Raise ValidationError unless every id is within ``MAX_ID_CHARS`` and free of control characters."""
    check_id(session_id, "session id", required=True)
    check_id(agent_id, "agent id")
    check_id(user_id, "user id")
    check_id(channel, "channel")


class ConversationStore:
    """Messages and context items of every session in one memory.db."""

    def __init__(self, db: Database) -> None:
        self.db = db
        # session id -> conversation id never changes once created, so it is cached.
        self._ids: dict[str, int] = {}
        self._ids_guard = threading.Lock()

    def conversation_id(self, session_id: str) -> int | None:
        """The conversation of ``session_id``, or None when it has none."""
        with self._ids_guard:
            cached = self._ids.get(session_id)
        if cached is not None:
            return cached
        row = self.db.conn.execute(
            "SELECT id FROM ctx_conversations WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        with self._ids_guard:
            self._ids[session_id] = row["id"]
        return row["id"]

    def ensure(self, session: Session) -> int:
        """Create the session's conversation when missing; return its id."""
        check_session(session)
        found = self.conversation_id(session.id)
        if found is not None:
            return found
        with self.db.transaction() as conn:
            self._insert_conversation(conn, session)
        return self.conversation_id(session.id)  # type: ignore[return-value]

    def _insert_conversation(self, conn: Connection, session: Session) -> None:
        now = utc_timestamp()
        conn.execute(
            "INSERT OR IGNORE INTO ctx_conversations"
            " (session_id, agent_id, user_id, channel, created_at, last_active) VALUES (?, ?, ?, ?, ?, ?)",
            (session.id, session.agent_id, session.user_id, session.channel, now, now),
        )

    def append(self, session: Session, messages: Iterable[Message]) -> list[int]:
        """Store one turn in one transaction; return the new message ids.

        Raises:
            ValidationError: a message is malformed; nothing was stored.
        """
        check_session(session)
        batch = list(messages)
        for message in batch:
            if not isinstance(message, Message):
                raise ValidationError(f"expected Message objects, got {type(message).__name__}")
            check_message(message)
        if not batch:
            return []
        now = utc_timestamp()
        # any SQLite error arrives as a StorageError (core.memory.storage.sqlite)
        with self.db.transaction() as conn:
            self._insert_conversation(conn, session)
            return self._insert_messages(conn, session, batch, now)

    def _insert_messages(
        self, conn: Connection, session: Session, batch: list[Message], now: str
    ) -> list[int]:
        # Read inside the write transaction: concurrent appends of a conversation serialise
        # (SQLite: on BEGIN IMMEDIATE; PostgreSQL: on the conversation's advisory lock).
        conv = conn.execute(
            "SELECT id, title FROM ctx_conversations WHERE session_id = ?", (session.id,)
        ).fetchone()
        self.db.serialize(conn, "conversation", conv["id"])
        seq = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM ctx_messages WHERE conversation_id = ?", (conv["id"],)
        ).fetchone()[0]
        position = conn.execute(
            "SELECT COALESCE(MAX(position), 0) FROM ctx_items WHERE conversation_id = ?", (conv["id"],)
        ).fetchone()[0]
        ids = []
        # Read in the transaction: a secret saved a moment ago is known. The stored messages are the record:
        # a forgotten value is hidden when they are read, not when they are kept.
        redactor = redactor_of(conn, forgotten=False)
        batch = [redacted(m, redactor) for m in batch]
        for message in batch:
            seq += 1
            position += 1
            tokens = message.tokens()
            message_id = conn.execute(
                "INSERT INTO ctx_messages (conversation_id, seq, role, content, tool_calls, tool_name,"
                " token_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (conv["id"], seq, message.role, message.content, tool_calls_to_json(message.tool_calls),
                 message.tool_name, tokens, message.created_at or now),
            ).fetchone()[0]
            ids.append(message_id)
            conn.execute(
                "INSERT INTO ctx_items (conversation_id, position, message_id, token_count) VALUES (?, ?, ?, "
                "?)",
                (conv["id"], position, message_id, tokens),
            )
        title = conv["title"] or _title(batch)
        conn.execute(
            "UPDATE ctx_conversations SET last_active = ?, title = ? WHERE id = ?", (now, title, conv["id"])
        )
        return ids

    def stats(self, session: Session) -> SessionStats:
        """Counts of the session; zero stats when unknown."""
        conv = self.conversation_id(check_session(session).id)
        if conv is None:
            return SessionStats()
        conn = self.db.conn
        messages = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(token_count), 0), MIN(created_at), MAX(created_at)"
            " FROM ctx_messages WHERE conversation_id = ?", (conv,)
        ).fetchone()
        summaries = conn.execute("SELECT COUNT(*) FROM ctx_summaries WHERE conversation_id = ?",
                                 (conv,)).fetchone()
        return SessionStats(
            message_count=messages[0],
            token_count=messages[1],
            summary_count=summaries[0],
            context_tokens=self.context_tokens(conv),
            oldest_at=messages[2] or "",
            newest_at=messages[3] or "",
        )

    def context_tokens(self, conv: int) -> int:
        """Tokens of the conversation's current context items as a prompt shows them: a forgotten message or
        summary counts as its ``[forgotten]`` mark, not as the text it keeps for the record."""
        conn = self.db.conn
        total = conn.execute(
            "SELECT COALESCE(SUM(token_count), 0) FROM ctx_items WHERE conversation_id = ?", (conv,)
        ).fetchone()[0]
        forgotten = forgotten_of(self.db, "msg:", "sum:")
        messages = [int(i[4:]) for i in forgotten if i.startswith("msg:") and i[4:].isdigit()]
        summaries = [i[4:] for i in forgotten if i.startswith("sum:")]
        for column, ids in (("message_id", messages), ("summary_id", summaries)):
            for start in range(0, len(ids), _ID_BATCH):
                part = ids[start:start + _ID_BATCH]
                rows = conn.execute("SELECT token_count FROM ctx_items WHERE conversation_id = ? AND "
                                    f"{column} IN ({', '.join('?' * len(part))})", (conv, *part))
                total -= sum(max(0, r[0] - FORGOTTEN_TOKENS) for r in rows)
        return total

    def load_history(self, session_id: str) -> list[Message]:
        """Every message of the session, oldest first (a forgotten one says only that)."""
        conv = self.conversation_id(session_id)
        if conv is None:
            return []
        rows = self.db.conn.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM ctx_messages m WHERE m.conversation_id = ? ORDER BY m.seq",
            (conv,)
        )
        redactor = redactor_of(self.db)  # a message stored before its secret was, and not yet scrubbed
        forgotten = forgotten_of(self.db, "msg:")
        return [redacted(shown_message(row, forgotten), redactor) for row in rows]

    def messages_newest_first(self, conv: int) -> Iterator[Any]:
        """A lazy cursor over the conversation's messages, newest first."""
        return self.db.iterate(
            f"SELECT {MESSAGE_COLUMNS}, m.token_count FROM ctx_messages m"
            " WHERE m.conversation_id = ? ORDER BY m.seq DESC", (conv,)
        )

    # -- session metadata ------------------------------------------------------

    def save_info(self, info: SessionInfo) -> None:
        """Create or update the session's metadata."""
        if not isinstance(info, SessionInfo) or not info.id:
            raise ValidationError(f"expected a SessionInfo with a non-empty id, got {repr(info)[:200]}")
        check_ids(info.id, info.agent_id, info.user_id, info.channel)
        now = utc_timestamp()
        with self.db.transaction() as conn:
            self._insert_conversation(conn, Session(info.id, info.agent_id, info.user_id, info.channel))
            conn.execute(
                "UPDATE ctx_conversations SET agent_id = ?, user_id = ?, channel = ?, title = ?, archived = "
                "?, last_active = ? WHERE session_id = ?",
                (info.agent_id, info.user_id, info.channel, info.title, int(info.archived),
                 info.last_active or now, info.id),
            )

    def load_info(self, session_id: str) -> SessionInfo:
        """The session's metadata.

        Raises:
            SessionNotFoundError: the session has no conversation.
        """
        row = self.db.conn.execute("SELECT * FROM ctx_conversations WHERE session_id = ?",
                                   (session_id,)).fetchone()
        if row is None:
            raise SessionNotFoundError(f"no conversation is stored for session {session_id!r}")
        return self._shown([row])[0]

    def list_info(self, options: ListOptions) -> list[SessionInfo]:
        """Sessions matching ``options``, most recently active first."""
        where, args = ["1 = 1"], []
        if options.agent_id:
            where.append("agent_id = ?")
            args.append(options.agent_id)
        if options.user_id is not None:
            where.append("user_id = ?")
            args.append(options.user_id)
        if not options.include_archived:
            where.append("archived = 0")
        sql = (
            f"SELECT * FROM ctx_conversations WHERE {' AND '.join(where)} ORDER BY last_active DESC, id DESC"
        )
        sql += " LIMIT ? OFFSET ?"
        args += [options.limit if options.limit > 0 else -1, max(0, options.offset)]
        return self._shown(self.db.conn.execute(sql, args).fetchall())

    def _shown(self, rows: list[Any]) -> list[SessionInfo]:
        """Each row's session metadata; a title taken from a request that was forgotten since is the next
        request's that was not (as the prompt shows the conversation)."""
        forgotten = {r[0]
                     for r in self.db.conn.execute("SELECT id FROM recall_forgotten WHERE id LIKE 'msg:%'")}
        infos = [_info(row) for row in rows]
        if not forgotten:
            return infos
        return [replace(info, title=shown_title(self.db.conn, row["id"], info.title, forgotten))
                for info, row in zip(infos, rows)]


def _title(batch: list[Message]) -> str:
    return next((title_of(m.content) for m in batch if m.role == "user" and m.content.strip()), "")


def _info(row: Any) -> SessionInfo:
    return SessionInfo(
        id=row["session_id"], agent_id=row["agent_id"], user_id=row["user_id"], channel=row["channel"],
        title=row["title"], created_at=row["created_at"], last_active=row["last_active"],
        archived=bool(row["archived"]),
    )
