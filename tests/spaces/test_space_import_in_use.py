"""``import --space ARCHIVE --force`` and the processes that have the space open: refused while one has (a
publish it then makes is kept, never acknowledged and lost), as for an agent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.commands import main
from core.errors import AgentInUseError
from core.memory.spaces import Space
from core.memory.spaces.transfer import export_space, import_space
from core.memory_manager import MemoryManager
from tests.inprocess import run_main

ROOT = Path(__file__).resolve().parents[2]

HOLDER = """
import sys
from core.memory.spaces import Space

space = Space("research")
print("open", flush=True)
sys.stdin.readline()
space.publish("writer", "published while the import was refused")
print("published", flush=True)
sys.stdin.readline()
space.close()
"""


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def research(agents_home: Path, tmp_path: Path) -> Path:
    """The space ``research`` (member ``writer``) with one entry, and its archive."""
    MemoryManager("writer").close()
    with Space.create("research", {"writer": "read-write"}) as space:
        space.publish("writer", "otters hold hands while they sleep")
    archive = tmp_path / "research.tar.gz"
    export_space("research", archive)
    return archive


@pytest.mark.slow
def test_force_over_a_space_open_in_another_process_is_refused(agents_home: Path, research: Path) -> None:
    space_dir = agents_home / "spaces" / "research"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, AGENTOS_HOME=str(agents_home), PYTHONPATH=str(ROOT)))
    try:
        assert holder.stdout.readline() == "open\n", holder.stderr.read()
        before = _files(space_dir)
        done = run_main(main, ["import", "--space", str(research), "--force", "--trust-members"])
        assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
        assert f"process {holder.pid}" in done.stderr and "nothing was changed" in done.stderr
        assert _files(space_dir) == before
        assert not (agents_home / "spaces" / ".research.importing").exists()
        holder.stdin.write("publish\n")
        holder.stdin.flush()
        assert holder.stdout.readline() == "published\n", holder.stderr.read()
        holder.stdin.write("close\n")
        holder.stdin.flush()
        assert holder.wait(timeout=120) == 0
    finally:
        holder.kill()
    with Space("research") as space:  # acknowledged, and kept
        assert "published while the import was refused" in space.paths.journal.read_text(encoding="utf-8")
    import_space(research, force=True, trust_members=True)  # no one has it open now: replaced
    with Space("research") as space:
        journal = space.paths.journal.read_text(encoding="utf-8")
        assert "otters hold hands" in journal and "published while the import was refused" not in journal


def test_force_over_a_space_open_in_this_process_is_refused(agents_home: Path, research: Path) -> None:
    with Space("research") as space:
        with pytest.raises(AgentInUseError, match="space 'research' is open in this process"):
            import_space(research, force=True, trust_members=True)
        space.publish("writer", "still writes")
    with Space("research") as again:
        assert "still writes" in again.paths.journal.read_text(encoding="utf-8")
