"""The Amnesia Test: a real SIGKILL of the engine mid-task, then "Continue"."""

from __future__ import annotations

import signal
import time

import pytest

from core.memory_manager import MemoryManager
from tests.engine.conftest import (
    RESEARCH_TASK,
    kill_engine_at,
    research_then_outline,
    run_cli,
    start_engine,
    write_config,
)
from tests.ollama_server import Block, tool_calls


@pytest.mark.slow
def test_killed_run_resumes_without_redoing_the_finished_step(server, agents_home):
    """After kill -9 mid-task, "Continue" resumes: the prompt shows the finished step and its tool call is not
    redone."""
    write_config(agents_home, "llm:\n  backend: ollama\n")
    blocked = Block()
    server.enqueue(*research_then_outline(blocked))
    kill_engine_at(blocked, "--agent", "finn", RESEARCH_TASK)

    result = run_cli("--agent", "finn", "Continue")
    assert result.returncode == 0, result.stderr
    assert "interrupted run" in result.stderr
    assert "outline.md" in result.stdout

    after_restart = server.chat_requests[2]
    system = server.rendered_prompts(tools_only=False)[2]
    assert "- [x] Research decorators" in system
    assert "write_file" in system and "research.md" in system
    assert any(m["role"] == "tool" and m.get("tool_name") == "write_file" for m in after_restart["messages"])

    memory = MemoryManager("finn")
    entries = memory.scan_log().entries
    research_writes = [e for e in entries if e.type == "TOOL_USE" and e.metadata.get("tool") == "write_file"
                       and e.metadata["arguments"]["path"] == "research.md"]
    assert len(research_writes) == 1
    assert [e.type for e in entries].count("INTERRUPTED") == 1
    assert entries[-1].type == "RUN_END" and entries[-1].metadata["outcome"] == "done"
    assert (agents_home / "finn" / "workspace" / "outline.md").is_file()
    assert memory.now_state().status == "done"
    memory.close()


SLOW_SKILL = '''
import time
from pathlib import Path

from core.skills.base import skill_metadata

FLAG = Path(__file__).with_name("hold")


def execute(agent_name: str, topic: str) -> dict:
    """Collect notes on a topic (slowly).

    Args:
        topic: what to collect notes on.
    """
    with open(Path(__file__).with_name("calls"), "a") as calls:
        calls.write(topic + "\\n")
    while FLAG.exists():  # the test kills the engine here, in the middle of the tools node
        time.sleep(0.05)
    return {"notes": f"notes on {topic}"}


SKILL_METADATA = skill_metadata(execute, name="collect_notes")
'''


@pytest.mark.slow
def test_kill_inside_the_tools_node_redoes_only_the_unfinished_call(server, agents_home):
    """A SIGKILL while a tool runs: on "Continue" the finished call of the same step is not redone, the cut
    one is."""
    write_config(agents_home, "llm:\n  backend: ollama\n")
    skills = agents_home / "finn" / "skills"
    skills.mkdir(parents=True)
    (skills / "collect_notes.py").write_text(SLOW_SKILL)
    (skills / "hold").touch()
    server.enqueue(
        tool_calls(("write_file", {"path": "research.md", "content": "Decorators wrap functions."}),
                   ("collect_notes", {"topic": "decorators"})),
        "Research saved; notes collected.",
    )
    engine = start_engine("--agent", "finn", RESEARCH_TASK)
    calls = skills / "calls"
    try:
        deadline = time.monotonic() + 60
        # The file exists from its open on; the kill waits for the call's line (written when it is closed).
        while not (calls.exists()
                   and calls.read_text()) and engine.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert calls.exists(), "the engine never reached the slow tool"
        engine.send_signal(signal.SIGKILL)
        engine.wait(10)
    finally:
        if engine.poll() is None:
            engine.kill()
    (skills / "hold").unlink()

    result = run_cli("--agent", "finn", "Continue")
    assert result.returncode == 0, result.stderr
    assert "notes collected" in result.stdout
    assert calls.read_text().splitlines() == ["decorators", "decorators"]  # cut once, run again once
    memory = MemoryManager("finn")
    entries = memory.scan_log().entries
    tools_logged = [e.metadata.get("tool") for e in entries if e.type == "TOOL_USE"]
    assert tools_logged.count("write_file") == 1 and tools_logged.count("collect_notes") == 1
    assert entries[-1].type == "RUN_END" and entries[-1].metadata["outcome"] == "done"
    memory.close()
