"""``python -m core.inspector``: the address it prints, the errors it gives, and a clean stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.parse

import pytest

from core.terminal import exit_codes
from core.commands import main as agentos_main
from core.inspector import main as inspector_main
from core.memory_manager import MemoryManager
from tests.conftest import ROOT
from tests.inprocess import run_main
from tests.inspector.test_api import get


INSPECTOR = ["-m", "core.inspector"]
AGENTOS_INSPECT = ["-m", "core", "inspect"]


def inspector(*args: str, command: list[str] = INSPECTOR) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *command, *args], cwd=ROOT, env=os.environ.copy(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("command", [INSPECTOR, AGENTOS_INSPECT],
                         ids=["python -m core.inspector", "agentos inspect"])
def test_serves_on_loopback_prints_the_address_and_stops_cleanly_on_sigterm(agents_home, command):
    """It binds 127.0.0.1, prints the URL (with the agent) on stdout, serves it, and exits 0 on SIGTERM."""
    with MemoryManager("finn", agents_home) as mm:
        mm.append_log("THOUGHT", "hello")
    process = inspector("--agent", "finn", "--port", "0", command=command)
    try:
        line = process.stdout.readline()
        url = line.split()[2]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/#agent=finn")
        status, body = get(url.split("#")[0], "/api/agents/finn/log")
        assert status == 200 and b"hello" in body
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == exit_codes.OK
    assert process.stderr.read() == ""


@pytest.mark.slow
def test_another_interface_only_when_asked_and_with_a_warning(agents_home):
    """--host 0.0.0.0 serves with a warning on stderr that the memory is exposed."""
    process = inspector("--host", "0.0.0.0", "--port", "0")
    try:
        port = urllib.parse.urlsplit(process.stdout.readline().split()[2]).port
        assert get(f"http://127.0.0.1:{port}/", "/api/agents")[0] == 200
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(10)
    assert "warning: listening on 0.0.0.0" in process.stderr.read()


def test_unknown_or_invalid_agent_and_busy_port_are_one_line_errors(agents_home):
    """An agent that does not exist exits 4, an invalid name 2, a port in use 2, each with one line."""
    for args, code, words in ((["--agent", "ghost"], exit_codes.NOT_FOUND, "no agent named 'ghost'"),
                              (["--agent", "../x"], exit_codes.USAGE, "invalid agent name")):
        for done in (run_main(inspector_main, args), run_main(agentos_main, ["inspect", *args])):
            assert done.returncode == code and words in done.stderr and len(done.stderr.splitlines()) == 1
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        done = run_main(inspector_main, ["--port", str(busy.getsockname()[1])])
    assert done.returncode == exit_codes.USAGE and "--port" in done.stderr


def test_main_takes_argv_so_another_command_can_mount_it():
    """core.inspector.main(argv, prog) parses the given argv under the given program name."""
    done = run_main(inspector_main, ["--help"], prog="agentos inspect")
    assert done.returncode == 0 and done.stdout.startswith("usage: agentos inspect")
