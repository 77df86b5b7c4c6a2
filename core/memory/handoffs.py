"""The handoff summary of a session (seed 002's compaction):
``memory/sessions/<session>-<hash>.handoff.json``.

A conversation whose provider keeps no summaries of its own is compacted by the engine into one structured
summary that stands in for the session's first ``covered`` messages; the messages themselves stay stored, so
nothing is lost. The memory keeps the summary's file: replaced atomically, named by a readable part of the
session id plus a hash of all of it, so two sessions whose ids differ only in punctuation never share one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from core.durable import atomic_write, storage_error
from core.errors import CorruptionError
from core.memory.files import utc_timestamp
from core.paths import AgentPaths


@dataclass(frozen=True)
class Handoff:
    """A handoff summary standing in for the first ``covered`` messages of the session."""

    summary: str
    covered: int
    """How many of the session's first messages the summary replaces in what the model sees."""
    created_at: str


class SessionHandoff:
    """The handoff summary of one session of an agent, kept in its memory folder."""

    def __init__(self, paths: AgentPaths, session_id: str) -> None:
        self.session_id = session_id
        self.file = handoff_file(paths, session_id)

    def read(self) -> Handoff | None:
        """The session's handoff summary, or None when it was never compacted that way.

        Raises:
            CorruptionError: the file cannot be read, or belongs to another session (the message says to
                delete it, which drops the summary: the messages are all still stored).
        """
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise CorruptionError(f"cannot read {self.file}: {exc}; delete it to drop the summary") from exc
        covered = data.get("covered") if isinstance(data, dict) else None
        if not isinstance(data.get("summary") if isinstance(data, dict) else None, str) \
                or not isinstance(covered, int) or isinstance(covered, bool) or covered < 0:
            raise CorruptionError(f"{self.file} is not a handoff summary (an object with a text 'summary' "
                                  "and a count 'covered'); delete it to drop the summary")
        if data.get("session", self.session_id) != self.session_id:
            raise CorruptionError(f"{self.file} belongs to session {data.get('session')!r}, not "
                                  f"{self.session_id!r}; delete it to drop the summary")
        return Handoff(data["summary"], covered, str(data.get("created_at", "")))

    def write(self, summary: str, covered: int) -> Handoff:
        """Replace the session's summary (atomically: the old one or the new one, never a torn file)."""
        handoff = Handoff(summary, covered, utc_timestamp())
        record = {"summary": summary, "covered": covered, "created_at": handoff.created_at,
                  "session": self.session_id}
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise storage_error(exc, f"cannot create {self.file.parent}") from exc
        atomic_write(self.file, json.dumps(record, ensure_ascii=False, indent=1).encode("utf-8"))
        return handoff


def handoff_file(paths: AgentPaths, session_id: str) -> Path:
    """The handoff file of a session: a readable part of its id plus a hash of all of it (injective)."""
    folder = paths.memory_dir / "sessions"
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:64]
    path = folder / f"{readable}-{hashlib.sha256(session_id.encode('utf-8')).hexdigest()[:20]}.handoff.json"
    legacy = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', session_id)}.handoff.json"
    if not path.exists() and _written_for(legacy, session_id):
        try:
            os.replace(legacy, path)  # a summary written under the earlier, ambiguous name
        except OSError as exc:
            raise storage_error(exc, f"cannot rename {legacy} to {path}") from exc
    return path


def _written_for(path: Path, session_id: str) -> bool:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("session") == session_id
    except (OSError, ValueError, AttributeError):
        return False
