"""Archives as an attacker writes them: any member, any memory.db, and a manifest that matches (sha256 is no
secret), so that only the importer's own checks stand between the archive and the agents home."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import tarfile
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pytest

from core.memory_initializer import initialize_agent_memory
from core.memory_manager import MemoryManager
from core.transfer import export_agent

DB = "agent/memory/memory.db"


@contextmanager
def in_home(home: Path) -> Iterator[None]:
    """Make ``home`` the agents home for the block."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTOS_HOME", str(home))
        yield


def exported(home: Path, folder: Path, name: str = "finn") -> Path:
    """An archive of a small agent ``name`` (facts, a note, LOG entries) exported from ``home``."""
    archive = folder / f"{name}.agentos.tar.gz"
    with in_home(home):
        initialize_agent_memory(name)
        with MemoryManager(name) as manager:
            manager.save_fact("city", "Porto")
            manager.save_fact("favourite_colour", "teal", category="preference")
            manager.store_memory("The quarterly report goes to Maria on Fridays")
            for n in range(3):
                manager.append_log("THOUGHT", f"step {n} of the report")
        export_agent(name, archive)
    return archive


def members(archive: Path) -> tuple[dict, dict[str, bytes]]:
    """The manifest and the files (name to bytes, in archive order) of an agent archive."""
    with tarfile.open(archive, "r:gz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}
    return json.loads(files.pop("manifest.json")), files


def write(target: Path, manifest: dict, files: dict[str, bytes], *,
          extra: Callable[[tarfile.TarFile], None] | None = None,
          fmt: int = tarfile.PAX_FORMAT) -> Path:
    """An agent archive of ``files`` whose manifest lists each with its true sha256 and size."""
    manifest = {**manifest, "files": {name: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
                                      for name, data in files.items()}}
    with tarfile.open(target, "w:gz", format=fmt) as tar:
        for name, data in [("manifest.json", json.dumps(manifest).encode()), *files.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if extra is not None:
            extra(tar)
    return target


def recrafted(archive: Path, target: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    """``archive`` with its files changed by ``change(files)`` (in place) and a manifest that matches."""
    manifest, files = members(archive)
    change(files)
    return write(target, manifest, files)


def altered_db(data: bytes, scratch: Path, *statements: str) -> bytes:
    """memory.db ``data`` with ``statements`` run on it (as anyone may with sqlite3)."""
    scratch.write_bytes(data)
    with closing(sqlite3.connect(scratch)) as conn, conn:
        for statement in statements:
            conn.execute(statement)
    return scratch.read_bytes()


def tree(folder: Path) -> dict[str, str]:
    """Every path under ``folder`` with its content's sha256 (folders as ``/``): byte-identical or not."""
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): "/" if p.is_dir()
            else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))}
