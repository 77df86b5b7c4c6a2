"""Archives that would fill the disk or the memory: refused on their headers and manifest, before anything is
written or read into memory, within the importing home's ``transfer`` limits."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import tracemalloc
from pathlib import Path

import pytest
import yaml

from core.commands import main
from core.errors import ArchiveTooLargeError, CorruptionError
from core.memory.spaces import Space, export_space, import_space
from core.memory_manager import MemoryManager
from core.transfer import import_agent
from tests.conftest import write_home_config
from tests.inprocess import run_main
from tests.transfer.craft import exported, in_home, members, tree, write

ZEROS = 80 * 1024 * 1024
"""A file of zeros that gzip shrinks a thousandfold: over the 64 MiB from which transfer.max_ratio applies."""


class _Zeros(io.RawIOBase):
    """``size`` zero bytes, read in chunks (a bomb is built without holding it)."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = min(len(buffer), self.left)
        buffer[:count] = bytes(count)
        self.left -= count
        return count


def _zeros_sha256(size: int) -> str:
    digest = hashlib.sha256()
    chunk = bytes(1 << 20)
    for _ in range(size // len(chunk)):
        digest.update(chunk)
    return digest.hexdigest()


def bomb(good: Path, target: Path, member: str) -> Path:
    """``good`` with one more file, ``ZEROS`` bytes of zeros at ``member``, listed in the manifest as it
    is."""
    manifest, files = members(good)
    manifest["files"] = {name: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
                         for name, data in files.items()}
    manifest["files"][member] = {"sha256": _zeros_sha256(ZEROS), "size": ZEROS}
    with gzip.open(target, "wb", compresslevel=9) as raw, tarfile.open(fileobj=raw, mode="w|") as tar:
        for name, data in [("manifest.json", json.dumps(manifest).encode()), *files.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo(member)
        info.size = ZEROS
        tar.addfile(info, io.BufferedReader(_Zeros(ZEROS), 1 << 20))
    return target


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "elsewhere"
    home.mkdir()
    (home / "config.yaml").write_text("cold:\n  embedder: fake\n", encoding="utf-8")
    monkeypatch.setenv("AGENTOS_HOME", str(home))
    return home


def test_a_decompression_bomb_is_refused_before_anything_is_written(agents_home, tmp_path, elsewhere):
    """A small archive that unpacks to a thousand times its size is refused on its manifest, with the limit to
    raise; nothing is written and nothing of it is held in memory."""
    archive = bomb(exported(agents_home, tmp_path), tmp_path / "bomb.tar.gz",
                   "agent/memory/archive/LOG-1-2.md")
    assert archive.stat().st_size < ZEROS // 500
    before = tree(elsewhere)
    tracemalloc.start()
    try:
        with pytest.raises(ArchiveTooLargeError, match="transfer.max_ratio"):
            import_agent(archive)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, peak
    assert tree(elsewhere) == before
    done = run_main(main, ["import", str(archive)])
    assert done.returncode == 2 and done.stderr.startswith("error: ") and done.stderr.count("\n") == 1


def test_the_limits_are_the_homes_and_name_themselves(agents_home, tmp_path, elsewhere):
    """transfer.max_unpacked_bytes and transfer.max_members of the importing home refuse an archive over them,
    and say which to raise; within them the same archive imports."""
    archive = exported(agents_home, tmp_path)
    before = tree(elsewhere)
    write_home_config(elsewhere, {"transfer": {"max_unpacked_bytes": 4096}})
    with pytest.raises(ArchiveTooLargeError, match="transfer.max_unpacked_bytes"):
        import_agent(archive)
    write_home_config(elsewhere, {"transfer": {"max_members": 3}})
    with pytest.raises(ArchiveTooLargeError, match="transfer.max_members"):
        import_agent(archive)
    assert {k: v for k, v in tree(elsewhere).items() if k != "config.yaml"} == \
        {k: v for k, v in before.items() if k != "config.yaml"}
    write_home_config(elsewhere, {"transfer": {"max_members": 50, "max_unpacked_bytes": 64 * 1024 * 1024}})
    assert import_agent(archive).counts["facts"] == 2


def test_an_archive_config_cannot_raise_the_limits(agents_home, tmp_path, elsewhere):
    """The limits are read from the importing home only: an archive's own config.yaml does not lift them."""
    good = exported(agents_home, tmp_path)
    manifest, files = members(good)
    files["agent/config/config.yaml"] = yaml.safe_dump({"transfer": {"max_members": 10**9}}).encode()
    write(tmp_path / "lifted.tar.gz", manifest, files)
    write_home_config(elsewhere, {"transfer": {"max_members": 3}})
    with pytest.raises(ArchiveTooLargeError, match="transfer.max_members"):
        import_agent(tmp_path / "lifted.tar.gz")


def test_a_huge_tar_header_is_refused_before_it_is_read(agents_home, tmp_path, elsewhere):
    """A long-name (pax) header announcing megabytes is refused as it is parsed, before its data is read."""
    good = exported(agents_home, tmp_path)
    manifest, files = members(good)

    def huge_header(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo("agent/memory/NOTES.md")
        info.pax_headers = {"comment": "x" * (2 * 1024 * 1024)}
        tar.addfile(info, io.BytesIO(b""))

    write(tmp_path / "pax.tar.gz", manifest, files, extra=huge_header)
    with pytest.raises(ArchiveTooLargeError, match="metadata"):
        import_agent(tmp_path / "pax.tar.gz")
    assert not (elsewhere / "finn").exists()


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE])
def test_links_and_devices_are_refused(agents_home, tmp_path, elsewhere, kind):
    """A symbolic or hard link, a FIFO or a device in an archive: refused as its header is read."""
    good = exported(agents_home, tmp_path)
    manifest, files = members(good)

    def special(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo("agent/memory/archive/LOG-1-2.md")
        info.type, info.linkname = kind, "/etc/passwd"
        tar.addfile(info)

    write(tmp_path / "special.tar.gz", manifest, files, extra=special)
    with pytest.raises(CorruptionError, match="plain file"):
        import_agent(tmp_path / "special.tar.gz")
    assert not (elsewhere / "finn").exists()


@pytest.mark.parametrize("second", ["agent/memory/./NOW.md", "agent//memory/NOW.md"])
def test_a_second_name_for_a_file_is_refused(agents_home, tmp_path, elsewhere, second):
    """``agent/memory/./NOW.md`` beside ``agent/memory/NOW.md``: two members, one file. Refused by name as
    the archive is checked (it once failed midway with a raw "File exists"), nothing written."""
    manifest, files = members(exported(agents_home, tmp_path))
    files[second] = b"---\nschema: agentos.now/1\n---\n# the other NOW.md\n"
    write(tmp_path / "twice.tar.gz", manifest, files)
    with pytest.raises(CorruptionError, match="not a plain path"):
        import_agent(tmp_path / "twice.tar.gz")
    assert not (elsewhere / "finn").exists() and not list(elsewhere.glob(".import-*"))


def _space_archive(agents_home: Path, tmp_path: Path) -> Path:
    with in_home(agents_home):
        MemoryManager("researcher").close()
        with Space.create("research", {"researcher": "read-write"}) as space:
            space.publish("researcher", "Sea otters hold hands while sleeping")
        archive = tmp_path / "research.tar.gz"
        export_space("research", archive)
    return archive


def test_a_space_archive_bomb_is_refused_without_reading_it_into_memory(agents_home, tmp_path, elsewhere):
    """A space archive whose journal unpacks to a thousand times its size is refused on the journal's header:
    it is never read into memory, and nothing is written."""
    with tarfile.open(_space_archive(agents_home, tmp_path), "r:gz") as tar:
        manifest = tar.extractfile("space.json").read()
    bombed = tmp_path / "bomb.tar.gz"
    with gzip.open(bombed, "wb", compresslevel=9) as raw, tarfile.open(fileobj=raw, mode="w|") as tar:
        info = tarfile.TarInfo("space.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        info = tarfile.TarInfo("LOG.md")
        info.size = ZEROS
        tar.addfile(info, io.BufferedReader(_Zeros(ZEROS), 1 << 20))
    before = tree(elsewhere)
    tracemalloc.start()
    try:
        with pytest.raises(ArchiveTooLargeError, match="transfer.max_ratio"):
            import_space(bombed)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024, peak
    assert tree(elsewhere) == before


def test_a_space_archive_is_checked_before_its_files_are_read(agents_home, tmp_path, elsewhere):
    """space.json must come first, and a space archive holds nothing but its journal and members file; a
    space.json nested deeper than the JSON parser follows is not one (it ended in a RecursionError)."""
    good = _space_archive(agents_home, tmp_path)
    with tarfile.open(good, "r:gz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar}
    for name, order in (("late", ["LOG.md", "space.json", "members.yaml"]),
                        ("extra", ["space.json", "LOG.md", "members.yaml", "evil.py"]),
                        ("nested", ["space.json", "LOG.md", "members.yaml"])):
        bad = tmp_path / f"{name}.tar.gz"
        with tarfile.open(bad, "w:gz") as tar:
            for member in order:
                data = files.get(member, b"print('hi')")
                if name == "nested" and member == "space.json":
                    data = b"[" * 100_000 + b"]" * 100_000
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        with pytest.raises(CorruptionError):
            import_space(bad, as_name=f"research-{name}")
    assert not (elsewhere / "spaces").exists()
    assert import_space(good)["space"] == "research"  # nobody of this home is named in it: no flag needed
