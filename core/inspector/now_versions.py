"""NOW.md's earlier versions, and what changed between two of them.

No file keeps them: NOW.md is replaced in place at every update. But each update first logs a
NOW_UPDATE entry that records the whole new state (``core.memory.files.now_record``: status,
objective, current step, plan, blockers, resume hint, run and version), so every version is
rebuilt from its entry, in LOG.md or an archive, and rendered as NOW.md was written then (with
the entry's time and seq in its front matter). An entry written by a version of AgentOS that did
not record the whole state is listed, but cannot be compared (``whole: false``).
"""

from __future__ import annotations

import difflib
from typing import Any

from core.errors import CorruptionError, NotFoundError
from core.inspector import timeline
from core.inspector.log_files import Located, LogFiles
from core.memory.files import LogEntry, NowState, now_file, now_record
from core.memory.storage import Reader

PAGE_SIZE = 50


def versions(files: LogFiles, reader: Reader, before: int | None) -> dict[str, Any]:
    """A page of NOW.md's versions, newest first (``before``: older than that seq), each with what it said."""
    page = timeline.page(files, reader,
                         timeline.LogQuery(types=["NOW_UPDATE"], before=before, limit=PAGE_SIZE),
                         haystack=lambda entry: "")
    listed = []
    for item in page["entries"]:
        if isinstance(item, Located):
            listed.append(_summary(item.entry, item.archive))
        else:  # indexed, but its line cannot be read
            listed.append({"seq": item["seq"], "ts": item["ts"], "version": None, "whole": False,
                           "archive": item["archive_id"]})
    return {"versions": listed, "has_older": page["has_older"]}


def diff(files: LogFiles, agent: str, older: int, newer: int) -> dict[str, Any]:
    """NOW.md as the NOW_UPDATE entries ``older`` and ``newer`` recorded it, and its lines compared:
    ``lines`` is every line of both, each ``{"op": " " | "-" | "+", "text"}`` (removed, added, kept)."""
    found = files.read([older, newer])
    texts = {}
    for seq in (older, newer):
        located = found.get(seq)
        if located is None or located.entry.type != "NOW_UPDATE":
            raise NotFoundError(f"agent {agent!r} has no NOW.md version recorded by LOG entry {seq}")
        try:
            texts[seq] = now_file.render(_state(located.entry, agent))
        except CorruptionError as exc:
            raise NotFoundError(f"LOG entry {seq} does not record the whole NOW.md ({exc})") from exc
    before, after = texts[older].splitlines(), texts[newer].splitlines()
    lines = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if op == "equal":
            lines += [{"op": " ", "text": line} for line in before[i1:i2]]
            continue
        lines += [{"op": "-", "text": line} for line in before[i1:i2]]
        lines += [{"op": "+", "text": line} for line in after[j1:j2]]
    return {"older": {**_summary(found[older].entry, found[older].archive), "text": texts[older]},
            "newer": {**_summary(found[newer].entry, found[newer].archive), "text": texts[newer]},
            "lines": lines, "changed": sum(1 for line in lines if line["op"] != " ")}


def _state(entry: LogEntry, agent: str) -> NowState:
    return now_record.from_update(entry.metadata, entry.seq, entry.ts, NowState(agent=agent))


def _summary(entry: LogEntry, archive: str | None) -> dict[str, Any]:
    """A version as the list shows it: its entry, number, status and step (``whole``: it can be compared)."""
    meta = entry.metadata
    version = meta.get("version")
    whole = isinstance(version, int) and not isinstance(version, bool) and "next_steps" in meta
    return {"seq": entry.seq, "ts": entry.ts, "version": version if whole else None, "whole": whole,
            "status": meta.get("status"), "current_step": meta.get("current_step") or entry.content,
            "objective": meta.get("objective"), "run_id": meta.get("now_run_id"), "archive": archive}
