"""An agent's files: NOW.md and LOG.md (formats, reading, crash-safe writes) and the archives' reading
(atomic replaces, the agent's lock and the fault points are :mod:`core.durable`'s).

Import the names below from here; the modules of this package import each other directly.
"""

from core.memory.files import now_file
from core.memory.files.archive_reading import ArchiveStream, reading
from core.memory.files.log_file import LogFile, ScanResult, scan_bytes
from core.memory.files.log_format import (
    ENTRY_TYPES,
    LogEntry,
    check_entry_type,
    check_text,
    check_writer,
    parse_or_none,
    utc_timestamp,
)
from core.memory.files.now_file import NowState, PlanStep

from core.memory.files.log_format import check_depth

__all__ = [
    "ENTRY_TYPES", "ArchiveStream", "LogEntry", "LogFile", "NowState", "PlanStep", "ScanResult",
    "check_depth", "check_entry_type", "check_text", "check_writer", "now_file", "parse_or_none", "reading",
    "scan_bytes", "utc_timestamp",
]
