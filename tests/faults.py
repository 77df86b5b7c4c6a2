"""Real faults for tests: a read-only file, a full disk, a damaged file, a process killed at a named point.

A read-only file is made with ``chmod`` (or, for root, whom permissions do not stop, with a
read-only bind mount); a full disk is a small tmpfs mounted over the agent's memory folder
and filled up. Where the machine allows neither (no root, no ``mount``), the disk-full case
falls back to the closest imitation: ``os.write`` refusing with ENOSPC and SQLite's
``max_page_count`` refusing to grow memory.db (SQLITE_FULL, the error a full disk gives).

A crash test kills its child at a known step, never after a sleep (which lands elsewhere, or
nowhere, on a busy machine). Two ways: :func:`kill_at` turns one step that is a function of its
own into a SIGKILL at its first call; the product's fault points
(:mod:`core.durable.fault_points`: ``AGENTOS_FAULT_POINT=NAME[@N]`` in the child's environment,
or ``fault_points.arm``) kill at the N-th LOG.md append, file replace, commit or LanceDB write,
of any thread or of one, which is how a trial draws a step at random.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest


def _mount(*args: str) -> bool:
    try:
        return subprocess.run(["mount", *args], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _umount(target: Path) -> None:
    subprocess.run(["umount", "-l", str(target)], capture_output=True, timeout=30)


def read_only_possible() -> str:
    """Why this machine cannot make a file read-only for the current user ("" when it can)."""
    if os.geteuid() != 0:
        return ""
    with tempfile.NamedTemporaryFile() as probe:
        if _mount("--bind", probe.name, probe.name):
            _umount(Path(probe.name))
            return ""
    return "root ignores permissions and this machine refuses a read-only bind mount"


@contextlib.contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """Make ``paths`` (files or folders) read-only for new opens, then writable again."""
    if os.geteuid() != 0:
        modes = [p.stat().st_mode for p in paths]
        for path in paths:
            path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            for path, mode in zip(paths, modes):
                path.chmod(mode)
        return
    mounted: list[Path] = []
    try:
        for path in paths:
            if not (_mount("--bind", str(path), str(path))
                    and _mount("-o", "remount,ro,bind", str(path))):
                pytest.skip("root ignores permissions and this machine refuses a read-only bind mount")
            mounted.append(path)
        yield
    finally:
        for path in reversed(mounted):
            _umount(path)


class FullDisk:
    """The agents home on a small tmpfs that can be filled to the last byte (or an imitation of one)."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch, size: str = "8m") -> None:
        self.folder = folder
        self.monkeypatch = monkeypatch
        folder.mkdir(parents=True, exist_ok=True)
        self.real = os.geteuid() == 0 and _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder))
        self._ballast = folder / ".ballast"
        self._real_write = os.write

    def fill(self, manager=None) -> None:
        """Leave no free space (real), or make writes fail as if there were none (imitation)."""
        if self.real:
            with open(self._ballast, "ab", buffering=0) as handle:
                for size in (1 << 20, 1 << 16, 1 << 12, 1 << 8, 1):
                    with contextlib.suppress(OSError):
                        while True:
                            handle.write(b"\0" * size)
            return

        def no_space(fd: int, data) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        self.monkeypatch.setattr(os, "write", no_space)
        if manager is not None:
            pages = manager.db.conn.execute("PRAGMA page_count").fetchone()[0]
            manager.db.conn.execute(f"PRAGMA max_page_count = {pages}")

    def free(self, manager=None) -> None:
        """Give the space back."""
        if self.real:
            self._ballast.unlink(missing_ok=True)
            return
        self.monkeypatch.setattr(os, "write", self._real_write)
        if manager is not None:
            manager.db.conn.execute("PRAGMA max_page_count = 1073741823")

    def unmount(self) -> None:
        if self.real:
            _umount(self.folder)


@pytest.fixture
def full_disk(agents_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FullDisk]:
    """The test's agents home on an 8 MB tmpfs (create managers after this fixture, close them before it
    ends)."""
    disk = FullDisk(agents_home, monkeypatch)
    yield disk
    disk.free()
    disk.unmount()


def flip_byte(path: Path, offset: int) -> None:
    """Damage ``path`` by inverting one byte (the kind of damage a bad sector does)."""
    mode = path.stat().st_mode
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    path.chmod(mode)


def kill_at(point: str) -> None:
    """Make this process SIGKILL itself when the function ``point`` (``"core.memory.upkeep.scrub._install"``)
    is first called: a named fault point, for a child process of a crash test. The module's global is
    replaced, so the point must be called through its module's namespace (a module-level function, not a
    method)."""
    module_name, _, name = point.rpartition(".")
    module = importlib.import_module(module_name)
    if not callable(getattr(module, name, None)):
        raise ValueError(f"{point} is not a function of {module_name}: not a fault point")

    def killed(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(module, name, killed)
