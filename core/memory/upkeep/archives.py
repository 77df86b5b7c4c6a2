"""An agent's LOG.md archives (``archive/LOG-<first>-<last>.md``) as history: which there are, in order."""

from __future__ import annotations

from pathlib import Path

from core.memory.files.log_file import LogFile


def archives(archive_dir: Path, log_file: LogFile) -> list[Path]:
    """The agent's archives, oldest first (by their first seq).

    An archive whose entries LOG.md still holds was written by a compaction killed before its
    swap: it is not history yet (the next compaction reuses it), so it is left out.
    """
    first = log_file.first_entry()
    start = first.seq if first is not None else float("inf")
    found = [p for p in archive_dir.glob("LOG-*.md") if _seqs(p) and _seqs(p)[1] < start]
    return sorted(found, key=lambda p: _seqs(p)[0])


def _seqs(path: Path) -> tuple[int, int] | None:
    """The first and last seq in an archive's name ``LOG-<first>-<last>``, or None for another name."""
    parts = path.stem.split("-")
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return int(parts[1]), int(parts[2])
    return None


def has_history(archive_dir: Path, log_file: LogFile) -> bool:
    """True when LOG.md or an archive holds entries: the agent is not new."""
    return log_file.last_seq() > 0 or bool(archives(archive_dir, log_file))


def archive_first_seq(path: Path) -> int:
    """The first seq of an archive from its name ``LOG-<first>-<last>.md`` (0 if it is not of that form)."""
    parts = path.stem.split("-")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 0
