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


def _help_texts() -> dict[str, str]:
    """``--help`` of agentos, of each subcommand and of each ``space`` action, by command line."""
    import argparse

    from core.commands import parser

    texts = {"agentos": parser().format_help()}
    todo = [("agentos", parser())]
    while todo:
        name, command = todo.pop()
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, sub_parser in action.choices.items():
                    texts[f"{name} {sub}"] = sub_parser.format_help()
                    todo.append((f"{name} {sub}", sub_parser))
    return texts


def test_help_reads_as_plain_text_and_lists_whole_sentences():
    """No reStructuredText marks (``code``, :func:`x`) in any --help, and the list of commands gives each
    one's first paragraph whole (the facts line no longer stops mid-sentence)."""
    texts = _help_texts()
    assert len(texts) > 20 and "agentos space publish" in texts
    assert [name for name, text in texts.items() if "``" in text or ":func:" in text or ":mod:" in text] == []
    listing = " ".join(texts["agentos"].split())
    assert ("facts List the agent's facts, or with --history one fact's values, newest first (a secret's "
            "value is shown as [REDACTED], and so are the earlier values of a fact while it is "
            "secret).") in listing



@pytest.mark.bare_home
def test_agents_home_resolution(tmp_path, monkeypatch):
    """AGENTOS_HOME wins, then ./agents when it exists in the working folder, then the per-user data
    folder."""
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
    assert (
        f"agents home: {tmp_path / 'xdg' / 'agentos' / 'agents'} (the per-user data folder)" in result.stdout
    )
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
    assert json.loads(agentos("facts", "--agent", "finn", "--json", "--category",
                              "personal").stdout)[0]["key"] == "city"


def test_facts_history_lists_a_facts_values_newest_first(agents_home):
    """facts --history KEY: every value the fact held, newest first, the current one marked; a secret's
    redacted; an unknown key exits 4 naming it, --category beside it is refused."""
    assert agentos("init", "--agent", "finn").returncode == 0
    with MemoryManager("finn") as manager:
        manager.save_fact("city", "Porto", category="personal")
        manager.save_fact("city", "Lisbon", category="personal")
        manager.save_fact("token", "tok-123456", category="secret")
        manager.save_fact("token", "tok-654321", category="secret")
    lines = agentos("facts", "--agent", "finn", "--history", "city").stdout.splitlines()
    assert [line.split("  ")[1:] for line in lines] == [["Lisbon (personal)", "current"],
                                                        ["Porto (personal)"]]
    listed = json.loads(agentos("facts", "--agent", "finn", "--history", "token", "--json").stdout)
    assert [v["value"] for v in listed] == ["[REDACTED]", "[REDACTED]"] and listed[1]["replaced_at"]
    unknown = agentos("facts", "--agent", "finn", "--history", "nope")
    assert unknown.returncode == 4 and "no fact is stored under 'nope'" in unknown.stderr
    both = agentos("facts", "--agent", "finn", "--history", "city", "--category", "personal")
    assert both.returncode != 0 and "leave out --category" in both.stderr


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
def test_recall_explains_and_lists_a_time_window(agents_home, capsys):
    """recall --explain prints why each result ranked and what was left out (--json: results and left_out);
    with no query, --since/--until list the window newest first; a bad window is a one-line error."""
    assert agentos("init", "--agent", "finn").returncode == 0
    with MemoryManager("finn") as manager:
        first = manager.store_memory("The report went to Maria", {"key": "report"}, occurred_at="2023-01-05")
        second = manager.store_memory("The report goes to Ada now", {"key": "report"},
                                      occurred_at="2023-06-01")
        manager.store_memory("The report goes to Ada now!", occurred_at="2023-06-01")

    def run(*args: str) -> tuple[int, str, str]:
        code = main(["recall", "--agent", "finn", *args])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = run("who gets the report?", "--explain", "--min-score", "0")
    assert code == 0 and f"note {second}" in out and "why: words: report" in out and "left out:" in out
    assert f"(superseded by {second}, 2023-06-01)" in out
    code, out, _ = run("who gets the report?", "--explain", "--json")
    explained = json.loads(out)
    assert set(explained) == {"results", "left_out"} and "why" in explained["results"][0]
    # a question that counts: its search widened
    code, out, _ = run("how many reports did Ada get?", "--explain")
    assert code == 0 and 'widened: a question that counts, adds up, compares or orders ("how many")' in out
    code, out, _ = run("--since", "2023-01-01", "--until", "2023-12-31", "--kind", "note", "-n", "2")
    lines = out.splitlines()  # the same words twice that day are one memory, which knows its other record
    assert code == 0 and lines[0].startswith("2023-06-01 00:00 note ") and len(lines) == 6
    assert lines[2] == f"  (also recorded as {second})" and lines[4] == "  The report went to Maria"
    code, out, _ = run("--until", "2023-03-01", "--json")
    assert [hit["id"] for hit in json.loads(out)] == [first]
    code, _, err = run("--since", "2023-06-01", "--until", "2023-01-01")
    assert code == 2 and "is before since" in err and len(err.strip().splitlines()) == 1
    code, _, err = run()
    assert code == 2 and "give a query, or a time window" in err


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

    # a real process with no terminal to answer
    unanswered = agentos_process("forget", "--agent", "finn", old)
    assert unanswered.returncode == 0 and old in unanswered.stderr
    assert unanswered.stdout.startswith("nothing forgotten (no answer: standard input is closed; add --yes")
    code, out, err = run("forget", "--agent", "finn", old, answer="n\n")  # declining is not an error
    assert code == 0 and "The report went to Maria" in err and "Forget them? [y/N]" in err
    assert out == "nothing forgotten\n"
    assert recall("--kind", "note", "--min-score", "0").count(old) == 1
    code, out, _ = run("forget", "--agent", "finn", old, answer="y\n")
    assert code == 0 and "forgot 1 memory" in out
    assert old not in recall("--min-score", "0")
    code, out, _ = run("forget", "--agent", "finn", "--query", "report to Ada", "--kind", "note", "--yes",
                       "--json")
    assert json.loads(out)["forgotten"] == [new] and json.loads(out)["matched"][0]["why"] == {
        "words": ["report", "Ada"]
    }
    assert run("forget", "--agent", "finn")[0] == 2
    assert run("forget", "--agent", "finn", new, "--query", "x")[0] == 2
    code, _, err = run("forget", "--agent", "finn", "note:nope", "--yes")
    assert code == 4 and "note:nope" in err
    assert run("forget", "--agent", "finn", "--before", "2000-01-01",
               "--yes")[1].strip() == "nothing to forget"


def test_forget_purge_takes_a_forgotten_value_out_of_log_md_and_archives(agents_home, capsys):
    """forget ID --yes --purge forgets a fact and rewrites LOG.md and the archives without its value; --purge
    alone purges what was forgotten earlier; without anything to forget or purge it is a usage error."""
    from core.commands import main

    agents_home.mkdir(parents=True, exist_ok=True)
    (agents_home / "config.yaml").write_text("llm:\n  backend: offline\n", encoding="utf-8")
    with MemoryManager("finn") as manager:
        manager.save_fact("favourite_colour", "teal with copper trim")
        manager.compact_log()
        manager.save_fact("car", "a green van")
    assert main(["forget", "--agent", "finn", "fact:favourite_colour", "--yes", "--purge", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["forgotten"] == ["fact:favourite_colour"] and done["purged"]["keys"] == ["favourite_colour"]
    assert len(done["purged"]["archives"]) == 1  # (memory.db's WAL may wait for a reader: resumed at open)
    memory = agents_home / "finn" / "memory"
    records = [memory / "LOG.md", *(memory / "archive").glob("LOG-*.md")]
    assert not any(b"teal with copper trim" in p.read_bytes() for p in records)
    with MemoryManager("finn") as manager:
        manager.forget_memory("fact:car")
    assert b"a green van" in (memory / "LOG.md").read_bytes()
    assert main(["forget", "--agent", "finn", "--purge"]) == 0
    assert "purged the values of 2 forgotten fact" in capsys.readouterr().out  # every value forgotten so far
    assert b"a green van" not in (memory / "LOG.md").read_bytes()


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


def with_terminal_stderr(*args: str, env: dict) -> tuple[subprocess.CompletedProcess, str]:
    """Run ``python -m core ARGS`` with stderr a terminal (a pseudo-terminal); return it and what it drew
    there."""
    import pty

    main, terminal = pty.openpty()
    try:
        result = subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=terminal, stdin=subprocess.DEVNULL, text=True, env=env, timeout=300)
    finally:
        os.close(terminal)
    drawn = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # Linux: EIO once the terminal's other side is closed and everything was read
            break
        if not chunk:
            break
        drawn += chunk
    os.close(main)
    return result, drawn.decode("utf-8", "replace")


def test_a_dry_run_compaction_draws_no_bar_and_asks_no_model(agents_home):
    """compact-log --dry-run draws no progress bar, even on a terminal, looks for no summarizer model and
    changes nothing."""
    from tests.ollama_server import ScriptedOllama

    assert agentos("init", "--agent", "finn").returncode == 0
    with MemoryManager("finn") as manager:
        for step in range(3):
            manager.append_log("THOUGHT", f"Step {step} of the plan")
    log_file = agents_home / "finn" / "memory" / "LOG.md"
    before = log_file.read_bytes()
    with ScriptedOllama() as server:
        result, drawn = with_terminal_stderr("compact-log", "--agent", "finn", "--dry-run", "--force",
                                             env={**os.environ, "OLLAMA_HOST": server.host})
        assert server.requests == []
    assert result.returncode == 0, drawn
    assert "dry run: would archive entries" in result.stdout
    assert drawn == ""
    assert log_file.read_bytes() == before and not list(
        (agents_home / "finn" / "memory" / "archive").glob("LOG-*")
    )


def test_a_deterministic_summary_chosen_or_offline_is_not_warned_about(agents_home, monkeypatch, caplog):
    """``memory.compact_summarizer: deterministic`` compacts with no warning that no LLM answers, and the
    output does not say one was missing; an engine on the offline backend (the user was told there is no
    model) has its LOG.md compactions look for none either (no server is probed, nothing is warned)."""
    import core.llm
    from core.engine import Engine
    from tests.engine.conftest import write_config

    def no_probe(*args, **kwargs):
        raise AssertionError("a model server was looked for")

    assert agentos("init", "--agent", "finn").returncode == 0
    with MemoryManager("finn") as manager:
        for step in range(3):
            manager.append_log("THOUGHT", f"Step {step}: read the asyncio documentation")
    monkeypatch.setattr(core.llm, "choose_backend", no_probe)
    with Engine("finn", offline=True) as engine:
        assert engine.manager.compaction.summarizer(automatic=True).generate is None
        engine.manager.close()
    write_config(agents_home, "memory:\n  compact_summarizer: deterministic\n")
    with caplog.at_level("WARNING"):
        compacted = agentos("compact-log", "--agent", "finn", "--force")
    assert compacted.returncode == 0, compacted.stderr
    assert ("summary: deterministic (extractive summary of the source: no model, or "
            "memory.compact_summarizer: deterministic)") in compacted.stdout
    assert not [r for r in caplog.records if r.name.startswith("core.")], caplog.records


def test_progress_bars_are_drawn_only_on_a_terminal(agents_home):
    """compact-log and rebuild-index print their results, and no bar, when stderr is not a terminal."""
    assert agentos("init", "--agent", "finn").returncode == 0
    with MemoryManager("finn") as manager:
        for step in range(3):
            manager.append_log("THOUGHT", f"Step {step}: read the asyncio documentation")
    compacted = agentos("compact-log", "--agent", "finn", "--force")
    assert compacted.returncode == 0 and "entries archived: " in compacted.stdout, compacted.stderr
    rebuilt = agentos("rebuild-index", "--agent", "finn")
    assert rebuilt.returncode == 0 and "memories embedded: " in rebuilt.stdout, rebuilt.stderr
    for result in (compacted, rebuilt):
        assert "indexing:" not in result.stderr and "embedding:" not in result.stderr, result.stderr


def test_rebuild_index_bar_shows_its_total_and_unit(agents_home, monkeypatch):
    """On a terminal, rebuild-index's bar counts memories against their total ("7/7 memories"), not
    "7memory"."""
    import core.commands.maintenance as maintenance
    from tqdm import tqdm

    drawn = io.StringIO()
    monkeypatch.setattr(maintenance, "tqdm", lambda *a,
                        **kw: tqdm(*a, **{**kw, "disable": False, "file": drawn}))
    with MemoryManager("finn") as manager:
        for step in range(3):
            manager.store_memory(f"Step {step}: read the asyncio documentation")
    rebuilt = agentos("rebuild-index", "--agent", "finn")
    assert rebuilt.returncode == 0, rebuilt.stderr
    embedded = int(rebuilt.stdout.split("memories embedded: ")[1].split()[0])
    final = drawn.getvalue().split("\r")[-1]
    assert f"{embedded}/{embedded} [" in final and " memories/s" in final and "memory" not in final.replace(
        "memories", ""), final


def test_errors_interrupts_and_a_closed_pipe_end_every_command_alike(capsys):
    """run_cli: a library error is one line and its exit code, Ctrl-C is 130, a closed reader ends quietly."""
    from core.errors import UnknownAgentError
    from core.terminal import exit_codes, run_cli

    def missing() -> int:
        raise UnknownAgentError("no agent named 'zed'\nknown agents: finn")

    def interrupted() -> int:
        raise KeyboardInterrupt

    assert run_cli(missing) == exit_codes.NOT_FOUND
    assert capsys.readouterr().err == "error: no agent named 'zed' known agents: finn\n"
    assert run_cli(interrupted) == exit_codes.INTERRUPTED == 130
    assert run_cli(lambda: None) == exit_codes.OK


@pytest.mark.parametrize("command", (["-m", "core", "facts", "--agent", "finn"],
                                     ["-m", "core.engine", "--agent", "finn", "--offline", "status"]))
def test_a_reader_that_went_away_ends_the_command_quietly(agents_home, command):
    """Output into a pipe nobody reads any more (``| head``) ends with 141 and no traceback, in every CLI."""
    MemoryManager("finn").save_fact("city", "Porto")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes a byte
    try:
        done = subprocess.run([sys.executable, *command], cwd=ROOT, stdout=write_end, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, timeout=120, env=dict(os.environ))
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr.count("Traceback")) == (141, 0), done.stderr


ESCAPES = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\r\x1b]0;owned\x07\x9b31m"
"""What a memory may hold to drive a terminal: write the clipboard (OSC 52), clear the screen, a carriage
return that writes over the line, set the title, an 8-bit CSI."""


def test_memories_are_printed_with_their_control_characters_shown_not_obeyed(agents_home, capsys,
                                                                              monkeypatch):
    """A fact, a LOG entry or a note may come from an imported archive, a space member or a model: printed as
    text, its escape sequences are written as ``\\x1b...`` (as --json writes ``\\u001b``), also in the list
    that forget asks about, so none drives the terminal or hides what is about to be forgotten."""
    assert agentos("init", "--agent", "finn").returncode == 0
    with MemoryManager("finn") as manager:
        manager.save_fact("colour", f"teal{ESCAPES}")
        with manager.db.transaction() as conn:  # a key save_fact refuses now, kept by an earlier version
            conn.execute("UPDATE user_facts SET key = ? WHERE key = 'colour'", (f"colour{ESCAPES}",))
        manager.append_log("THOUGHT", f"the report{ESCAPES} is done\n\tnext: the slides")
        note = manager.store_memory(f"Maria gets the report{ESCAPES}")
    outputs = [agentos(*command).stdout for command in (
        ("facts", "--agent", "finn"), ("log", "--agent", "finn"),
        ("recall", "--agent", "finn", "Maria report", "--kind", "note"), ("now", "--agent", "finn"))]
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    assert main(["forget", "--agent", "finn", note]) == 0
    outputs.append(capsys.readouterr().err)
    for out in outputs[:3] + outputs[4:]:
        assert "\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J" in out and "\\x1b]0;owned\\x07\\x9b31m" in out, out
    for out in outputs:
        assert not any(c in out for c in "\x1b\x07\x9b\r"), out
    assert "\\x0d" in outputs[0]
    assert "\n\tnext: the slides" in outputs[1]  # a newline and a tab stay what they are
    assert "\\u001b]52" in agentos("facts", "--agent", "finn", "--json").stdout


@pytest.mark.parametrize(("argv", "usage"), (
    (("recall", "--agent", "finn", "--limit", "3", "deploy"), "usage: agentos recall "),
    (("reflect", "--agent", "finn", "--backnd", "openai"), "usage: agentos reflect "),
    (("space", "add-member", "research", "writer", "--readonly"), "usage: agentos space add-member "),
))
def test_a_mistyped_option_is_refused_with_the_usage_of_its_own_command(agents_home, argv, usage):
    """An option the subcommand does not have is named with that subcommand's usage (its real options), not
    with the top-level usage, which lists none of them; exit code 2 and nothing runs."""
    ran = agentos(*argv)
    assert ran.returncode == 2
    assert usage in ran.stderr, ran.stderr
    error = ran.stderr.strip().splitlines()[-1]
    assert error.startswith(f"{usage[len('usage: '):]}".rstrip() + ": error: unrecognized arguments: "), error
    assert argv[-2] in error or argv[-1] in error


def test_the_offline_notice_names_the_flags_that_reach_a_model_server(agents_home):
    """The offline warning says how to reach a model server with the options a user has (``--host``,
    ``llm.host``, ``--backend openai`` for llama-server and the like), not ``--model``, which reaches none."""
    agentos("init", "--agent", "finn")
    ran = agentos("run", "--agent", "finn", "--offline", "status")
    assert ran.returncode == 0, ran.stderr
    assert "--host URL or llm.host" in ran.stderr and "--backend openai" in ran.stderr
    assert "pass --model" not in ran.stderr


@pytest.mark.parametrize(("argv", "option", "bounds"), (
    (("recall", "--agent", "finn", "-n", "0", "deploy"), "-n/--results", "from 1 to 100, got '0'"),
    (("log", "--agent", "finn", "-n", "-1"), "-n/--last", "of 0 or more, got '-1'"),
    (("forget", "--agent", "finn", "--query", "x", "--limit", "0"), "--limit", "from 1 to 10000, got '0'"),
    (("space", "show", "research", "-n", "-1"), "-n/--last", "of 0 or more, got '-1'"),
))
def test_a_count_out_of_range_is_refused_under_its_own_option(agents_home, argv, option, bounds):
    """A count option out of range is refused by the command line under the option's name (not the library
    parameter's: ``n_results``, ``last_n``), before anything runs; ``space show -n -1`` listed every entry."""
    ran = agentos(*argv)
    assert ran.returncode == 2
    error = ran.stderr.strip().splitlines()[-1]
    assert error.endswith(f"error: argument {option}: must be a whole number {bounds}"), error


def test_a_port_out_of_range_is_a_usage_error_not_a_traceback(agents_home):
    """``agentos inspect --port 99999`` is refused under --port with exit code 2 (the socket's OverflowError
    went up as a traceback); ``agentos mcp --http HOST:99999`` is refused before the server announces an
    address it cannot serve."""
    ran = agentos("inspect", "--port", "99999")
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert ran.stderr.strip().splitlines()[-1] == ("agentos inspect: error: argument --port: must be a port "
                                                   "from 0 to 65535 (0: any free one), got '99999'")
    agentos("init", "--agent", "finn")
    served = agentos_process("mcp", "--agent", "finn", "--http", "127.0.0.1:99999")
    assert (served.returncode, served.stderr) == (
        2, "error: --http takes HOST:PORT, e.g. 127.0.0.1:8765; got '127.0.0.1:99999'\n")
    # a digit to str.isdigit() that int() does not read: a ValueError traceback
    served = agentos_process("mcp", "--agent", "finn", "--http", "127.0.0.1:\u00b2")
    assert (served.returncode, served.stderr) == (
        2, "error: --http takes HOST:PORT, e.g. 127.0.0.1:8765; got '127.0.0.1:\u00b2'\n")


@pytest.mark.parametrize(("how", "source"),
                         ((("--host", "localhost:18091"), "--host"), ((), "$OPENAI_BASE_URL")))
def test_an_address_that_is_not_a_url_is_named_where_it_was_given(agents_home, monkeypatch, how, source):
    """``--host localhost:18091`` (Ollama's habit: no scheme) is refused under the name it was given by (the
    flag, llm.host or $OPENAI_BASE_URL), not always as ``llm.host``, which the user may never have set."""
    agentos("init", "--agent", "finn")
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:18091")
    ran = agentos("run", "--agent", "finn", "--backend", "openai", *how, "--model", "m", "status")
    assert (ran.returncode, ran.stderr) == (
        2, f"error: {source} 'localhost:18091' is not a URL: give one such as http://127.0.0.1:8080/v1\n")


def test_compact_session_takes_the_backend_flags_of_agentos_run(agents_home):
    """``agentos compact-session`` is pointed at a model server with the flags ``agentos run`` takes
    (``--backend openai --host URL --model M``), as the offline warning it may print advises."""
    agentos("init", "--agent", "finn")
    assert agentos("run", "--agent", "finn", "--offline", "status").returncode == 0  # the session "main"
    ran = agentos("compact-session", "--agent", "finn", "--backend", "openai", "--host", "http://127.0.0.1:9/v1",
                  "--model", "m")
    assert ran.stderr.startswith("backend: openai, model m at http://127.0.0.1:9/v1\n"), ran.stderr


def test_compact_session_of_a_session_that_does_not_exist_names_those_there_are(agents_home):
    """A mistyped ``--session`` is not found (exit 4) with the agent's sessions named, and creates no empty
    conversation (which ``agentos status`` and the inspector would show); an agent with none is told how one
    starts."""
    agentos("init", "--agent", "finn")
    ran = agentos("compact-session", "--agent", "finn", "--offline")
    assert ran.returncode == 4
    assert ran.stderr == ("error: agent finn has no session 'main'; it has none yet: agentos run --agent "
                          "finn starts one\n")
    assert agentos("run", "--agent", "finn", "--offline", "status").returncode == 0
    ran = agentos("compact-session", "--agent", "finn", "--session", "mian", "--offline")
    assert ran.returncode == 4
    assert ran.stderr == "error: agent finn has no session 'mian'; its sessions: main (--session NAME)\n"
    status = json.loads(agentos("status", "--agent", "finn", "--json").stdout)
    assert status["conversations"] == 1
