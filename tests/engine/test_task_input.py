"""Where a task comes from (the command line, standard input, a file) and the check it passes before anything
is written: an empty or oversize task is a usage error that leaves the agent's files as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ValidationError
from core.memory_manager import MemoryManager
from tests.engine.conftest import run_cli, write_config


def _files(agents_home: Path) -> dict[str, bytes]:
    """The agent's NOW.md and LOG.md, byte for byte."""
    memory = agents_home / "finn" / "memory"
    return {name: (memory / name).read_bytes() for name in ("NOW.md", "LOG.md")}


@pytest.fixture
def finn(agents_home: Path) -> Path:
    """Agent finn, created, with its files written."""
    MemoryManager("finn").close()
    return agents_home


def test_a_task_too_large_for_one_log_entry_is_refused_before_anything_is_written(finn, server):
    """A 100 KB task exits 2 naming memory.max_entry_bytes; no RUN_START, NOW.md unchanged, no model asked."""
    write_config(finn, "llm:\n  backend: ollama\n")
    before = _files(finn)
    result = run_cli("--agent", "finn", "x" * 100_000)
    assert result.returncode == 2, result.stderr
    assert "memory.max_entry_bytes" in result.stderr and "100,000 bytes" in result.stderr
    assert _files(finn) == before
    assert server.requests == []  # refused before the backend was chosen


def test_an_empty_task_is_a_usage_error_before_the_model_is_asked(finn, server):
    """An empty task exits 2 (not 1) without a request to the model server and without a write."""
    write_config(finn, "llm:\n  backend: ollama\n")
    before = _files(finn)
    result = run_cli("--agent", "finn", "   ")
    assert result.returncode == 2 and "the task is empty" in result.stderr
    assert server.requests == [] and _files(finn) == before


def test_the_engine_refuses_an_oversize_task_and_writes_nothing(finn):
    """Engine.run checks the task as it would be logged (secrets hidden) before RUN_START."""
    from core.engine import Engine

    with Engine("finn", offline=True) as engine:
        before = _files(finn)
        with pytest.raises(ValidationError, match="max_entry_bytes"):
            engine.run("y" * (engine.config.memory.max_entry_bytes + 1))
        with pytest.raises(ValidationError, match="empty"):
            engine.run("")
        assert _files(finn) == before
        engine.manager.close()


def test_a_task_read_from_standard_input(finn):
    """TASK '-' reads the task from standard input."""
    result = run_cli("--agent", "finn", "--offline", "-", stdin="remember that my city is Porto\n")
    assert result.returncode == 0, result.stderr
    with MemoryManager("finn") as memory:
        assert memory.get_fact("city") == "Porto"


def test_a_task_read_from_a_file(finn, tmp_path):
    """--task-file PATH reads the task from a file; a long one (40 KB) is logged whole and run."""
    task = tmp_path / "task.md"
    text = "Summarise these notes about the cheeses of the Jura: " + "comté, morbier, bleu de Gex. " * 1400
    task.write_text(text + "\n", encoding="utf-8")
    result = run_cli("--agent", "finn", "--offline", "--task-file", str(task))
    assert result.returncode == 3, result.stderr  # run, and blocked: the offline backend cannot summarise
    with MemoryManager("finn") as memory:
        assert [e["content"] for e in memory.read_log(30) if e["type"] == "USER_FEEDBACK"] == [text.strip()]


@pytest.mark.parametrize("argv,stdin,message", [
    (["hi", "--task-file", "task.md"], "", "give the task once"),
    (["--task-file", "missing.md"], "", "cannot read the task file missing.md"),
    (["-"], "\udcff", "not UTF-8"),
    (["-"], "z" * 300_000, "more than"),
])
def test_bad_task_input_is_a_usage_error(finn, argv, stdin, message):
    """Two tasks, a missing file, bytes that are not UTF-8 and an endless input: exit 2, nothing written."""
    before = _files(finn)
    result = run_cli("--agent", "finn", "--offline", *argv, stdin=stdin)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert _files(finn) == before
