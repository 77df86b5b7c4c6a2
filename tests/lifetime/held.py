"""What a process holds: its open files (by path), its threads (Python's and native) and its memory."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def open_paths(pid: int | str = "self") -> list[str]:
    """The targets of the process's open descriptors (files by path; sockets, pipes as ``socket:[…]``)."""
    folder = Path(f"/proc/{pid}/fd")
    targets = []
    for fd in os.listdir(folder):
        try:
            targets.append(os.readlink(folder / fd))
        except FileNotFoundError:  # closed while listed
            continue
    return targets


def open_under(folder: Path, pid: int | str = "self") -> list[str]:
    """The open files of the process that lie in ``folder``."""
    root = str(folder.resolve()) + os.sep
    return sorted(target for target in open_paths(pid) if target.startswith(root))


def descriptors(pid: int | str = "self") -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def native_threads(pid: int | str = "self") -> int:
    """Every thread of the process, those the interpreter does not know of (LanceDB's, ONNX's) included."""
    return len(os.listdir(f"/proc/{pid}/task"))


def named_threads(pid: int | str, name: str) -> int:
    """How many threads of the process have the name ``name`` (Linux's 15-character ``comm``); Python's own
    threads and the interpreter's are ``python``, LanceDB's pools name theirs (``lance_backgroun``, ...)."""
    count = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm", encoding="utf-8") as comm:
                count += comm.read().strip() == name
        except FileNotFoundError:  # ended while listed
            continue
    return count


def agent_threads(name: str) -> list[str]:
    """The names of this process's live threads that work for agent ``name`` (``agentos-<what>-<name>``)."""
    return [t.name for t in threading.enumerate() if t.name.startswith("agentos-")
            and t.name.endswith(f"-{name}")]


def rss_kib(pid: int | str = "self") -> int:
    """The resident memory of the process, in KiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")
