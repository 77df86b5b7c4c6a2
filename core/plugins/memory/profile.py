"""Profile, soul and constraints per (user, agent) with one version counter, a changelog and session
snapshots.

Every write bumps ``ctx_agent_memory.version`` and records a changelog entry
in the same transaction, so any past version can be read back (and rolled
back to) from the changelog.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from core.errors import ValidationError
from core.memory.provider import check_id
from core.memory.storage import Connection, Database
from core.memory.provider import ChangeEntry, ConstraintEntry, SessionSnapshot, context
from core.memory.files import utc_timestamp
from core.memory.secrets import redactor_of

SCOPES = ("profile", "soul", "constraint")
MAX_TEXT_CHARS = 64 * 1024
_COLUMN = {"profile": "profile", "soul": "soul", "constraint": "constraints"}


def check_text(text: object, what: str) -> str:
    """Raise ValidationError unless ``text`` is storable UTF-8 text of a sane size."""
    if not isinstance(text, str):
        raise ValidationError(f"{what} must be a string, got {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise ValidationError(f"{what} is {len(text)} characters; the most allowed is {MAX_TEXT_CHARS}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{what} is not valid UTF-8 text: {exc}") from exc
    return text


class ProfileRepository:
    """Reads and versioned writes of ``ctx_agent_memory``."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- reads ---------------------------------------------------------------

    def get(self, scope: str, user_id: str, agent_id: str) -> str:
        """The current text of ``scope`` ("" or "[]" when never written)."""
        row = self._row(self.db.conn, user_id, agent_id)
        if row is None:
            return "[]" if scope == "constraint" else ""
        return row[_COLUMN[scope]]

    def get_at(self, scope: str, user_id: str, agent_id: str, version: int) -> str:
        """The text of ``scope`` as it was at memory ``version`` (current when ``version <= 0``)."""
        if version <= 0:
            return self.get(scope, user_id, agent_id)
        row = self.db.conn.execute(
            "SELECT after_text FROM ctx_changelog WHERE user_id = ? AND agent_id = ? AND scope = ?"
            " AND version_after <= ? ORDER BY version_after DESC, id DESC LIMIT 1",
            (user_id, agent_id, scope, version),
        ).fetchone()
        if row is None:
            return "[]" if scope == "constraint" else ""
        return row["after_text"]

    def version(self, user_id: str, agent_id: str) -> int:
        """The current memory version (0 before the first write)."""
        row = self._row(self.db.conn, user_id, agent_id)
        return 0 if row is None else row["version"]

    def constraints(self, user_id: str, agent_id: str, version: int = 0) -> list[ConstraintEntry]:
        """The constraints, current or at ``version``."""
        return _constraints(self.get_at("constraint", user_id, agent_id, version))

    def changelog(self, user_id: str, agent_id: str, scope: str = "", limit: int = 20) -> list[ChangeEntry]:
        """The newest ``limit`` entries, newest first (ordered by time, then by insertion)."""
        sql = "SELECT * FROM ctx_changelog WHERE user_id = ? AND agent_id = ?"
        args: list = [user_id, agent_id]
        if scope:
            sql += " AND scope = ?"
            args.append(scope)
        sql += " ORDER BY created_at DESC, id DESC LIMIT ?"
        args.append(limit if limit > 0 else -1)
        return [_entry(row) for row in self.db.conn.execute(sql, args)]

    # -- writes --------------------------------------------------------------

    def set(self, scope: str, user_id: str, agent_id: str, text: str, action: str = "update") -> int:
        """Replace ``scope`` with ``text``, bump the version and log the change; return the new version."""
        check_text(text, scope)
        with self.db.transaction() as conn:
            return self._write(conn, scope, user_id, agent_id, lambda _before: text, action)

    def add_constraint(self, user_id: str, agent_id: str, text: str) -> list[ConstraintEntry]:
        """Append a constraint with a fresh id; return the new list."""
        check_text(text, "constraint")
        if not text.strip():
            raise ValidationError("a constraint needs some text")
        entry = {"id": "con_" + uuid.uuid4().hex[:12], "text": text, "created_at": utc_timestamp()}
        with self.db.transaction() as conn:
            self._write(conn, "constraint", user_id, agent_id,
                        lambda before: json.dumps(json.loads(before) + [entry], ensure_ascii=False), "create")
        return self.constraints(user_id, agent_id)

    def remove_constraint(self, user_id: str, agent_id: str, constraint_id: str) -> list[ConstraintEntry]:
        """Remove the constraint ``constraint_id``; return the new list.

        Raises:
            ValidationError: no constraint has that id; nothing changed.
        """
        def without(before: str) -> str:
            items = json.loads(before)
            kept = [item for item in items if item["id"] != constraint_id]
            if len(kept) == len(items):
                known = ", ".join(item["id"] for item in items) or "none"
                raise ValidationError(f"no constraint has id {constraint_id!r}; ids: {known}")
            return json.dumps(kept, ensure_ascii=False)

        with self.db.transaction() as conn:
            self._write(conn, "constraint", user_id, agent_id, without, "delete")
        return self.constraints(user_id, agent_id)

    def write_entry(self, entry: ChangeEntry) -> None:
        """Record a change made elsewhere (its id and time are assigned here)."""
        with self.db.transaction() as conn:
            _log(conn, entry.user_id, entry.agent_id, entry.scope, entry.action, entry.version_before,
                 entry.version_after, entry.before_text, entry.after_text, entry.source, entry.session_id)

    def _write(self, conn: Connection, scope: str, user_id: str, agent_id: str, change, action: str) -> int:
        check_id(user_id, "user id")
        check_id(agent_id, "agent id")
        now = utc_timestamp()
        self.db.serialize(conn, "profile", user_id, agent_id)
        conn.execute(
            "INSERT OR IGNORE INTO ctx_agent_memory (user_id, agent_id, updated_at) VALUES (?, ?, ?)",
            (user_id, agent_id, now),
        )
        row = self._row(conn, user_id, agent_id)
        before = row[_COLUMN[scope]]
        after = redactor_of(conn).text(change(before))  # what the model writes here reaches every prompt
        version = row["version"] + 1
        conn.execute(
            f"UPDATE ctx_agent_memory SET {_COLUMN[scope]} = ?, version = ?, updated_at = ?"
            " WHERE user_id = ? AND agent_id = ?",
            (after, version, now, user_id, agent_id),
        )
        if action == "update" and not before.strip("[] "):
            action = "create"
        _log(conn, user_id, agent_id, scope, action, row["version"], version, before, after)
        return version

    @staticmethod
    def _row(conn: Connection, user_id: str, agent_id: str) -> Any:
        return conn.execute(
            "SELECT * FROM ctx_agent_memory WHERE user_id = ? AND agent_id = ?", (user_id, agent_id)
        ).fetchone()

    # -- session snapshots ---------------------------------------------------

    def snapshot(self, session_id: str, user_id: str, agent_id: str) -> SessionSnapshot:
        """The session's snapshot, frozen at the current version when first asked for."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO ctx_session_snapshots (session_id, user_id, agent_id, version, "
                "updated_at) VALUES (?, ?, ?, ?, ?)",
                (session_id, user_id, agent_id, self._version_in(conn, user_id, agent_id), utc_timestamp()),
            )
            row = conn.execute("SELECT * FROM ctx_session_snapshots WHERE session_id = ?",
                               (session_id,)).fetchone()
        return SessionSnapshot(row["session_id"], row["user_id"], row["agent_id"], row["version"],
                               row["updated_at"])

    def advance_snapshot(self, session_id: str, user_id: str, agent_id: str) -> None:
        """Move the session's snapshot to the current version."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO ctx_session_snapshots (session_id, user_id, agent_id, version, updated_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
                " version = excluded.version, updated_at = excluded.updated_at",
                (session_id, user_id, agent_id, self._version_in(conn, user_id, agent_id), utc_timestamp()),
            )

    def _version_in(self, conn: Connection, user_id: str, agent_id: str) -> int:
        row = self._row(conn, user_id, agent_id)
        return 0 if row is None else row["version"]


def _log(conn, user_id, agent_id, scope, action, before_v, after_v, before, after, source=None,
         session_id=None):
    redactor = redactor_of(conn)
    before, after = redactor.text(before), redactor.text(after)
    conn.execute(
        "INSERT INTO ctx_changelog (user_id, agent_id, session_id, scope, action, source, version_before,"
        " version_after, before_text, after_text, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (user_id, agent_id, session_id if session_id is not None else _bound_session_id(), scope, action,
         str(getattr(source, "value", source) or context.change_source().value), before_v, after_v,
         before, after, utc_timestamp()),
    )


def _bound_session_id() -> str:
    session = context.bound_session()
    return "" if session is None else session.id


def _constraints(text: str) -> list[ConstraintEntry]:
    return [ConstraintEntry(item["id"], item["text"], item["created_at"]) for item in json.loads(text)]


def _entry(row: Any) -> ChangeEntry:
    return ChangeEntry(
        id=row["id"], user_id=row["user_id"], agent_id=row["agent_id"], session_id=row["session_id"],
        scope=row["scope"], action=row["action"], source=row["source"], version_before=row["version_before"],
        version_after=row["version_after"], before_text=row["before_text"], after_text=row["after_text"],
        created_at=row["created_at"],
    )
