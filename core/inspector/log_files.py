"""LOG.md and its archives as the inspector reads them: entries by seq, the newest ones, and search.

No request parses a whole history. Each file gets an index of where its entry lines
start and end (by seq), built once by a scan for line heads (``- <seq> ``) and kept
while the file is unchanged: archives never change, and LOG.md only grows between
compactions, so its index is extended from where it stopped (and rebuilt when the
file was replaced or cut). An entry is then one ``pread``, checked against its CRC.
Files are opened read-only and no lock is taken: a line is whole or it is skipped.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from core.memory.log_file import parse_or_none
from core.memory.log_format import LogEntry
from core.paths import AgentPaths

ARCHIVE_ID = re.compile(r"LOG-(\d{1,19})-(\d{1,19})")
"""An archive's id, the stem of its file name."""
_HEAD = re.compile(rb"^- (\d{1,19}) ", re.MULTILINE)
_SCAN_BLOCK = 4 << 20


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


@dataclass
class _FileIndex:
    """Where each entry line of one file lies, by seq (seqs increase down a file)."""

    seqs: list[int] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    """``(start, end)`` byte offsets of each line, newline excluded."""
    scanned: int = 0
    """Bytes indexed so far: always the end of a complete line."""
    identity: tuple[int, int] = (0, 0)
    """(device, inode) of the file indexed."""
    mark: bytes = b""
    """The bytes just before ``scanned``: if they changed, the file was rewritten."""

    def extend(self, fd: int, size: int) -> None:
        """Index the complete lines between ``scanned`` and ``size``."""
        while self.scanned < size:
            block = os.pread(fd, min(_SCAN_BLOCK, size - self.scanned), self.scanned)
            complete = block.rfind(b"\n") + 1
            if not complete:
                if len(block) < size - self.scanned:
                    raise _RescanNeeded  # a line longer than the block: read it whole
                break  # a torn or still-being-written last line
            block = block[:complete]
            for match in _HEAD.finditer(block):
                end = block.index(b"\n", match.start())
                seq = int(match.group(1))
                if not self.seqs or seq > self.seqs[-1]:
                    self.seqs.append(seq)
                    self.spans.append((self.scanned + match.start(), self.scanned + end))
            self.scanned += complete
        self.mark = os.pread(fd, 32, max(0, self.scanned - 32))

    def span_of(self, seq: int) -> tuple[int, int] | None:
        at = bisect.bisect_left(self.seqs, seq)
        return self.spans[at] if at < len(self.seqs) and self.seqs[at] == seq else None


class _RescanNeeded(Exception):
    pass


class LogFiles:
    """The LOG.md and archives of one agent, read-only, safe to share between threads."""

    def __init__(self, paths: AgentPaths) -> None:
        self.paths = paths
        self._guard = threading.Lock()
        self._indexes: dict[Path, _FileIndex] = {}
        self._archives: tuple[int, list[Archive]] = (-1, [])

    # -- files ------------------------------------------------------------------

    def archives(self) -> list[Archive]:
        """Every archive, oldest first (the listing is cached until the folder changes)."""
        folder = self.paths.archive_dir
        try:
            stamp = folder.stat().st_mtime_ns
        except FileNotFoundError:
            return []
        with self._guard:
            if self._archives[0] == stamp:
                return self._archives[1]
        found = []
        with os.scandir(folder) as listing:
            for item in listing:
                match = ARCHIVE_ID.fullmatch(item.name.removesuffix(".md"))
                if match and item.name.endswith(".md") and item.is_file(follow_symlinks=False):
                    first, last = int(match.group(1)), int(match.group(2))
                    found.append(Archive(match.group(0), first, last, Path(item.path), item.stat().st_size))
        found.sort(key=lambda a: (a.first, a.last))
        with self._guard:
            self._archives = (stamp, found)
        return found

    def archive(self, archive_id: str) -> Archive | None:
        """The archive of that id, or None (an id that is not an archive's name is never a path)."""
        if not isinstance(archive_id, str) or not ARCHIVE_ID.fullmatch(archive_id):
            return None
        return next((a for a in self.archives() if a.id == archive_id), None)

    def _archive_holding(self, seq: int, archives: list[Archive]) -> Archive | None:
        at = bisect.bisect_right([a.first for a in archives], seq) - 1
        return archives[at] if at >= 0 and archives[at].last >= seq else None

    def _index(self, path: Path, fd: int) -> _FileIndex:
        """The line index of the open file ``fd`` at ``path``, brought up to date."""
        stat = os.fstat(fd)
        identity = (stat.st_dev, stat.st_ino)
        with self._guard:
            index = self._indexes.get(path)
            fresh = (index is not None and index.identity == identity and index.scanned <= stat.st_size
                     and os.pread(fd, len(index.mark), max(0, index.scanned - len(index.mark))) == index.mark)
            if not fresh:
                index = _FileIndex(identity=identity)
            try:
                index.extend(fd, stat.st_size)
            except _RescanNeeded:
                index = self._index_whole(fd, identity)
            self._indexes[path] = index
            return index

    @staticmethod
    def _index_whole(fd: int, identity: tuple[int, int]) -> _FileIndex:
        """Index a file whose lines are longer than a scan block, reading it at once."""
        data = os.pread(fd, os.fstat(fd).st_size, 0)
        index = _FileIndex(identity=identity)
        for start, end, seq in _heads(data):
            if not index.seqs or seq > index.seqs[-1]:
                index.seqs.append(seq)
                index.spans.append((start, end))
        index.scanned = data.rfind(b"\n") + 1
        index.mark = data[max(0, index.scanned - 32) : index.scanned]
        return index

    # -- reading ------------------------------------------------------------------

    def read(self, seqs: list[int]) -> dict[int, Located]:
        """The entries of ``seqs`` that can be read (a damaged or missing line is left out)."""
        found = self._read_all(seqs)
        missing = [s for s in seqs if s not in found]
        if missing:  # a compaction may have moved them into a new archive meanwhile
            found.update(self._read_all(missing))
        return found

    def _read_all(self, seqs: list[int]) -> dict[int, Located]:
        archives = self.archives()
        by_file: dict[Archive | None, list[int]] = {}
        for seq in seqs:
            by_file.setdefault(self._archive_holding(seq, archives), []).append(seq)
        found: dict[int, Located] = {}
        for archive, wanted in by_file.items():
            found.update(self._read_from(archive, wanted))
        return found

    def _read_from(self, archive: Archive | None, seqs: list[int]) -> dict[int, Located]:
        path = archive.path if archive else self.paths.log_file
        archive_id = archive.id if archive else None
        found = {}
        with _opened(path) as fd:
            if fd is None:
                return {}
            index = self._index(path, fd)
            for seq in seqs:
                span = index.span_of(seq)
                entry = parse_or_none(os.pread(fd, span[1] - span[0], span[0])) if span else None
                if entry is not None and entry.seq == seq:
                    found[seq] = Located(entry, archive_id)
        return found

    def log_seqs(self) -> list[int]:
        """The seqs of the entry lines now in LOG.md, in order."""
        with _opened(self.paths.log_file) as fd:
            return [] if fd is None else list(self._index(self.paths.log_file, fd).seqs)

    def last_seq(self) -> int:
        """The newest seq in LOG.md (0 when it has none)."""
        seqs = self.log_seqs()
        return seqs[-1] if seqs else 0

    def newer_than(self, seq: int) -> list[Located]:
        """The readable LOG.md entries after ``seq``, oldest first."""
        wanted = [s for s in self.log_seqs() if s > seq]
        found = self._read_from(None, wanted) if wanted else {}
        return [found[s] for s in wanted if s in found]

    # -- search -------------------------------------------------------------------

    def search(
        self, text: str, keep: Callable[[Located], bool], haystack: Callable[[LogEntry], str], *,
        before: int | None, after: int | None = None, limit: int, archive: Archive | None = None,
    ) -> list[Located]:
        """Up to ``limit`` entries between ``after`` and ``before`` whose ``haystack`` contains
        ``text`` (any case), newest first.

        Files are read newest first and the search stops once ``limit`` entries are
        found, so a frequent word costs little. Raw lines are only a first filter: an
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
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            for entry in reversed([e for e in map(parse_or_none, find(data)) if e is not None]):
                if after is not None and entry.seq <= after:
                    return found  # files and lines come newest first: the rest is older still
                if entry.seq in seen or (before is not None and entry.seq >= before):
                    continue
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


def _heads(data: bytes) -> Iterator[tuple[int, int, int]]:
    """``(start, end, seq)`` of each complete entry line of ``data``."""
    for match in _HEAD.finditer(data):
        end = data.find(b"\n", match.start())
        if end < 0:
            return
        yield match.start(), end, int(match.group(1))


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
def _opened(path: Path) -> Iterator[int | None]:
    """A read-only descriptor of ``path``, or None when the file does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)
