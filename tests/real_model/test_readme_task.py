"""The README's main task on a real model: nothing scripted, the run ends as the engine says it does."""

from __future__ import annotations

import logging

import pytest

from core.memory_manager import MemoryManager
from core.terminal import exit_codes
from tests.engine.conftest import run_cli
from tests.real_model.conftest import configure

pytestmark = pytest.mark.timeout(3600)  # a real model on 2 cores: minutes, not seconds

TASK = "Research Python asyncio and create a summary"
EXIT = {"done": exit_codes.OK, "blocked": exit_codes.BLOCKED, "error": exit_codes.FAILED,
        "step_limit": exit_codes.FAILED}
NOW_STATUS = {"done": "done", "blocked": "blocked", "error": "error", "step_limit": "error"}
REFUSED = ("no tool named", "is not offered", "arguments must be", "is fixed by the engine")


def test_the_engine_runs_the_readme_task_to_an_end(llama_server, agents_home, caplog):
    """`agentos run --backend openai --host URL --model smollm2 "Research Python asyncio ..."` on
    llama-server:
    the run ends done, blocked or at the step limit with that outcome's exit code and NOW.md status; no prompt
    was cut or refused; every tool call the model made was run, or refused with the tool and the field named;
    every call's cache counts and the run's sum are logged."""
    server = llama_server(8192)
    configure(agents_home, server, engine={"max_steps": 6})
    caplog.set_level(logging.INFO, logger="core")
    ran = run_cli("--agent", "finn", "--backend", "openai", "--host", server.url, "--model", server.model,
                  TASK)

    memory = MemoryManager("finn")
    entries = memory.scan_log().entries
    [end] = [e for e in entries if e.type == "RUN_END"]
    outcome = end.metadata["outcome"]
    assert ran.returncode == EXIT[outcome], (outcome, ran.stderr[-2000:])
    assert memory.now_state().status == NOW_STATUS[outcome]
    assert "window: 8192 tokens (llama.cpp /props n_ctx)" in ran.stderr
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "cut it" in m or "refused a prompt" in m or "PromptTooLongError" in m]
    for entry in (e for e in entries if e.type == "TOOL_USE"):
        meta = entry.metadata
        if meta["outcome"] != "ok":
            failure = meta["failure"]
            assert failure.startswith(meta["tool"]), failure
            assert any(word in failure for word in REFUSED) or any(f"{name}" in failure
                                                                   for name in meta["arguments"]) \
                or "raised" in failure or "missing" in failure, failure
    for entry in (e for e in entries if e.type == "ERROR"):
        assert "ToolArgumentError" in entry.content or "BackendError" not in entry.content, entry.content
    calls = [m for m in messages if m.startswith("LLM reply:")]
    assert calls and all("from the server's cache" in m for m in calls)
    assert any(m.startswith(f"run {end.metadata['run_id']}: ") and "evaluated" in m for m in messages)
    memory.close()
