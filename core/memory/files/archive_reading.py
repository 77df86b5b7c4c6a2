"""Reading an archive from elsewhere in one stream, within the importing home's limits.

An archive is untrusted until checked, and a small one can unpack to a huge one (a decompression
bomb), so the reader never trusts a size it has not checked against a limit first:

- every tar header is checked when it is parsed, before the data it announces is read: only plain
  files and folders (and the few metadata headers that carry a long name, at most 1 MiB each) pass;
- the members are counted (``transfer.max_members``);
- every byte read out of the gzip stream is counted, and the read that would go past the limit fails
  (``transfer.max_unpacked_bytes``, then what the manifest announced);
- a member's size comes from its header, so a caller checks it before reading the member.

Nothing here writes to the disk.
"""

from __future__ import annotations

import gzip
import tarfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator, Protocol

from core.errors import ArchiveTooLargeError, CorruptionError

HEADER_SLACK = 64 * 1024 * 1024
"""Bytes allowed beyond the members' own for tar headers and padding."""
RATIO_FLOOR = 64 * 1024 * 1024
"""``transfer.max_ratio`` applies to archives that unpack to more than this."""
MAX_METADATA = 1024 * 1024
"""The largest long-name (pax or GNU) header accepted."""
_PLAIN = (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE)
_METADATA = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE, tarfile.GNUTYPE_LONGNAME)
_LIMITS = "transfer.max_unpacked_bytes, transfer.max_members and transfer.max_ratio in the home's config.yaml"


class Limits(Protocol):
    """What an archive may hold (``core.config.TransferConfig``: the importing home's ``transfer``
    section)."""

    max_unpacked_bytes: int
    max_members: int
    max_ratio: int


class _Header(tarfile.TarInfo):
    """A tar header checked as it is parsed, before ``tarfile`` reads what it announces."""

    @classmethod
    def frombuf(cls, buf, encoding, errors):  # noqa: ANN001 - tarfile's signature
        info = super().frombuf(buf, encoding, errors)
        if info.type in _METADATA:
            if info.size > MAX_METADATA:
                raise ArchiveTooLargeError(f"a tar header announces {info.size} bytes of metadata (at most "
                                           f"{MAX_METADATA}): this is not an archive AgentOS wrote")
        elif info.type not in _PLAIN:
            raise CorruptionError(f"{info.name[:200]!r} is not a plain file or folder (links, devices and "
                                  "sparse files are refused)")
        return info


class _Counted:
    """The decompressed stream, counted: a read past ``limit`` bytes fails."""

    def __init__(self, stream: BinaryIO, limit: int, where: Path) -> None:
        self.stream = stream
        self.limit = limit
        self.read_so_far = 0
        self.where = where

    def read(self, size: int = -1) -> bytes:
        room = self.limit - self.read_so_far
        data = self.stream.read(room + 1 if size < 0 or size > room else size)
        self.read_so_far += len(data)
        if self.read_so_far > self.limit:
            raise ArchiveTooLargeError(f"{self.where} unpacks to more than {self.limit} bytes: refused "
                                       f"before anything was written (limits: {_LIMITS})")
        return data


@dataclass
class ArchiveStream:
    """One pass over an archive's members, in order."""

    path: Path
    limits: Limits
    _tar: tarfile.TarFile
    _counted: _Counted
    members: int = 0
    announced: int = 0
    """Bytes announced so far (see :meth:`expect`)."""
    _before: int | None = None
    """Bytes read before the first announcement (the manifest, in an agent's archive)."""

    def __iter__(self) -> Iterator[tarfile.TarInfo]:
        members = iter(self._tar)
        while True:
            with _unreadable(self.path):
                member = next(members, None)
            if member is None:
                return
            self.members += 1
            if self.members > self.limits.max_members:
                raise ArchiveTooLargeError(f"{self.path} holds more than {self.limits.max_members} members: "
                                           f"refused before anything was written (limits: {_LIMITS})")
            yield member

    def read(self, member: tarfile.TarInfo, most: int) -> bytes:
        """The whole of ``member``, which must hold at most ``most`` bytes."""
        if member.size > most:
            raise ArchiveTooLargeError(f"{self.path}: {member.name[:200]!r} holds {member.size} bytes, more "
                                       f"than the {most} such a file may hold")
        return self.open(member).read()

    def open(self, member: tarfile.TarInfo) -> "_Member":
        """``member``'s data as a stream (its size is ``member.size``, already checked by the caller)."""
        with _unreadable(self.path):
            stream = self._tar.extractfile(member)
        if stream is None:
            raise CorruptionError(f"{self.path}: {member.name[:200]!r} is not a file")
        return _Member(stream, self.path)

    def expect(self, size: int) -> None:
        """Check ``size`` more bytes announced (the manifest's files together, or one member's header) with
        those announced before against the limits, and let no more than they announce be read."""
        limits, archive_size = self.limits, self.path.stat().st_size
        self.announced += size
        total = self.announced
        if total > limits.max_unpacked_bytes:
            raise ArchiveTooLargeError(f"{self.path} unpacks to {total} bytes or more, over "
                                       f"transfer.max_unpacked_bytes ({limits.max_unpacked_bytes}) of this "
                                       "home: raise it in the home's config.yaml if you trust the archive; "
                                       "nothing was written")
        if total > RATIO_FLOOR and total > limits.max_ratio * archive_size:
            raise ArchiveTooLargeError(f"{self.path} ({archive_size} bytes) unpacks to {total} bytes or "
                                       f"more, over transfer.max_ratio ({limits.max_ratio}) times its size: "
                                       "a decompression bomb, or raise the limit in the home's config.yaml "
                                       "if you trust it; nothing was written")
        if self._before is None:
            self._before = self._counted.read_so_far
        self._counted.limit = min(limits.max_unpacked_bytes, self._before + total) + HEADER_SLACK


class _Member:
    """One member's data; a damaged stream is a CorruptionError."""

    def __init__(self, stream: BinaryIO, where: Path) -> None:
        self._stream = stream
        self._where = where

    def read(self, size: int = -1) -> bytes:
        with _unreadable(self._where):
            return self._stream.read(size)


@contextmanager
def _unreadable(path: Path) -> Iterator[None]:
    """Reading the archive's stream: what gzip and tarfile raise on damaged data becomes a CorruptionError."""
    try:
        yield
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise CorruptionError(f"{path} is not a readable archive (.tar.gz): {exc}") from exc


@contextmanager
def reading(path: Path, limits: Limits) -> Iterator[ArchiveStream]:
    """Stream the ``.tar.gz`` at ``path``, checked as this module's docstring says.

    Raises:
        CorruptionError: not a readable gzip tar, or a member that is not a plain file or folder.
        ArchiveTooLargeError: over a limit (nothing past it was read).
    """
    with _unreadable(path):
        raw = path.open("rb")
    with raw, gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
        counted = _Counted(unzipped, limits.max_unpacked_bytes + HEADER_SLACK, path)
        with _unreadable(path):
            tar = tarfile.open(fileobj=counted, mode="r|", tarinfo=_Header)  # type: ignore[arg-type]
        with tar:
            yield ArchiveStream(path, limits, tar, counted)
