"""An agent's files: NOW.md and LOG.md (formats, reading, crash-safe writes), atomic replaces,
the agent's lock and the named fault points of the write paths.

Import the names below from here; the modules of this package import each other directly.
"""

from core.memory.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "ArchiveStream": "archive_reading",
    "ENTRY_TYPES": "log_format",
    "LogEntry": "log_format",
    "NowState": "now_file",
    "ScanResult": "log_file",
    "check_depth": "log_format",
    "check_entry_type": "log_format",
    "check_text": "log_format",
    "check_writer": "log_format",
    "yaml_error_line": "plain_yaml",
    "parse_or_none": "log_file",
    "reading": "archive_reading",
    "scan_bytes": "log_file",
    "utc_timestamp": "log_format",
})
