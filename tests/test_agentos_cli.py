"""The agentos command: its subcommands, the agents home, unknown agents and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import __version__
from core.memory_manager import MemoryManager
from core.paths import home_and_source

ROOT = Path(__file__).resolve().parent.parent


def agentos(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env or dict(os.environ), stdin=subprocess.DEVNULL)


def test_version_and_help():
    """--version prints the package version; --help lists every subcommand of the issue."""
    assert agentos("--version").stdout.strip() == f"agentos {__version__}"
    helped = agentos("--help").stdout
    for name in ("run", "init", "status", "now", "log", "facts", "recall", "compact-log", "compact-session",
                 "rebuild-index", "export", "import", "mcp"):
        assert f"    {name}" in helped


def test_agents_home_resolution(tmp_path, monkeypatch):
    """AGENTOS_HOME wins, then ./agents when it exists in the working folder, then the per-user data folder."""
    monkeypatch.setenv("AGENTOS_HOME", str(tmp_path / "configured"))
    assert home_and_source() == (tmp_path / "configured", "$AGENTOS_HOME")
    monkeypatch.delenv("AGENTOS_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    assert home_and_source() == (tmp_path / "xdg" / "agentos" / "agents", "the per-user data folder")
    (tmp_path / "agents").mkdir()
    assert home_and_source() == (tmp_path / "agents", "./agents in the working folder")


def test_status_prints_the_home_and_why(tmp_path):
    """agentos status names the home and the rule that chose it, and lists the agents."""
    env = {k: v for k, v in os.environ.items() if k != "AGENTOS_HOME"}
    env.update(XDG_DATA_HOME=str(tmp_path / "xdg"), PYTHONPATH=str(ROOT))  # core from the checkout, run elsewhere
    result = agentos("status", cwd=tmp_path, env=env)
    assert result.returncode == 0
    assert f"agents home: {tmp_path / 'xdg' / 'agentos' / 'agents'} (the per-user data folder)" in result.stdout
    assert "no agents yet" in result.stdout and not (tmp_path / "xdg").exists()


def test_init_then_readers_text_and_json(agents_home):
    """init creates an agent once; status, now, log and facts read it as text or JSON."""
    first = agentos("init", "--agent", "finn")
    assert first.returncode == 0 and "created finn/memory/NOW.md" in first.stdout
    assert "nothing to create" in agentos("init", "--agent", "finn").stdout
    with MemoryManager("finn") as manager:
        manager.save_fact("city", "Porto", category="personal")
        manager.save_fact("token", "tok-123456", category="secret")
        manager.append_log("THOUGHT", "Checked the weather")
    status = json.loads(agentos("status", "--agent", "finn", "--json").stdout)
    assert status["facts"] == {"personal": 1, "secret": 1} and status["home_source"] == "$AGENTOS_HOME"
    assert "agent finn in" in agentos("status", "--agent", "finn").stdout
    assert "finn: idle" in agentos("status").stdout
    assert agentos("now", "--agent", "finn").stdout.startswith("---\nschema: agentos.now/1")
    assert json.loads(agentos("now", "--agent", "finn", "--json").stdout)["status"] == "idle"
    assert "THOUGHT: Checked the weather" in agentos("log", "--agent", "finn", "-n", "1").stdout
    facts = agentos("facts", "--agent", "finn").stdout
    assert "city (personal): Porto" in facts and "tok-123456" not in facts and "[REDACTED]" in facts
    assert json.loads(agentos("facts", "--agent", "finn", "--json", "--category", "personal").stdout)[0]["key"] == "city"


@pytest.mark.parametrize("command", [["now"], ["log"], ["facts"], ["status"], ["recall", "anything"],
                                     ["compact-log"], ["rebuild-index"], ["run", "hello", "--offline"],
                                     ["export", "x.tar.gz"]])
def test_unknown_agent_is_named_listed_and_not_created(agents_home, command):
    """A command on an agent that does not exist exits 4, names it, lists the agents, and creates nothing."""
    assert agentos("init", "--agent", "finn").returncode == 0
    result = agentos(command[0], "--agent", "ghost", *command[1:])
    assert result.returncode == 4, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: no agent named 'ghost'")
    assert "agents there: finn" in result.stderr and "agentos init --agent ghost" in result.stderr
    assert sorted(p.name for p in agents_home.iterdir()) == ["finn"]


def test_run_create_makes_the_agent(agents_home):
    """run --create (and python -m core.engine --create) creates a new agent and runs it."""
    result = agentos("run", "--agent", "nova", "--create", "--offline", "remember that my city is Lisbon")
    assert result.returncode == 0, result.stderr
    assert MemoryManager("nova").get_fact("city") == "Lisbon"


def test_yaml_syntax_error_is_one_line_with_file_line_and_column(agents_home):
    """A YAML syntax error in a config file is one line naming the file, line and column; exit 2."""
    assert agentos("init", "--agent", "finn").returncode == 0
    config = agents_home / "finn" / "config" / "config.yaml"
    config.write_text("memory:\n  max_entry_bytes: [1, 2\nllm: {\n", encoding="utf-8")
    for command in (["now", "--agent", "finn"], ["run", "--agent", "finn", "--offline", "status"]):
        result = agentos(*command)
        assert result.returncode == 2
        assert result.stderr.strip().count("\n") == 0
        assert f"error: {config}:3:4: invalid YAML" in result.stderr


def test_scripts_are_wrappers_of_the_subcommands(agents_home):
    """scripts/compact_log.py is agentos compact-log: same options, same refusal of an unknown agent."""
    result = subprocess.run([sys.executable, "scripts/compact_log.py", "--agent", "ghost"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 4 and "no agent named 'ghost'" in result.stderr
    helped = subprocess.run([sys.executable, "scripts/rebuild_index.py", "--help"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert helped.returncode == 0 and "agentos rebuild-index" in helped.stdout
