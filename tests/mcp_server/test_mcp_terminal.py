"""``agentos mcp`` as a person meets it: at a terminal it says what it is and stops on Ctrl-C; piped, stdout
is the protocol alone; ``--print-config`` gives a client configuration that works from a bare environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from core.commands import main as agentos_main
from core.memory_initializer import initialize_agent_memory
from core.memory_manager import MemoryManager
from core.terminal import exit_codes
from tests.inprocess import run_main
from tests.pty_terminal import Terminal, screen_lines

ROOT = Path(__file__).resolve().parents[2]
CTRL_C = "\x03"
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "a person", "version": "1"}}})


@pytest.fixture
def finn(agents_home: Path) -> str:
    initialize_agent_memory("finn")
    return "finn"


@pytest.mark.slow  # the server runs as its own process on a pseudo-terminal
def test_at_a_terminal_it_says_what_it_is_and_ctrl_c_stops_it(finn):
    """The greeting names the transport, --print-config and Ctrl-C; Ctrl-C while it serves exits 130, no
    traceback (the SDK's stdin thread used to keep the process alive for ever)."""
    server = Terminal([sys.executable, "-m", "core", "mcp", "--agent", "finn"], dict(os.environ), ROOT)
    try:
        greeting = server.expect("Ctrl-C stops the server.")
        server.type(INITIALIZE + "\r")
        server.expect('"serverInfo"')  # it is serving: the blocking read of stdin is under way
        server.type(CTRL_C)
        code = server.exit_code()
    finally:
        server.kill()
    assert "MCP server on stdio" in greeting and "agentos mcp --agent finn --print-config" in greeting
    assert code == exit_codes.INTERRUPTED == 130
    lines = screen_lines(server.screen)
    assert "Traceback" not in server.screen and lines[-2].endswith("interrupted") and lines[-1] == "", lines


@pytest.mark.slow
def test_piped_it_prints_nothing_but_the_protocol(finn):
    """stdin not a terminal: no greeting anywhere, nothing on stdout; the end of stdin stops it with 0."""
    ran = subprocess.run([sys.executable, "-m", "core", "mcp", "--agent", "finn"], cwd=ROOT,
                         env=dict(os.environ),
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == ""
    assert "print-config" not in ran.stderr and "Ctrl-C" not in ran.stderr


def test_print_config_is_absolute(finn, agents_home):
    """The mcpServers entry names this interpreter, -m core and the agents home by absolute paths."""
    ran = run_main(agentos_main, ["mcp", "--agent", "finn", "--print-config", "--session", "work"])
    assert ran.returncode == 0, ran.stderr
    entry = json.loads(ran.stdout)["mcpServers"]["agentos-finn"]
    assert entry["command"] == os.path.abspath(sys.executable) and os.path.isabs(entry["command"])
    assert entry["args"] == ["-m", "core", "mcp", "--agent", "finn", "--session", "work"]
    assert entry["env"]["AGENTOS_HOME"] == str(agents_home) and os.path.isabs(entry["env"]["AGENTOS_HOME"])
    refused = run_main(agentos_main, ["mcp", "--agent", "finn", "--print-config", "--http", "127.0.0.1:8765"])
    assert refused.returncode == exit_codes.USAGE and "leave out --http" in refused.stderr
    assert run_main(agentos_main,
                    ["mcp", "--agent", "ghost", "--print-config"]).returncode == exit_codes.NOT_FOUND


@pytest.mark.slow  # the server runs as its own process over stdio
def test_the_printed_config_works_without_the_virtualenv_on_path_from_any_folder(finn, monkeypatch):
    """A client started with PATH=/usr/bin:/bin, in /, and only the printed env reaches finn's memory."""
    MemoryManager("finn").save_fact("deploy_target", "fly.io", "personal")
    ran = run_main(agentos_main, ["mcp", "--agent", "finn", "--print-config"])
    entry = json.loads(ran.stdout)["mcpServers"]["agentos-finn"]
    monkeypatch.delenv("AGENTOS_HOME")  # the client's environment has nothing of the test's
    params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                   env={"PATH": "/usr/bin:/bin", **entry["env"]}, cwd="/")

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("recall_memory", {"query": "where do we deploy"})

    result = anyio.run(main)
    found = "".join(block.text for block in result.content)
    assert not result.is_error, found
    assert "fly.io" in found
