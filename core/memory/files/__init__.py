"""An agent's files: NOW.md and LOG.md (formats, reading, crash-safe writes), atomic replaces,
the agent's lock and the named fault points of the write paths.

Import the names below from here; the modules of this package import each other directly.
"""

from core.memory.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "ArchiveStream": "archive_reading",
    "ENTRY_TYPES": "log_format",
    "IN_USE": "in_use",
    "InUse": "in_use",
    "LogEntry": "log_format",
    "NowState": "now_file",
    "ScanResult": "log_file",
    "atomic_write": "fsutil",
    "check_depth": "log_format",
    "check_entry_type": "log_format",
    "check_text": "log_format",
    "check_writer": "log_format",
    "converting_os_errors": "fsutil",
    "fsync_dir": "fsutil",
    "load_yaml": "plain_yaml",
    "yaml_error_line": "plain_yaml",
    "os_error_number": "fsutil",
    "parse_or_none": "log_file",
    "public_methods_converting_os_errors": "fsutil",
    "reading": "archive_reading",
    "remove_orphan_temp_files": "fsutil",
    "replacing": "in_use",
    "scan_bytes": "log_file",
    "storage_error": "fsutil",
    "utc_timestamp": "log_format",
})
