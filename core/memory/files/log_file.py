"""LOG.md on disk: crash-safe appends, tail reads, full scans and torn-tail repair.

Every append happens under the agent's lock, as one ``os.write`` of the whole
line followed by ``fdatasync``; a write or flush that fails is cut off again, so
a refused append leaves nothing behind. Readers need no lock: a line is either
whole (and its CRC proves it) or it is the torn tail of a crashed writer, which
the next writer, or :meth:`LogFile.repair`, moves to ``memory/quarantine/``.
A whole last entry whose newline an editor stripped is kept (its CRC proves it
whole), and a file an editor saved with CRLF line ends is converted back.
"""

from __future__ import annotations

import logging
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from core.errors import CorruptionError, StorageError, ValidationError
from core.durable import (
    AgentLock, atomic_write, datasync, fault_points, foreground, fsync_dir, storage_error, write_all,
)
from core.memory.files.log_format import (
    HEADER,
    LogEntry,
    check_entry_type,
    check_metadata,
    check_text,
    decode_line,
    encode_entry,
    is_header,
    normalise_line_ends,
    parse_or_none,
    utc_timestamp,
)

log = logging.getLogger(__name__)

_TAIL_BLOCK = 8192
_SEQ_PREFIX = re.compile(rb"(?m)^- (\d+) ")


@dataclass
class BadLine:
    """A line of LOG.md that failed to parse; it is skipped, the lines after it are kept."""

    line_no: int
    """1-based physical line number."""
    offset: int
    """Byte offset of the line's start."""
    reason: str
    """Why it was rejected."""


@dataclass
class ScanResult:
    """Every readable entry of a LOG.md, plus the lines that were not."""

    entries: list[LogEntry] = field(default_factory=list)
    bad_lines: list[BadLine] = field(default_factory=list)


class LogFile:
    """One agent's LOG.md."""

    def __init__(
        self, path: Path, lock: AgentLock, quarantine_dir: Path, max_entry_bytes: int = 64 * 1024,
        seq_floor: Callable[[], int] | None = None,
        redactor: Callable[[], Callable[[Any], Any]] | None = None,
    ) -> None:
        """``seq_floor()`` returns the highest seq ever handed out (the index's), so none is reused;
        ``redactor()`` returns what hides the secrets known now (a
        :class:`core.memory.secrets.redaction.Redactor`), applied to every line written: the files below the
        secrets are handed it, they do not import it."""
        self.path = path
        self.redactor = redactor
        self.lock = lock
        self.quarantine_dir = quarantine_dir
        self.max_entry_bytes = max_entry_bytes
        self.seq_floor = seq_floor
        self._cache: tuple[tuple[int, int, int], int] | None = None  # ((inode, size, mtime), last seq)
        self._quarantined_seq = 0  # highest seq seen in a tail this process moved to quarantine

    def ensure_exists(self) -> bool:
        """Create LOG.md with its header if missing; return True if created."""
        if self.path.exists():
            return False
        with self.lock.hold():
            if self.path.exists():
                return False
            atomic_write(self.path, HEADER.encode("utf-8"))
            return True

    def build_line(
        self, seq: int, entry_type: str, content: object, metadata: dict[str, Any] | None
    ) -> tuple[LogEntry, bytes]:
        """Validate an entry and return it with its encoded line."""
        check_entry_type(entry_type)
        text = check_text(content, "LOG entry content")
        if metadata is not None and not isinstance(metadata, dict):
            raise ValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
        check_metadata(metadata)
        if self.redactor is not None:
            redactor = self.redactor()
            text, metadata = redactor(text), redactor(metadata)
        size = len(text.encode("utf-8"))
        if size > self.max_entry_bytes:
            raise ValidationError(
                f"LOG entry of {size} bytes exceeds the limit of {self.max_entry_bytes} bytes; "
                "store large content in the workspace or with store_memory and log a pointer"
            )
        ts = utc_timestamp()
        line = encode_entry(seq, ts, entry_type, text, metadata)
        meta_limit = self.max_entry_bytes + 4096
        if len(line) - size > meta_limit:
            raise ValidationError(
                f"LOG entry metadata of {len(line) - size} bytes (encoded) exceeds the limit of "
                f"{meta_limit} bytes; log a pointer to large data instead"
            )
        return LogEntry(seq, ts, entry_type, text, dict(metadata or {})), line

    def append(
        self, entry_type: str, content: object, metadata: dict[str, Any] | None = None
    ) -> LogEntry:
        """Append one entry and return it; raises ValidationError and writes nothing on bad input."""
        with self.appending(entry_type, content, metadata) as entry:
            pass
        return entry

    @contextmanager
    def appending(
        self, entry_type: str, content: object, metadata: dict[str, Any] | None = None
    ) -> Iterator[LogEntry]:
        """Append one entry, yielding it once its line is written; the line is flushed as the block ends.

        A write that the block starts reaches the disk along with that flush: ``update_now``
        writes NOW.md's temp file there. Raises ValidationError and writes nothing on bad input.
        """
        check_entry_type(entry_type)
        with self.lock.hold():
            self.ensure_exists()
            fd = self._open_for_append()
            try:
                entry, line = self.build_line(self._last_seq_locked(fd) + 1, entry_type, content, metadata)
                start = os.fstat(fd).st_size
                doing = "append to"
                try:
                    fault_points.reach("log.append")
                    write_all(fd, line)
                    yield entry
                    doing = "flush"
                    datasync(fd)
                    fault_points.reach("log.appended")
                except BaseException as exc:
                    self._cut(fd, start)  # refused: nothing of the line stays behind
                    if isinstance(exc, OSError):
                        raise storage_error(exc, f"cannot {doing} {self.path}") from exc
                    raise
                self._cache = (_identity(os.fstat(fd)), entry.seq)
            finally:
                os.close(fd)

    def _cut(self, fd: int, size: int) -> None:
        """Truncate LOG.md back to ``size`` bytes after a failed append (the lock is held)."""
        self._cache = None
        try:
            os.ftruncate(fd, size)
            datasync(fd)
        except OSError as exc:  # the next writer's repair moves the piece to quarantine
            log.error("could not cut a failed append off %s (%s); it is repaired at the next write",
                      self.path, exc)

    def retract(self, entry: LogEntry) -> bool:
        """Remove ``entry`` if it is still the last line (a write that depended on it failed); True if
        removed."""
        line = encode_entry(entry.seq, entry.ts, entry.type, entry.content, entry.metadata or None)
        with self.lock.hold():
            try:
                fd = os.open(self.path, os.O_RDWR)
            except OSError as exc:
                raise storage_error(exc, f"cannot open {self.path}") from exc
            try:
                size = os.fstat(fd).st_size
                if size < len(line) or _read_at(fd, size - len(line), len(line)) != line:
                    return False
                self._cut(fd, size - len(line))
                return True
            finally:
                os.close(fd)

    def last_seq(self) -> int:
        """Return the seq of the last whole entry (0 for an empty log)."""
        cache = self._cache
        try:
            if cache and cache[0] == _identity(self.path.stat()):
                return cache[1]  # this process wrote the last line of this very file
        except FileNotFoundError:
            return 0
        for entry in self.tail(1):
            return entry.seq
        return self._header_floor()

    def _open_for_append(self) -> int:
        """LOG.md opened for appending (the lock is held), its tail repaired first if it lacks a newline."""
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                raise storage_error(exc, f"cannot append to {self.path}") from exc
            try:
                size = os.fstat(fd).st_size
                if not size or _read_at(fd, size - 1, 1) == b"\n":
                    return fd
            except OSError as exc:
                os.close(fd)
                raise storage_error(exc, f"cannot read {self.path}") from exc
            os.close(fd)
            self._repair_locked()  # may replace the file: it is opened again
        raise StorageError(f"{self.path} still lacks its final newline after a repair; check the disk")

    def _last_seq_locked(self, fd: int) -> int:
        stat = os.fstat(fd)
        if self._cache and self._cache[0] == _identity(stat):
            return self._cache[1]
        entries = self.tail(1)
        last = entries[0].seq if entries else self._header_floor()
        floor = self.seq_floor() if self.seq_floor is not None else 0
        return max(last, floor, self._quarantined_seq)

    def _header_floor(self) -> int:
        """The seq before the first entry, as a compacted log's header may record it."""
        try:
            with open(self.path, "rb") as handle:
                first = handle.readline()
        except FileNotFoundError:
            return 0
        marker = b"last_seq="
        if is_header(first) and marker in first:
            digits = first.split(marker, 1)[1].split()[0].rstrip(b"->")
            if digits.isdigit():
                return int(digits)
        return 0

    def first_entry(self) -> LogEntry | None:
        """The first readable entry (the SUMMARY of a compacted log), or None."""
        try:
            with open(self.path, "rb") as handle:
                for raw in handle:
                    if raw.endswith(b"\n") and (entry := parse_or_none(raw[:-1])) is not None:
                        return entry
        except FileNotFoundError:
            pass
        return None

    def tail(self, n: int = 20) -> list[LogEntry]:
        """Return the last ``n`` readable entries, oldest first, reading from the file's end."""
        found: list[LogEntry] = []
        if n > 0:
            for entry in self.newest_first():
                found.append(entry)
                if len(found) >= n:
                    break
        return list(reversed(found))

    def newest_first(self) -> Iterator[LogEntry]:
        """The readable entries from the file's end backwards (read a block at a time, as far as asked)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            end = os.fstat(fd).st_size
            carry: list[bytes] = []  # the pieces of the line cut by the block read next, last piece first
            while end > 0:
                start = max(0, end - _TAIL_BLOCK)
                block = _read_at(fd, start, end - start)
                if start > 0 and b"\n" not in block:
                    carry.append(block)  # inside a long line: joined once, when its start is met
                    end = start
                    continue
                lines = b"".join([block, *reversed(carry)]).split(b"\n")
                carry = [lines[0]] if start > 0 else []
                for raw in reversed(lines[1:] if start > 0 else lines):
                    foreground.give_way()  # a background reader's long parse leaves the GIL to the writers
                    entry = parse_or_none(raw)
                    if entry is not None:
                        yield entry
                end = start
        finally:
            os.close(fd)

    def scan(self) -> ScanResult:
        """Parse the whole file; damaged lines are reported and skipped."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return ScanResult()
        return scan_bytes(data, self.path)

    def repair(self) -> Path | None:
        """Convert CRLF line ends, restore a stripped final newline, and move a torn or corrupt
        tail to the quarantine folder; return the quarantine file, if any."""
        with self.lock.hold():
            return None if self.tail_is_sound() else self._repair_locked()

    def tail_is_sound(self) -> bool:
        """True when the file ends with a newline, has LF line ends and its last line is a valid entry or the
        header."""
        try:
            with open(self.path, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - _TAIL_BLOCK))
                block = handle.read()
        except FileNotFoundError:
            return True
        except OSError as exc:
            raise storage_error(exc, f"cannot read {self.path}") from exc
        if not block:
            return True
        if not block.endswith(b"\n") or b"\r\n" in block:
            return False
        last = block[:-1].rsplit(b"\n", 1)[-1]
        if len(block) < size and b"\n" not in block[:-1]:
            return False  # a last line longer than the block: let the full check decide
        return is_header(last) or parse_or_none(last) is not None

    def _repair_locked(self) -> Path | None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise storage_error(exc, f"cannot read {self.path}") from exc
        fixed = normalise_line_ends(data)
        if fixed != data:
            self._rewrite(fixed, "restored LF line ends and the final newline of its whole entries")
            data = fixed
        keep = len(data)
        if not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
        while keep > 0:
            start = data.rfind(b"\n", 0, keep - 1) + 1
            raw = data[start : keep - 1]
            if start == 0 and is_header(raw):
                break
            if parse_or_none(raw) is not None:
                break
            keep = start
        if keep == len(data):
            return None
        seqs = [int(s) for s in _SEQ_PREFIX.findall(data[keep:])]
        self._quarantined_seq = max([self._quarantined_seq, *seqs])
        target = self.quarantine_dir / f"LOG-tail-{utc_timestamp().replace(':', '')}-{os.getpid()}.md"
        try:
            self.quarantine_dir.mkdir(parents=True, exist_ok=True)
            atomic_write(target, data[keep:])
            with open(self.path, "r+b") as handle:
                handle.truncate(keep)
                handle.flush()
                os.fsync(handle.fileno())
            fsync_dir(self.path.parent)
        except OSError as exc:
            raise storage_error(exc, f"cannot move the torn tail of {self.path} to {target}") from exc
        self._cache = None
        log.warning(
            "LOG.md had a torn tail of %d bytes; moved it to %s", len(data) - keep, target
        )
        return target

    def _rewrite(self, data: bytes, what: str) -> None:
        atomic_write(self.path, data)
        self._cache = None
        log.warning("LOG.md %s: %s", what, self.path)


def scan_bytes(data: bytes, where: object) -> ScanResult:
    """Parse LOG.md-format bytes (a log or an archive); damaged lines are reported and skipped."""
    result = ScanResult()
    offset = 0
    for line_no, raw in enumerate(foreground.paced(data.split(b"\n")), start=1):
        complete = offset + len(raw) < len(data)
        start, offset = offset, offset + len(raw) + 1
        if not raw or (line_no == 1 and is_header(raw)):
            continue
        if not complete and parse_or_none(raw) is None:
            result.bad_lines.append(BadLine(line_no, start, "torn line (no newline)"))
            continue
        try:
            result.entries.append(decode_line(raw))
        except CorruptionError as exc:
            result.bad_lines.append(BadLine(line_no, start, str(exc)))
    for bad in result.bad_lines:
        log.warning("%s line %d skipped: %s", where, bad.line_no, bad.reason)
    return result


def _identity(stat: os.stat_result) -> tuple[int, int, int]:
    """What tells this LOG.md apart from any other version of it (a replaced file may reuse the inode)."""
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _read_at(fd: int, offset: int, length: int) -> bytes:
    return os.pread(fd, length, offset)
