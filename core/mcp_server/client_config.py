"""The configuration an MCP client (Claude Desktop, Cursor, ...) needs to start ``agentos mcp`` itself.

A client starts the server with its own environment: often without the virtualenv on ``PATH``, from
another working folder, and without the variables of the shell the user typed in. So every part is
absolute and explicit: this interpreter, ``-m core`` (the ``agentos`` command), the agents home, and
``PYTHONPATH`` when the package is not installed in the interpreter (run from a checkout).
"""

from __future__ import annotations

import os
import site
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

from core.paths import HOME_VARIABLE, agents_home

PASSED_ON = ("AGENTOS_DSN", "AGENTOS_MODEL_CACHE", "OLLAMA_HOST")
"""Variables the server reads that the client's environment would lack: copied when set here."""


def client_config(agent: str, session: str = "main") -> dict[str, Any]:
    """``{"mcpServers": {"agentos-<agent>": {"command", "args", "env"}}}`` for the agent's stdio server."""
    args = ["-m", "core", "mcp", "--agent", agent]
    if session != "main":
        args += ["--session", session]
    env = {HOME_VARIABLE: str(agents_home())}
    source = _source_folder()
    if source is not None:
        env["PYTHONPATH"] = source
    env.update({name: os.environ[name] for name in PASSED_ON if os.environ.get(name)})
    return {"mcpServers": {f"agentos-{agent}": {"command": os.path.abspath(sys.executable), "args": args,
                                                 "env": env}}}


def _source_folder() -> str | None:
    """The folder that holds the ``core`` package, when the interpreter would not find it from elsewhere."""
    folder = Path(str(files("core"))).resolve().parent
    installed = {Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages()]}
    return None if folder in installed else str(folder)
