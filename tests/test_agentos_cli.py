"""The agentos command: its subcommands, the agents home, unknown agents and one-line errors."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import __version__
from core.commands import main
from core.memory_manager import MemoryManager
from core.paths import home_and_source
from tests.inprocess import Ran, run_main, run_script

ROOT = Path(__file__).resolve().parent.parent


def agentos(*args: str) -> Ran:
    """Run ``agentos ARGS`` in this process with no standard input."""
    return run_main(main, args)


def agentos_process(*args: str) -> subprocess.CompletedProcess:
    """Run ``python -m core ARGS`` in a new process with no standard input."""
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ), stdin=subprocess.DEVNULL)


def test_version_and_help():
    """--version prints the package version; --help lists every subcommand of the issue."""
    assert agentos("--version").stdout.strip() == f"agentos {__version__}"
    helped = agentos("--help").stdout
    for name in ("run", "init", "status", "now", "log", "facts", "recall", "forget", "compact-log",
                 "compact-session", "rebuild-index", "export", "import", "mcp"):
        assert f"    {name}" in helped


@pytest.mark.bare_home
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


@pytest.mark.bare_home
def test_status_prints_the_home_and_why(tmp_path, monkeypatch):
    """agentos status names the home and the rule that chose it, and lists the agents."""
    monkeypatch.delenv("AGENTOS_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    result = agentos("status")
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


@pytest.mark.bare_home
@pytest.mark.parametrize("command", [["now"], ["log"], ["facts"], ["status"], ["recall", "anything"],
                                     ["forget", "--query", "anything", "--yes"],
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


@pytest.mark.slow
def test_recall_options_and_forget_with_confirmation(agents_home, minilm, capsys, monkeypatch):
    """recall takes --kind, --since, --until, --min-score and --recency-days; forget shows what it will forget
    and asks (nothing without a yes), or forgets at once with --yes; bad combinations are usage errors."""
    assert agentos("init", "--agent", "finn").returncode == 0
    with MemoryManager("finn") as manager:
        old = manager.store_memory("The report went to Maria", occurred_at="2023-01-05")
        new = manager.store_memory("The report goes to Ada now", occurred_at="2024-06-01")
        manager.cold.catch_up()

    def run(*args: str, answer: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(answer))
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    def recall(*options: str) -> list[str]:
        code, out, err = run("recall", "--agent", "finn", "who gets the report?", "--json", *options)
        assert code == 0, err
        return [hit["id"] for hit in json.loads(out)]

    assert set(recall("--kind", "note", "--min-score", "0")) == {old, new}
    assert recall("--since", "1 Jan 2024", "--min-score", "0") == [new]
    assert recall("--until", "2023-12-31", "--kind", "note", "--kind", "fact") == [old]
    assert recall("--recency-days", "30", "--min-score", "0")[0] == new
    assert recall("--min-score", "0.999999") == []
    with pytest.raises(SystemExit) as usage:
        run("recall", "--agent", "finn", "report", "--min-score", "2")
    assert usage.value.code == 2
    assert f"note {old}" in run("recall", "--agent", "finn", "report to Maria")[1]

    refused = agentos_process("forget", "--agent", "finn", old)  # a real process with no terminal to answer
    assert refused.returncode == 2 and "not confirmed" in refused.stderr and old in refused.stderr
    code, _, err = run("forget", "--agent", "finn", old, answer="n\n")
    assert code == 2 and "The report went to Maria" in err and "Forget them? [y/N]" in err
    assert recall("--kind", "note", "--min-score", "0").count(old) == 1
    code, out, _ = run("forget", "--agent", "finn", old, answer="y\n")
    assert code == 0 and "forgot 1 memory" in out
    assert old not in recall("--min-score", "0")
    code, out, _ = run("forget", "--agent", "finn", "--query", "report to Ada", "--kind", "note", "--yes", "--json")
    assert json.loads(out) == {"forgotten": [new], "count": 1}
    assert run("forget", "--agent", "finn")[0] == 2
    assert run("forget", "--agent", "finn", new, "--query", "x")[0] == 2
    code, _, err = run("forget", "--agent", "finn", "note:nope", "--yes")
    assert code == 4 and "note:nope" in err
    assert run("forget", "--agent", "finn", "--before", "2000-01-01", "--yes")[1].strip() == "nothing to forget"


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
    result = run_script(ROOT / "scripts" / "compact_log.py", "--agent", "ghost")
    assert result.returncode == 4 and "no agent named 'ghost'" in result.stderr
    helped = run_script(ROOT / "scripts" / "rebuild_index.py", "--help")
    assert helped.returncode == 0 and "agentos rebuild-index" in helped.stdout
