"""LOG.md and its archives as the inspector reads them: entries by seq, the newest ones, and search.

No request parses a history. Seqs increase down every file, so the line of a seq is
found by binary search on byte offsets: about twenty small ``pread`` calls in a file
of 100,000 entries, nothing to build or keep between requests, and as correct for a
LOG.md that grew a moment ago as for an archive. The line is then checked against
its CRC. Files are opened read-only and no lock is taken: a line is whole or it is
skipped (``pread`` rather than ``mmap``, so a writer cutting a torn tail cannot
crash the reader).

Which file holds a seq follows from the archive names: ``archive/LOG-<first>-<last>.md``
holds ``first..last``, LOG.md everything after the newest archive.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from core.memory.files import parse_or_none
from core.memory.files import LogEntry
from core.paths import AgentPaths

ARCHIVE_ID = re.compile(r"LOG-(\d{1,19})-(\d{1,19})")
"""An archive's id, the stem of its file name."""
_HEAD = re.compile(rb"- (\d{1,19}) ")
_BLOCK = 4096
_SEARCH_BLOCK = 1 << 20


@dataclass(frozen=True)
class Located:
    """An entry and the file it was read from."""

    entry: LogEntry
    archive: str | None
    """The archive id (``LOG-1-120``), or None for LOG.md."""


@dataclass(frozen=True)
class Archive:
    """One immutable archive file of compacted entries."""

    id: str
    first: int
    last: int
    path: Path
    size: int


class _SortedLines:
    """The lines of one open file, whose entry seqs increase from the top, read with ``pread``."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = os.fstat(fd).st_size

    def line(self, start: int) -> tuple[bytes, int] | None:
        """The complete line at ``start`` (without its newline) and where the next one begins;
        None for a torn last line."""
        parts, at = [], start
        while at < self.size:
            block = os.pread(self.fd, _BLOCK, at)
            if not block:
                break
            end = block.find(b"\n")
            if end >= 0:
                parts.append(block[:end])
                return b"".join(parts), at + end + 1
            parts.append(block)
            at += len(block)
        return None

    def next_start(self, at: int) -> int:
        """The first line start at or after ``at`` (the size when there is none)."""
        if at <= 0:
            return 0
        scan = at - 1  # a line starts at ``at`` if the byte before it is a newline
        while scan < self.size:
            block = os.pread(self.fd, _BLOCK, scan)
            end = block.find(b"\n")
            if end >= 0:
                return scan + end + 1
            scan += len(block) or self.size
        return self.size

    def seq_at(self, start: int) -> int | None:
        head = _HEAD.match(os.pread(self.fd, 24, start))
        return int(head.group(1)) if head else None

    def first_from(self, seq: int) -> int:
        """The start of the first line whose seq is ``seq`` or more (lines without one are passed over)."""
        low, high = 0, self.size
        while low < high:
            middle = (low + high) // 2
            if self._headed(self.next_start(middle))[1] >= seq:
                high = middle
            else:
                low = middle + 1
        return self._headed(self.next_start(low))[0]

    def _headed(self, start: int) -> tuple[int, float]:
        """The first line from ``start`` on that has a seq, and the seq (size and infinity past the last)."""
        while start < self.size:
            seq = self.seq_at(start)
            if seq is not None:
                return start, seq
            found = self.line(start)
            if found is None:
                break
            start = found[1]
        return self.size, float("inf")

    def entries_from(self, start: int) -> Iterator[LogEntry]:
        """The readable entries from the line at ``start`` to the end, in order."""
        while (found := self.line(start)) is not None:
            entry = parse_or_none(found[0])
            if entry is not None:
                yield entry
            start = found[1]

    def entries(self, seqs: list[int]) -> dict[int, LogEntry]:
        """The readable entries of ``seqs``; a seq on the line after the last one found costs no search."""
        found, after = {}, None
        for seq in sorted(seqs):
            start = after if after is not None and self.seq_at(after) == seq else self.first_from(seq)
            line = self.line(start)
            entry = parse_or_none(line[0]) if line else None
            if entry is not None and entry.seq == seq:
                found[seq] = entry
            after = line[1] if line else None
        return found

    def blocks_before(self, end: int) -> Iterator[bytes]:
        """The whole lines before offset ``end`` (a line start), a block at a time, the last block first."""
        carry = b""
        while end > 0:
            start = max(0, end - _SEARCH_BLOCK)
            block = os.pread(self.fd, end - start, start) + carry
            end = start
            if start:
                cut = block.find(b"\n") + 1  # the part before is the end of a line that starts further back
                if not cut:
                    carry = block
                    continue
                carry, block = block[:cut], block[cut:]
            yield block

    def last_seq(self) -> int:
        """The seq of the last whole entry line (0 when there is none), reading back from the end."""
        end, carry = self.size, b""
        while end > 0:
            start = max(0, end - _BLOCK)
            lines = (os.pread(self.fd, end - start, start) + carry).split(b"\n")
            carry = lines.pop(0) if start else b""
            for raw in reversed(lines):
                if (entry := parse_or_none(raw)) is not None:
                    return entry.seq
            end = start
        return 0


class LogFiles:
    """The LOG.md and archives of one agent, read-only, safe to share between threads."""

    def __init__(self, paths: AgentPaths) -> None:
        self.paths = paths
        self._guard = threading.Lock()
        self._archives: tuple[int, list[Archive], list[int]] = (-1, [], [])

    # -- files ------------------------------------------------------------------

    def archives(self) -> list[Archive]:
        """Every archive, oldest first (the listing is cached until the folder changes)."""
        return self._listing()[0]

    def _listing(self) -> tuple[list[Archive], list[int]]:
        """The archives and their first seqs (for bisecting)."""
        folder = self.paths.archive_dir
        try:
            stamp = folder.stat().st_mtime_ns
        except FileNotFoundError:
            return [], []
        with self._guard:
            if self._archives[0] == stamp:
                return self._archives[1], self._archives[2]
        found = []
        with os.scandir(folder) as listing:
            for item in listing:
                match = ARCHIVE_ID.fullmatch(item.name.removesuffix(".md"))
                if match and item.name.endswith(".md") and item.is_file(follow_symlinks=False):
                    first, last = int(match.group(1)), int(match.group(2))
                    found.append(Archive(match.group(0), first, last, Path(item.path), item.stat().st_size))
        found.sort(key=lambda a: (a.first, a.last))
        firsts = [a.first for a in found]
        with self._guard:
            self._archives = (stamp, found, firsts)
        return found, firsts

    def archive(self, archive_id: str) -> Archive | None:
        """The archive of that id, or None (an id that is not an archive's name is never a path)."""
        if not isinstance(archive_id, str) or not ARCHIVE_ID.fullmatch(archive_id):
            return None
        return next((a for a in self.archives() if a.id == archive_id), None)

    # -- reading ------------------------------------------------------------------

    def read(self, seqs: list[int]) -> dict[int, Located]:
        """The entries of ``seqs`` that can be read (a damaged or missing line is left out)."""
        found = self._read_all(seqs)
        missing = [s for s in seqs if s not in found]
        if missing:  # a compaction may have moved them into a new archive meanwhile
            found.update(self._read_all(missing))
        return found

    def _read_all(self, seqs: list[int]) -> dict[int, Located]:
        archives, firsts = self._listing()
        by_file: dict[Archive | None, list[int]] = {}
        for seq in seqs:
            at = bisect.bisect_right(firsts, seq) - 1
            holder = archives[at] if at >= 0 and archives[at].last >= seq else None
            by_file.setdefault(holder, []).append(seq)
        found: dict[int, Located] = {}
        for archive, wanted in by_file.items():
            with _lines(archive.path if archive else self.paths.log_file) as lines:
                for seq, entry in (lines.entries(wanted) if lines else {}).items():
                    found[seq] = Located(entry, archive.id if archive else None)
        return found

    def last_seq(self) -> int:
        """The newest seq in LOG.md (0 when it has none)."""
        with _lines(self.paths.log_file) as lines:
            return lines.last_seq() if lines else 0

    def newer_than(self, seq: int) -> list[Located]:
        """The readable LOG.md entries after ``seq``, oldest first."""
        with _lines(self.paths.log_file) as lines:
            if lines is None:
                return []
            return [Located(e, None) for e in lines.entries_from(lines.first_from(seq + 1)) if e.seq > seq]

    # -- search -------------------------------------------------------------------

    def search(
        self, text: str, keep: Callable[[Located], bool], haystack: Callable[[LogEntry], str], *,
        before: int | None, after: int | None = None, limit: int, archive: Archive | None = None,
    ) -> list[Located]:
        """Up to ``limit`` entries between ``after`` and ``before`` whose ``haystack`` contains
        ``text`` (any case), newest first.

        Files are read from their end (or from ``before``, found by binary search) back,
        newest file first, a megabyte at a time, and the search stops once ``limit``
        entries are found, so a frequent word costs little. Raw lines are only a first filter: an
        entry is kept when ``haystack(entry)`` (its masked text) holds ``text``, so a
        masked secret is never found by its value.
        """
        needle = text.casefold()
        raw = json.dumps(text, ensure_ascii=False)[1:-1]  # as it appears inside a line's JSON
        if raw.isascii():
            find = _ascii_finder(raw.lower().encode("ascii"))
        else:
            find = _text_finder(re.compile(re.escape(raw), re.IGNORECASE))
        found: list[Located] = []
        seen: set[int] = set()
        for path, archive_id in self._newest_first(archive):
            with _lines(path) as lines:
                end = (lines.size if before is None else lines.first_from(before)) if lines else 0
                for block in lines.blocks_before(end) if lines else ():
                    for raw in reversed(find(block)):
                        entry = parse_or_none(raw)
                        if entry is None or entry.seq in seen:
                            continue
                        if after is not None and entry.seq <= after:
                            return found  # files and lines come newest first: the rest is older still
                        located = Located(entry, archive_id)
                        if needle in haystack(entry).casefold() and keep(located):
                            seen.add(entry.seq)
                            found.append(located)
                            if len(found) >= limit:
                                return found
        return found

    def _newest_first(self, archive: Archive | None) -> Iterator[tuple[Path, str | None]]:
        if archive is not None:
            yield archive.path, archive.id
            return
        yield self.paths.log_file, None
        for item in reversed(self.archives()):
            yield item.path, item.id


def _ascii_finder(needle: bytes) -> Callable[[bytes], list[bytes]]:
    """Lines of a file containing ``needle`` (lowercase ASCII) in any case; one pass over the bytes."""
    def find(data: bytes) -> list[bytes]:
        lowered = data.lower()  # bytes.lower() changes ASCII letters only: offsets stay the same
        lines, at = [], lowered.find(needle)
        while at >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            if end < 0:
                break  # a torn last line
            lines.append(data[start:end])
            at = lowered.find(needle, end)
        return lines
    return find


def _text_finder(pattern: re.Pattern) -> Callable[[bytes], list[bytes]]:
    """Lines of a file matching ``pattern`` (for text beyond ASCII, where case needs Unicode rules)."""
    def find(data: bytes) -> list[bytes]:
        text = data.decode("utf-8", "replace")
        lines, at = [], 0
        while (match := pattern.search(text, at)) is not None:
            start = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.end())
            if end < 0:
                break  # a torn last line
            lines.append(text[start:end].encode("utf-8"))
            at = end
        return lines
    return find


@contextmanager
def _lines(path: Path) -> Iterator[_SortedLines | None]:
    """The lines of ``path`` opened read-only, or None when the file does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        yield None
        return
    try:
        yield _SortedLines(fd)
    finally:
        os.close(fd)
