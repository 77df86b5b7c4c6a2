"""Workspace file tools: read, write and list files inside ``agents/<name>/workspace/`` only.

A path is refused (ToolArgumentError, nothing touched) when it is absolute,
contains ``..`` or a NUL character, is longer than the file system allows
(``MAX_NAME_BYTES`` a name, ``MAX_PATH_CHARS`` in all), or resolves (through
symlinks) outside the workspace. A write is atomic; the temp file of a write whose
process was killed is removed when the tools are next built.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path, PurePosixPath
from typing import Any

from core.errors import NotFoundError, ToolArgumentError
from core.durable import atomic_write, remove_orphan_temp_files, storage_error
from core.memory import check_text

log = logging.getLogger(__name__)

MAX_READ_BYTES = 256 * 1024
MAX_WRITE_BYTES = 1024 * 1024
MAX_LISTED = 500
MAX_NAME_BYTES = 255
"""Longest file or folder name (UTF-8 bytes), as on ext4, APFS and most file systems."""
MAX_PATH_CHARS = 1024
"""Longest workspace-relative path."""


class Workspace:
    """The file tools of one agent, confined to its workspace folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def sweep(self) -> list[Path]:
        """Remove the temp files that killed writes left in the workspace; return them."""
        removed = remove_orphan_temp_files(self.root)
        for tmp in removed:
            log.warning("removed %s, left by a file write whose process was killed", tmp)
        return removed

    def resolve(self, path: object) -> Path:
        """The absolute path of a workspace-relative ``path``; ToolArgumentError if it would escape."""
        if not isinstance(path, str) or not path.strip():
            raise ToolArgumentError("path must be a non-empty workspace-relative string, e.g. notes/plan.md")
        if "\x00" in path:
            raise ToolArgumentError("path contains a NUL character: give a plain workspace-relative path")
        if len(path) > MAX_PATH_CHARS:
            raise ToolArgumentError(f"path is {len(path)} characters; the limit is {MAX_PATH_CHARS}")
        pure = PurePosixPath(path.replace("\\", "/"))
        long = [part for part in pure.parts if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES]
        if long:
            raise ToolArgumentError(f"the name {long[0][:40]!r}... is longer than {MAX_NAME_BYTES} bytes: "
                                    "use a shorter file name")
        if pure.is_absolute() or os.path.isabs(path):
            raise ToolArgumentError(f"path {path!r} is absolute: give a path relative to the workspace")
        if ".." in pure.parts:
            raise ToolArgumentError(f"path {path!r} contains '..': stay inside the workspace")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise storage_error(exc, f"cannot create the workspace {self.root}") from exc
        root = self.root.resolve()
        target = (root / pure).resolve()
        if target != root and not target.is_relative_to(root):
            raise ToolArgumentError(f"path {path!r} leads outside the workspace (through a symlink)")
        return target

    def read_file(self, path: str) -> dict[str, Any]:
        """Read a text file of your workspace."""
        target = self.resolve(path)
        if not target.is_file():
            raise NotFoundError(f"no file {path!r} in the workspace; use list_files to see what exists")
        try:
            with target.open("rb") as file:  # at most the cap is read, however large the file
                size = os.fstat(file.fileno()).st_size
                data = file.read(MAX_READ_BYTES + 1)
        except OSError as exc:
            raise storage_error(exc, f"cannot read {path!r}") from exc
        truncated = len(data) > MAX_READ_BYTES
        text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
        return {"path": path, "content": text, "bytes": max(size, len(data)), "truncated": truncated}

    def write_file(self, path: str, content: str) -> dict[str, Any]:
        """Write (or replace) a text file in your workspace, e.g. notes/plan.md."""
        text = check_text(content, "content")
        data = text.encode("utf-8")
        if len(data) > MAX_WRITE_BYTES:
            raise ToolArgumentError(f"content is {len(data)} bytes; the limit is {MAX_WRITE_BYTES}")
        target = self.resolve(path)
        if target.is_dir():
            raise ToolArgumentError(f"{path!r} is a folder")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise storage_error(exc, f"cannot create the folder of {path!r}") from exc
        atomic_write(target, data)
        return {"path": path, "bytes": len(data), "written": True}

    def list_files(self, path: str = ".") -> dict[str, Any]:
        """List the files of your workspace, or of one of its folders."""
        folder = self.resolve(path)
        if not folder.is_dir():
            raise NotFoundError(f"no folder {path!r} in the workspace")
        root = self.root.resolve()
        files = []
        for item in sorted(folder.rglob("*")):
            if item.is_file() and item.resolve().is_relative_to(root) and not item.name.startswith("."):
                files.append(item.relative_to(root).as_posix())
            if len(files) >= MAX_LISTED:
                break
        return {"path": path, "files": files, "count": len(files)}
