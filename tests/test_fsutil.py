"""The crash-safe file primitives: staged replacement of a file and its failure paths."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from core.errors import StorageError
from core.durable.fsutil import StagedFile, atomic_write

pytestmark = pytest.mark.bare_home  # the tests list tmp_path: no agents home in it


def test_a_staged_file_is_invisible_until_installed(tmp_path: Path) -> None:
    target = tmp_path / "NOW.md"
    atomic_write(target, b"old")
    staged = StagedFile(target, b"new", start_flush=True)
    assert target.read_bytes() == b"old"
    staged.install()
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["NOW.md"]


def test_a_discarded_staged_file_leaves_the_target_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "NOW.md"
    atomic_write(target, b"old")
    StagedFile(target, b"new").discard()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["NOW.md"]


def test_discarding_after_install_closes_no_other_descriptor(tmp_path: Path) -> None:
    staged = StagedFile(tmp_path / "NOW.md", b"new")
    staged.install()
    read_end, write_end = os.pipe()  # may reuse the staged file's old descriptor number
    try:
        staged.discard()
        os.write(write_end, b"still open")
        assert os.read(read_end, 10) == b"still open"
    finally:
        os.close(read_end)
        os.close(write_end)
    assert (tmp_path / "NOW.md").read_bytes() == b"new"


def test_a_refused_writeback_hint_does_not_fail_the_write(tmp_path: Path, monkeypatch) -> None:
    def refuse(*args) -> None:
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "posix_fadvise", refuse, raising=False)
    StagedFile(tmp_path / "NOW.md", b"new", start_flush=True).install()
    assert (tmp_path / "NOW.md").read_bytes() == b"new"


def test_a_failed_flush_is_a_storage_error_that_leaves_the_target(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "NOW.md"
    atomic_write(target, b"old")

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(StorageError, match="cannot write .*NOW.md"):
        atomic_write(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["NOW.md"]
