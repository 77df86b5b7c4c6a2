"""The command line, the offline backend, start-up cost, the system prompt and the workspace tools."""

from __future__ import annotations

import subprocess
import sys

import pytest

from core.errors import ToolArgumentError
from core.memory_manager import MemoryManager
from core.engine.toolbox.workspace import Workspace
from tests.engine.conftest import ROOT, run_cli, write_config
from tests.ollama_server import tool_call


@pytest.mark.slow
def test_import_and_help_do_not_load_torch():
    """Importing the engine (and --help) never imports torch or sentence-transformers."""
    code = (
        "import sys, core.engine, core.engine.cli; print(sorted(m for m in ('torch', "
        "'sentence_transformers') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.strip() == "[]", result.stderr
    helped = subprocess.run([sys.executable, "-m", "core.engine", "--help"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert helped.returncode == 0 and "--resume" in helped.stdout
    by_path = subprocess.run([sys.executable, "core/engine.py", "--help"], cwd=ROOT, capture_output=True,
                             text=True,
                             timeout=60)  # the original design's way to run it
    assert by_path.returncode == 0 and "--resume" in by_path.stdout, by_path.stderr


def test_offline_backend_drives_the_memory_skills(agents_home):
    """Offline: 'remember that', 'what is my', 'status' and 'continue' work through the skills, announced on
    stderr."""
    saved = run_cli("--agent", "finn", "--offline", "remember that my API key is sk-999")
    assert saved.returncode == 0 and "OFFLINE" in saved.stderr
    asked = run_cli("--agent", "finn", "--offline", "What is my API key?")
    assert "sk-999" in asked.stdout
    memory = MemoryManager("finn")
    assert memory.facts.get("api_key").category == "secret"
    assert "sk-999" not in memory.paths.now_file.read_text(encoding="utf-8")
    memory.update_now(objective="Write the report", next_steps=["Draft the intro", "Add figures"],
                      state="interrupted")
    status = run_cli("--agent", "finn", "--offline", "status")
    assert "Write the report" in status.stdout
    resumed = run_cli("--agent", "finn", "--offline", "continue")
    assert resumed.returncode == 0 and "Draft the intro" in resumed.stdout
    assert (
        "Resumed: Draft the intro" in memory.now_state().current_step or memory.now_state().status == "done"
    )


def test_interactive_mode_commands(agents_home):
    """Interactive mode answers /status, /now, /facts, /log and a request, then leaves on /exit."""
    lines = "remember that my city is Porto\n/facts\n/now\n/status\n/log\n/nope\n/exit\n"
    result = run_cli("--agent", "finn", "--offline", stdin=lines)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "city (personal): Porto" in out
    assert "schema: agentos.now/1" in out
    assert "session finn:main" in out
    assert "USER_FEEDBACK" in out
    assert "commands: /compact" in out


@pytest.mark.bare_home
def test_bad_agent_name_is_one_line_error(agents_home):
    """A bad agent name is a one-line error with exit code 2 and creates nothing."""
    result = run_cli("--agent", "../evil", "hi")
    assert result.returncode == 2 and result.stderr.startswith("error: invalid agent name")
    assert not agents_home.exists() or not any(agents_home.iterdir())


def test_system_prompt_order_and_freshness(server, agents_home, make_engine):
    """Each LLM call gets SYSTEM → AGENT.md → directives, then the memory (log since NOW → NOW → facts); a
    run's later call repeats it and adds the step (the update_status call and its result, the new plan), and
    the next turn's memory, read again since NOW changed, shows the plan."""
    write_config(agents_home, "llm:\n  backend: ollama\n")
    config = agents_home / "finn" / "config"
    config.mkdir(parents=True)
    (config / "AGENT.md").write_text("# Finn\nYou are Finn.", encoding="utf-8")
    directives = agents_home / "finn" / "directives"
    directives.mkdir()
    (directives / "style.md").write_text("Answer in British English.", encoding="utf-8")
    server.enqueue(tool_call("update_status", new_status="Checking the weather",
                             next_steps=["Read forecast"]),
                   "It will rain.", "Yes, take one.")
    engine = make_engine()
    engine.run("Will it rain?")
    engine.run("Should I take an umbrella?")

    first, second, third = server.rendered_prompts()
    order = ["# AgentOS", "You are Finn.", "British English", "## Log since NOW", "## NOW", "## Facts"]
    positions = [first.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert (
        "Checking the weather" not in first and second.startswith(first) and "Checking the weather" in second
    )
    memory = third[third.rindex("# Memory"):]
    assert "- [ ] Read forecast" in memory and memory.endswith("Should I take an "
                                                               "umbrella?<|im_end|>\n<|im_start|>assistant\n")


def test_ctrl_c_during_a_run_is_said_in_one_line_with_exit_code_130(agents_home, monkeypatch):
    """Ctrl-C while a task runs prints the run's advice once (``the run stopped: ...``), not that and then a
    second line ``interrupted``; the exit code is 130 and NOW.md keeps the objective for ``--resume``."""
    from core.commands import main
    from core.engine import Engine
    from tests.inprocess import run_main

    def interrupted(self, task):
        self.manager.update_now(objective=task, state="active")
        raise KeyboardInterrupt

    monkeypatch.setattr(Engine, "run", interrupted)
    MemoryManager("finn").close()
    ran = run_main(main, ["run", "--agent", "finn", "--offline", "Write the report"])
    assert ran.returncode == 130
    notice, *said = ran.stderr.splitlines()
    assert "OFFLINE backend" in notice, ran.stderr
    assert said == ["the run stopped: NOW.md says where; --resume continues it"], ran.stderr
    with MemoryManager("finn") as manager:
        assert manager.now_state().objective == "Write the report"


def test_a_task_given_with_resume_is_refused_not_dropped(agents_home):
    """``--resume`` with a task (or --task-file) is a usage error that says why, before anything is written:
    the task was dropped without a word while the interrupted run resumed (or nothing was there to resume)."""
    from core.commands import main
    from tests.inprocess import run_main

    with MemoryManager("finn") as manager:
        manager.update_now(objective="Write the report", state="interrupted")
    log_file = agents_home / "finn" / "memory" / "LOG.md"
    before = log_file.read_bytes()
    for task in (["also send it to Maria"], ["--task-file", "task.md"]):
        ran = run_main(main, ["run", "--agent", "finn", "--offline", "--resume", *task])
        assert ran.returncode == 2
        assert ran.stderr == ("error: --resume continues the interrupted run as it stood: give it no task (a "
                              "task is a new request; the task \"Continue\" resumes too)\n")
    assert log_file.read_bytes() == before


def test_workspace_confines_paths(tmp_path):
    """read/write/list stay in the workspace: '..', absolute paths and escaping symlinks are refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret", encoding="utf-8")
    workspace = Workspace(tmp_path / "ws")
    workspace.write_file("notes/a.md", "hello")
    (tmp_path / "ws" / "link").symlink_to(outside)
    for bad in ("../outside/secret.txt", "/etc/passwd", "notes/../../outside/secret.txt", "link/secret.txt"):
        with pytest.raises(ToolArgumentError):
            workspace.read_file(bad)
    with pytest.raises(ToolArgumentError):
        workspace.write_file("link/new.txt", "x")
    assert not (outside / "new.txt").exists()
    assert workspace.read_file("notes/a.md")["content"] == "hello"
    assert workspace.list_files()["files"] == ["notes/a.md"]


def test_ctrl_c_in_the_middle_of_a_streamed_line_ends_that_line(agents_home, capsys):
    """A reply cut by Ctrl-C mid-line gets its newline before the turn goes up as interrupted, so the
    advice that follows (``the run stopped: ...``) starts a line of its own instead of running on from the
    model's last word."""
    from core.engine import Engine
    from core.engine.cli import _turn

    def streamed_then_interrupted():
        engine.runtime.on_text("It is a nice little trick to make")  # the model streams, then Ctrl-C
        raise KeyboardInterrupt

    with Engine("finn", offline=True) as engine:
        with pytest.raises(KeyboardInterrupt):
            _turn(engine, streamed_then_interrupted)
        engine.manager.close()
    assert capsys.readouterr().out == "It is a nice little trick to make\n"
