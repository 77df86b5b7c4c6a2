"""Checks shared by the compaction tests."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from core.memory.files.log_file import scan_bytes


def seq_counts(memory_dir: Path) -> Counter:
    """How often each seq appears across LOG.md and every archive."""
    counts: Counter = Counter()
    files = [memory_dir / "LOG.md", *sorted((memory_dir / "archive").glob("LOG-*.md"))]
    for path in files:
        counts.update(e.seq for e in scan_bytes(path.read_bytes(), path).entries)
    return counts


def assert_each_seq_once(memory_dir: Path, last_seq: int) -> None:
    """Every seq 1..last_seq appears exactly once across LOG.md and the archives."""
    counts = seq_counts(memory_dir)
    doubled = {s: n for s, n in counts.items() if n > 1}
    missing = [s for s in range(1, last_seq + 1) if s not in counts]
    assert not doubled and not missing, f"doubled {doubled}, missing {missing}"
