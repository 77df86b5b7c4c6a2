"""Fixtures of the engine tests: a scripted Ollama-compatible server and engines that use it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import write_home_config
from tests.inprocess import Ran, run_main
from tests.ollama_server import ScriptedOllama, tool_call, tool_calls

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    """A started scripted server; ``OLLAMA_HOST`` and ``OPENAI_BASE_URL`` (its OpenAI API) point at it."""
    with ScriptedOllama() as scripted:
        monkeypatch.setenv("OLLAMA_HOST", scripted.host)
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.host + "/v1")
        yield scripted


APIS = ("ollama", "openai")
"""The model-server APIs the engine speaks (``llm.backend``), both answered by the scripted server."""


@pytest.fixture(params=APIS)
def api(request: pytest.FixtureRequest) -> str:
    """Each API in turn, for the tests that hold for both backends: write ``llm: {backend: <api>}``, or pass
    ``backend_name=api`` to the engine."""
    return request.param



def run_cli(*args: str, stdin: str = "") -> Ran:
    """Run ``python -m core.engine --create ARGS`` in this process (``core.engine.cli.main``), ``stdin`` its
    input."""
    from core.engine.cli import main

    return run_main(main, ["--create", *args], stdin=stdin)


RESEARCH_TASK = "Research Python decorators and outline a blog post"


def research_then_outline(blocked) -> list:
    """The model's replies to RESEARCH_TASK: research written and NOW updated, ``blocked`` (a server Block:
    the second call), the outline written, the answer."""
    return [
        tool_calls(("write_file", {"path": "research.md", "content": "Decorators wrap functions."}),
                   ("update_status", {"new_status": "Research done", "done_steps": ["Research decorators"],
                                      "next_steps": ["Write the outline"]})),
        blocked,
        tool_call("write_file", path="outline.md", content="1. What a decorator is"),
        "The outline is in outline.md.",
    ]


def start_engine(*args: str) -> subprocess.Popen:
    """Start ``python -m core.engine --create ARGS`` in a subprocess with the test's environment."""
    return subprocess.Popen([sys.executable, "-m", "core.engine", "--create", *args], cwd=ROOT,
                            env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def sigkill(engine: subprocess.Popen, block=None) -> None:
    """SIGKILL ``engine`` (once its model call reaches ``block``, a server Block, if given)."""
    try:
        if block is not None:
            assert block.entered.wait(60), "the engine never reached the blocked model call"
        engine.send_signal(signal.SIGKILL)
        engine.wait(10)
    finally:
        if engine.poll() is None:
            engine.kill()
    assert engine.returncode == -signal.SIGKILL


def kill_engine_at(block, *args: str) -> None:
    """Run ``python -m core.engine --create ARGS`` and SIGKILL it once its model call reaches ``block`` (a
    server Block)."""
    sigkill(start_engine(*args), block)


def write_config(home: Path, text: str) -> None:
    """Write the agents-wide config.yaml (keeping the test's embedder unless ``text`` names one)."""
    write_home_config(home, yaml.safe_load(text) or {})
