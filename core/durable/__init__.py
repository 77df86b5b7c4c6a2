"""Durable writes and what surrounds them, for the memory and for anything else that writes a file.

A crash leaves the old file or the new one, never a torn one (:func:`atomic_write`, :class:`StagedFile`);
an OS error becomes a StorageError that names the fix (:func:`storage_error`); the agent's lock
(:class:`AgentLock`) and its in-use marker (:class:`InUse`) serialise writers across threads and
processes; crash tests kill a process at a named step (:mod:`~core.durable.fault_points`); and
background work gives way to the writers of its process (:mod:`~core.durable.foreground`).

Import the names below from here; the modules of this package import each other directly.
"""

from core.durable import fault_points, foreground
from core.durable.foreground import background_thread, leave_ctrl_c_to_the_main_thread
from core.durable.fsutil import (
    StagedFile,
    atomic_write,
    converting_os_errors,
    datasync,
    fsync_dir,
    os_error_number,
    public_methods_converting_os_errors,
    remove_orphan_temp_files,
    remove_stale_temp_files,
    storage_error,
    write_all,
)
from core.durable.in_use import IN_USE, InUse, replacing
from core.durable.locking import AgentLock
from core.durable.plain_json import decode_json_at, load_json
from core.durable.plain_yaml import load_yaml, yaml_error_line

from core.durable.fsutil import TOO_MANY_FILES_FIX

__all__ = [
    "IN_USE", "TOO_MANY_FILES_FIX", "AgentLock", "InUse", "StagedFile", "atomic_write", "background_thread",
    "converting_os_errors", "datasync", "decode_json_at", "fault_points", "foreground", "fsync_dir",
    "leave_ctrl_c_to_the_main_thread", "load_json", "load_yaml", "os_error_number",
    "public_methods_converting_os_errors",
    "remove_orphan_temp_files", "remove_stale_temp_files", "replacing", "storage_error", "write_all",
    "yaml_error_line",
]
