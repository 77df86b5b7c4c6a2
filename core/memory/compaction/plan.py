"""What one LOG.md compaction archives and reports, read from LOG.md's lines (see
:mod:`core.memory.compaction.log_compaction` for the protocol)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from core.durable import foreground
from core.memory.files.log_file import parse_or_none
from core.memory.files.log_format import HEADER, LogEntry

log = logging.getLogger(__name__)

RESERVED = "reserved"
"""The ``compaction`` metadata value of a reservation entry."""


@dataclass(frozen=True)
class Plan:
    """What one compaction archives: LOG.md bytes ``[0, offset)``, entries first..last."""

    first_seq: int
    last_seq: int
    seq: int
    """The reservation's seq, which the SUMMARY takes over."""
    offset: int
    """Start of the reservation line (end of entry ``last_seq``)."""
    line_end: int
    """End of the reservation line: everything after it is kept."""
    source: bytes
    entries: tuple[LogEntry, ...]
    resumed: bool

    @property
    def archive_id(self) -> str:
        return f"LOG-{self.first_seq}-{self.last_seq}"


@dataclass
class CompactionReport:
    """The outcome of :meth:`LogCompactor.run`."""

    done: bool = False
    """True when LOG.md was swapped by this run."""
    reason: str = ""
    """Why nothing was done (below threshold, busy, empty) or what a dry run would do."""
    archive_id: Optional[str] = None
    archive_path: Optional[Path] = None
    first_seq: int = 0
    last_seq: int = 0
    entries: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    summary_method: str = ""
    docs_indexed: int = 0
    """Recall docs written for the archive's entries and summary (their vectors follow in the background)."""
    index_error: Optional[str] = None
    """Set when the cold store failed; the archive is indexed at the next start."""
    resumed: bool = False
    """True when this run finished a compaction a killed process had started."""
    recovered: list[str] = field(default_factory=list)
    """Archives whose interrupted post-swap steps this run finished."""


def compacted_header(seq: int) -> bytes:
    """The header of a compacted LOG.md; ``last_seq`` keeps seqs increasing if every entry is lost."""
    return (HEADER.rstrip("\n")[: -len("-->")] + f"last_seq={seq} -->\n").encode("utf-8")


def lines_of(data: bytes, start: int = 0) -> Iterator[tuple[int, int, LogEntry | None]]:
    """``(start, end, entry or None)`` for every complete line from offset ``start``; end includes the
    newline."""
    while start < len(data):
        foreground.give_way()  # a compaction's parse of a long LOG.md leaves the GIL to the writers
        end = data.find(b"\n", start)
        if end < 0:
            return
        yield start, end + 1, parse_or_none(data[start:end])
        start = end + 1


def report_damaged(lines: list) -> None:
    """Warn about the lines that will be archived although they cannot be read (a header or blank line
    aside)."""
    for start, end, entry in lines:
        if entry is None and start > 0 and end - start > 1:
            log.warning("LOG.md line at byte %d cannot be read; it is archived as it is, skipped by recall",
                        start)


def find_reservation(data: bytes, lines: list, first_seq: int) -> Plan | None:
    """The reservation that covers LOG.md from its first entry up to the line before it, if any."""
    previous = None
    for start, end, entry in lines:
        if entry is None:
            continue
        meta = entry.metadata
        if (entry.type == "SYSTEM" and meta.get("compaction") == RESERVED and previous is not None
                and meta.get("covers") == [first_seq, previous.seq]):
            archived = [line for line in lines if line[0] < start]
            report_damaged(archived)
            return Plan(first_seq, previous.seq, entry.seq, start, end, data[:start],
                        tuple(e for _, _, e in archived if e is not None), True)
        previous = entry
    return None
