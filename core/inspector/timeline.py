"""The LOG.md timeline across the archives: pages of entries, newest first, filtered and searched.

A page without search text is a keyset query on the LOG.md index in memory.db
(``log_metadata``, by seq), then one ``pread`` an entry: its cost depends on the
page size, not on the history. Entries appended after the index's newest row
(the index is written just after the line) come from LOG.md itself, so a page
never misses one. Search reads the files newest first and stops at a full page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.errors import ValidationError
from core.inspector.log_files import Archive, Located, LogFiles
from core.memory.storage import Reader
from core.memory.files import ENTRY_TYPES, LogEntry

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
MAX_TEXT = 200


@dataclass(frozen=True)
class LogQuery:
    """What a timeline page shows."""

    types: list[str] = field(default_factory=list)
    """Entry types to show (all when empty)."""
    run: str | None = None
    text: str = ""
    """Case-insensitive text the entry (its masked text or metadata) contains."""
    before: int | None = None
    """Show entries older than this seq (the next page down)."""
    after: int | None = None
    """Show the entries just newer than this seq (the page up, or what a live page has not seen)."""
    archive: Archive | None = None
    """Only the entries of this archive."""
    limit: int = PAGE_SIZE

    def matches(self, located: Located) -> bool:
        """Whether an entry passes the type, run and archive filters (not the text)."""
        entry = located.entry
        if self.types and entry.type not in self.types:
            return False
        if self.run is not None and entry.metadata.get("run_id") != self.run:
            return False
        return self.archive is None or located.archive == self.archive.id

    @property
    def seq_range(self) -> tuple[int, int] | None:
        return (self.archive.first, self.archive.last) if self.archive else None


def check_types(types: list[str]) -> list[str]:
    """Return ``types`` if each is a LOG.md entry type, else raise ValidationError."""
    unknown = [t for t in types if t not in ENTRY_TYPES]
    if unknown:
        raise ValidationError(f"unknown entry type {unknown[0]!r}; valid: {', '.join(ENTRY_TYPES)}")
    return types


def page(files: LogFiles, reader: Reader, query: LogQuery, haystack) -> dict[str, Any]:
    """One page of the timeline, newest first, with whether older and newer entries exist.

    ``haystack(entry)`` is the entry's searchable text with secrets masked.
    """
    if query.text:
        return _search_page(files, query, haystack)
    unindexed = [] if query.archive else files.newer_than(reader.last_indexed_seq())
    tail = [entry for entry in unindexed if query.matches(entry)]
    filters = {"types": query.types, "run": query.run, "seq_range": query.seq_range}
    if query.after is not None and query.before is None:
        rows = reader.log_rows(**filters, before=None, after=query.after, limit=query.limit + 1)[::-1]
        newer = [t for t in tail if t.seq > query.after]
        ascending = (_read_rows(rows, files) + newer)[: query.limit + 1]
        has_newer = len(ascending) > query.limit
        entries = ascending[: query.limit][::-1]
        has_older = reader.log_any(**filters, high=query.after) or any(t.seq <= query.after for t in tail)
    else:
        rows = reader.log_rows(**filters, before=query.before, after=query.after, limit=query.limit + 1)
        newest = [t for t in reversed(tail) if query.before is None or t.seq < query.before]
        descending = (newest + _read_rows(rows, files))[: query.limit + 1]
        has_older = len(descending) > query.limit
        entries = descending[: query.limit]
        has_newer = query.before is not None and (
            reader.log_any(**filters, low=query.before) or any(t.seq >= query.before for t in tail))
    total = reader.log_count(**filters) + len(tail)
    return {"entries": entries, "has_older": has_older, "has_newer": has_newer, "total": total}


def _read_rows(rows: list[dict[str, Any]], files: LogFiles) -> list[Located | dict[str, Any]]:
    """Index ``rows`` read from the files, in the same order (a row whose line is unreadable stays a row)."""
    found = files.read([r["seq"] for r in rows])
    return [found.get(r["seq"], r) for r in rows]


def _search_page(files: LogFiles, query: LogQuery, haystack) -> dict[str, Any]:
    found = files.search(query.text, query.matches, haystack, before=query.before, after=query.after,
                         limit=query.limit + 1, archive=query.archive)
    return {"entries": found[: query.limit], "has_older": len(found) > query.limit,
            "has_newer": query.before is not None, "total": None}


def entry_json(item: Located | dict[str, Any], open_runs: set[str], current_run: str | None,
               archives: set[str]) -> dict[str, Any]:
    """An entry as the page shows it, flagged when it starts a run that never ended (or is running now),
    ends one badly, or summarises an archive; an index row whose line cannot be read says so."""
    if isinstance(item, dict):  # indexed, but its line was not found (damaged, or moved by a compaction)
        return {"seq": item["seq"], "ts": item["ts"], "type": item["type"], "text": None, "meta": {},
                "run_id": item["run_id"], "archive": item["archive_id"], "unreadable": True}
    entry: LogEntry = item.entry
    run_id = entry.metadata.get("run_id")
    shown = {"seq": entry.seq, "ts": entry.ts, "type": entry.type, "text": entry.content,
             "meta": entry.metadata, "run_id": run_id if isinstance(run_id, str) else None,
             "archive": item.archive}
    if entry.type == "RUN_START" and run_id in open_runs:
        shown["running" if run_id == current_run else "never_ended"] = True
    if entry.type == "RUN_END" and entry.metadata.get("outcome") not in (None, "done"):
        shown["failed"] = True
    if entry.type == "SUMMARY":
        target = str(entry.metadata.get("archive", "")).removeprefix("archive/").removesuffix(".md")
        shown["summary_of"] = target if target in archives else None
    return shown
