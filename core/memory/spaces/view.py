"""What a reader that writes nothing (the inspector) sees of a space: members and the journal's timeline.

Read straight from the journal and the members file, never through ``index.db`` (whose catch-up
writes): a memory that a FORGET entry names is left out, a damaged line is skipped. Every string of a
timeline is masked with the secret values of every member (read from their memories, read-only), so a
value published before its owner saved it as a secret is not shown even before the scrub took it out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.memory.files.log_file import scan_bytes
from core.memory.spaces import members as members_file
from core.memory.spaces.paths import SpacePaths, list_spaces
from core.memory.spaces.secrets import members_redactor
from core.memory.spaces.space import memory_id

MAX_TIMELINE = 500


def card(name: str, home: Path) -> dict[str, Any]:
    """A space's summary for a listing: its members, live memories and the time of its last entry."""
    timeline = _timeline(name, home, MAX_TIMELINE)
    return {"name": name, "members": timeline["members"], "memories": timeline["memories"],
            "updated_at": timeline["entries"][0]["ts"] if timeline["entries"] else None}


def cards(home: Path) -> list[dict[str, Any]]:
    return [card(name, home) for name in list_spaces(home)]


def read_timeline(name: str, home: Path, limit: int = MAX_TIMELINE) -> dict[str, Any]:
    """The space's members and its live memories, newest first (``limit`` at most), every member's secrets
    masked."""
    timeline = _timeline(name, home, limit)
    return members_redactor(home, timeline["members"])(timeline)


def _timeline(name: str, home: Path, limit: int) -> dict[str, Any]:
    paths = SpacePaths.for_space(name, home).require()
    members = dict(members_file.read(paths).access)
    try:
        data = paths.journal.read_bytes()
    except FileNotFoundError:
        data = b""
    entries = scan_bytes(data, paths.journal).entries
    forgotten = {s for e in entries if e.type == "FORGET" for s in e.metadata.get("forget", [])}
    live = [e for e in entries if e.type == "PUBLISH" and e.seq not in forgotten]
    return {"space": name, "members": members, "memories": len(live), "journal_bytes": len(data),
            "entries": [{"id": memory_id(name, e.seq), "seq": e.seq, "ts": e.ts,
                         "author": e.metadata.get("author"),
                         "content": e.content, "metadata": e.metadata.get("metadata") or {}}
                        for e in reversed(live[-limit:])]}
