"""python -m core.memory_initializer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.memory_initializer import initialize_agent_memory, main
from tests.inprocess import Ran, run_main


def run(*args: str, home: Path) -> Ran:
    """``python -m core.memory_initializer ARGS`` in this process, on the agents home ``home``."""
    assert os.environ["AGENTOS_HOME"] == str(home)
    return run_main(main, args)


def test_creates_stack_and_says_so(agents_home: Path) -> None:
    """A first run creates the folders and memory files and lists them."""
    result = run("--agent", "finn", home=agents_home)
    assert result.returncode == 0, result.stderr
    for name in ("NOW.md", "LOG.md", "memory.db"):
        assert (agents_home / "finn" / "memory" / name).is_file()
        assert f"memory/{name}" in result.stdout
    assert (agents_home / "finn" / "config" / "AGENT.md").is_file()


def test_is_idempotent(agents_home: Path) -> None:
    """A second run creates nothing, changes nothing and says so."""
    initialize_agent_memory("finn")
    now = (agents_home / "finn" / "memory" / "NOW.md").read_bytes()
    assert initialize_agent_memory("finn") == []
    result = run("--agent", "finn", home=agents_home)
    assert "nothing to create" in result.stdout
    assert (agents_home / "finn" / "memory" / "NOW.md").read_bytes() == now


def test_show_prints_memory(agents_home: Path) -> None:
    """--show prints the memory context the model would see."""
    result = run("--agent", "finn", "--show", home=agents_home)
    assert "## NOW" in result.stdout and "## Facts" in result.stdout


@pytest.mark.bare_home
def test_bad_name_is_one_line_error(agents_home: Path) -> None:
    """An invalid agent name is a one-line error, exit 2, and nothing is created."""
    result = run("--agent", "../evil", home=agents_home)
    assert result.returncode == 2
    assert result.stderr.startswith("error: invalid agent name")
    assert "Traceback" not in result.stderr
    assert not agents_home.exists()
