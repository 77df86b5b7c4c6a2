"""Purging a space: the text of its forgotten memories taken out of the journal and the index.

A forget leaves the text in the journal as the record (a FORGET entry names the memories; recall and a
rebuilt index leave them out). A purge (``Space.purge_forgotten``, ``agentos forget --space NAME
--purge``) removes it, with the steps of an agent's own purge:

1. ``.purging`` is written in the space's folder: from here on, whoever opens the space finishes the purge;
2. under the space's lock, each PUBLISH line of a forgotten memory is rewritten with the same seq, time
   and author, ``[purged]`` for its content, no metadata and a new checksum, and the journal is replaced
   atomically (a temp file, fsync, rename); a SYSTEM entry records which memories were purged;
3. the index: ``index.db`` with ``secure_delete`` on, its full-text index merged (``optimize``), the whole
   file rewritten (``VACUUM``) and its write-ahead log truncated, so that no freed page or log frame keeps
   the words; on PostgreSQL the space's schema as an agent's scrub leaves it (the rows deleted, the tables
   vacuumed, the full-text index rebuilt); copies of a damaged index moved aside earlier are deleted;
4. ``.purging`` is removed.

Every step can run again: a purge killed anywhere is finished by the next open, and rewriting a line
already purged changes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from core.errors import CorruptionError
from core.durable import atomic_write, fsync_dir, remove_stale_temp_files
from core.memory.files.log_format import decode_line, encode_entry, is_header, utc_timestamp

log = logging.getLogger(__name__)

PENDING = ".purging"
PURGED = "[purged]"


@dataclass
class PurgeReport:
    """What one purge of a space changed (ids and counts, never a text)."""

    purged: list[int] = field(default_factory=list)
    """The seqs of the journal lines rewritten now."""
    index_scrubbed: bool = False
    """Whether the index was rewritten to the last byte (False: a reader kept its log; the next open
    retries)."""
    removed: list[str] = field(default_factory=list)
    """Damaged copies of the index that were deleted."""


def pending(space: Any) -> bool:
    """Whether a purge of ``space`` was started and has not finished."""
    return (space.paths.root / PENDING).exists()


def purge(space: Any) -> PurgeReport:
    """Take the text of ``space``'s forgotten memories out of its journal and its index (see the module)."""
    marker = space.paths.root / PENDING
    report = PurgeReport()
    with space.lock.hold():
        atomic_write(marker, (utc_timestamp() + "\n").encode("ascii"))
        remove_stale_temp_files(space.paths.journal)  # a journal rewrite killed before its rename
        report.purged = _rewrite_journal(space)
        if report.purged:
            space.journal.append("SYSTEM", f"purged the text of {len(report.purged)} forgotten memories",
                                 {"purged": report.purged})
        index = space.index()
        index.sync()
        report.index_scrubbed = index.scrub()
        for copy in sorted(space.paths.root.glob("index.db.damaged-*")):
            copy.unlink()
            report.removed.append(copy.name)
        if report.index_scrubbed:
            marker.unlink()
        fsync_dir(space.paths.root)
    if not report.index_scrubbed:
        log.warning("space %s: the purge could not truncate the index's log (a reader holds it); the next "
                    "open of the space finishes it", space.name)
    return report


def _rewrite_journal(space: Any) -> list[int]:
    """Rewrite the PUBLISH lines of forgotten memories (the lock is held); return their seqs."""
    path = space.paths.journal
    data = path.read_bytes()
    lines = data.split(b"\n")
    entries = []
    for number, raw in enumerate(lines):
        if not raw or (number == 0 and is_header(raw)):
            continue
        try:
            entries.append((number, decode_line(raw)))
        except CorruptionError:  # a damaged line is no memory of the space: left as it is
            continue
    forgotten = {s for _, e in entries if e.type == "FORGET" for s in e.metadata.get("forget", [])}
    purged = []
    for number, entry in entries:
        if entry.type != "PUBLISH" or entry.seq not in forgotten or entry.content == PURGED:
            continue
        meta = {"author": entry.metadata.get("author", ""), "metadata": {}}
        lines[number] = encode_entry(entry.seq, entry.ts, entry.type, PURGED, meta)[:-1]
        purged.append(entry.seq)
    if purged:
        atomic_write(path, b"\n".join(lines))
    return purged
