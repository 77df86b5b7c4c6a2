"""Output piped to a reader that stops early (``agentos status | head``) ends a command quietly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.terminal import exit_codes
from core.memory_manager import MemoryManager

ROOT = Path(__file__).resolve().parent.parent


def into_closed_pipe(*command: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run ``command`` with its stdout a real pipe whose reader (a process) has already exited.

    The reader is gone before the command starts, so its first write (or its flush at exit)
    meets EPIPE whatever the machine's load: no race with the reader's timing.
    """
    read_end, write_end = os.pipe()
    try:
        reader = subprocess.Popen([sys.executable, "-c", "import os; os.close(0)"], stdin=read_end)
        os.close(read_end)
        read_end = -1
        reader.wait(timeout=60)
        return subprocess.run(command, cwd=ROOT, stdout=write_end, stderr=subprocess.PIPE, text=True,
                              input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                              timeout=300)
    finally:
        os.close(write_end)
        if read_end != -1:
            os.close(read_end)


def assert_quiet(result: subprocess.CompletedProcess,
                 codes: tuple[int, ...] = (exit_codes.CLOSED_OUTPUT,)) -> None:
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr
    assert "Exception ignored" not in result.stderr, result.stderr
    assert result.returncode in codes, result.stderr


AGENTOS = (sys.executable, "-m", "core")


# argparse drops the text of --help that cannot be written and exits 0 before the check for a closed output.
HELP_CODES = (exit_codes.OK, exit_codes.CLOSED_OUTPUT)


@pytest.mark.parametrize("args", [
    ("--help",), ("run", "--help"), ("status",), ("status", "--json"), ("status", "--agent", "finn"),
    ("now", "--agent", "finn"),
    ("log", "--agent", "finn", "--json"), ("facts", "--agent", "finn"), ("init", "--agent", "finn"),
    ("recall", "--agent", "finn", "asyncio", "--json"),
], ids=" ".join)
def test_agentos_commands_exit_quietly_when_the_reader_is_gone(args):
    """Every command whose output nobody reads exits with 141 and prints no traceback."""
    with MemoryManager("finn") as manager:
        manager.append_log("TOOL_USE", "read the asyncio docs")
    assert_quiet(into_closed_pipe(*AGENTOS, *args),
                 HELP_CODES if "--help" in args else (exit_codes.CLOSED_OUTPUT,))


def test_the_engine_finishes_the_turn_and_records_it_when_the_reader_is_gone():
    """python -m core.engine: the reply's reader went away, the turn still ends and is recorded, no ERROR."""
    assert_quiet(into_closed_pipe(sys.executable, "-m", "core.engine", "--help"), HELP_CODES)
    result = into_closed_pipe(sys.executable, "-m", "core.engine", "--agent", "finn", "--create", "--offline",
                              "Say hello")
    assert_quiet(result)
    with MemoryManager("finn") as manager:
        entries = manager.read_log(50)
    ends = [e for e in entries if e["type"] == "RUN_END"]
    assert len(ends) == 1 and ends[0]["metadata"]["outcome"] != "error", json.dumps(entries, default=str)
    assert not [e for e in entries if e["type"] == "ERROR"]


def test_the_interactive_engine_stops_reading_when_the_reader_is_gone():
    """agentos run in the interactive mode leaves after the first answer nobody can read."""
    result = into_closed_pipe(*AGENTOS, "run", "--agent", "finn", "--create", "--offline",
                              stdin="/facts\n/now\n/exit\n")
    assert_quiet(result)


def test_the_inspector_exits_quietly_when_its_address_cannot_be_printed():
    """python -m core.inspector prints its address first: with nobody reading, it exits instead of serving."""
    assert_quiet(into_closed_pipe(sys.executable, "-m", "core.inspector", "--port", "0"))


def test_a_broken_pipe_that_is_not_stdout_is_not_hidden(capsys):
    """Only standard output's reader going away is quiet: another BrokenPipeError is raised as it is."""
    from core.terminal import closed_output, run_cli

    def failing() -> int:
        raise BrokenPipeError("a socket closed by its peer")

    with pytest.raises(BrokenPipeError):
        run_cli(failing)
    assert not closed_output.discarded()
