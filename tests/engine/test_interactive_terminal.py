"""The interactive mode at a real terminal (a pseudo-terminal): line history with the Up arrow,
Ctrl-C cancelling a turn, Ctrl-C at the prompt, the /recall table, one offline warning a session."""

from __future__ import annotations

import os
import select
import sys

import pytest

from core.engine.interactive import HISTORY_LINES, History, recall_table
from tests.engine.conftest import ROOT, write_config
from tests.ollama_server import Block, ScriptedOllama
from tests.pty_terminal import WAIT_S, Terminal, screen_lines

UP = "\x1b[A"
CTRL_C = "\x03"
CTRL_D = "\x04"


@pytest.fixture
def terminal(agents_home):
    started: list[Terminal] = []

    def start(*args: str, host: str = "http://127.0.0.1:9") -> Terminal:
        argv = [sys.executable, "-m", "core.engine", "--create", "--agent", "finn", *args]
        started.append(Terminal(argv, dict(os.environ, OLLAMA_HOST=host), ROOT))
        return started[-1]

    yield start
    for one in started:
        one.kill()


@pytest.mark.slow
def test_up_arrow_recalls_a_line_of_an_earlier_session(terminal, agents_home):
    first = terminal("--offline")
    first.expect("> ")
    first.type("remember that my city is Porto\r")
    first.expect("> ")
    first.type(CTRL_D)
    assert first.exit_code() == 0
    history = (agents_home / "finn" / ".history").read_text(encoding="utf-8")
    assert history == "remember that my city is Porto\n"

    second = terminal("--offline")
    second.expect("> ")
    second.type(UP)
    second.expect("remember that my city is Porto")
    second.type("\r")
    assert "Saved city" in second.expect("> "), "the recalled line ran as typed"
    second.type("/exit\r")
    assert second.exit_code() == 0
    lines = (agents_home / "finn" / ".history").read_text(encoding="utf-8").splitlines()
    assert lines == ["remember that my city is Porto", "/exit"], "a repeated line is kept once"


@pytest.mark.slow
def test_ctrl_c_cancels_a_turn_and_the_session_goes_on(terminal, agents_home):
    write_config(agents_home, "llm:\n  backend: ollama\n")
    with ScriptedOllama() as server:
        slow = Block(then="too late")
        server.enqueue(slow, "Porto is in Portugal.")
        engine = terminal(host=server.host)
        engine.expect("> ")
        engine.type("where is Porto?\r")
        assert slow.entered.wait(WAIT_S), "the turn never reached the model"
        engine.type(CTRL_C)
        engine.expect("turn cancelled")
        engine.expect("> ")
        engine.type("and now?\r")
        assert "Porto is in Portugal." in engine.expect("> ")
        engine.type(CTRL_C)
        hint = engine.expect("> ")
        assert "Ctrl-C again or Ctrl-D to leave" in hint
        engine.type(CTRL_C)
        assert engine.exit_code() == 0
        slow.release()
    after_prompt = engine.screen[engine.seen:]
    assert "the run stopped" not in after_prompt and "interrupted" not in after_prompt.lower()
    now = (agents_home / "finn" / "memory" / "NOW.md").read_text(encoding="utf-8")
    assert "stopped by the user" not in now, "the second turn finished: NOW.md is past the cancelled one"


@pytest.mark.slow
def test_recall_prints_a_table_and_the_offline_advice_comes_once(terminal, agents_home):
    engine = terminal("--offline")
    engine.expect("> ")
    engine.type("remember that my city is Porto\r")
    engine.expect("> ")
    engine.type("/recall Porto\r")
    table = engine.expect("> ")
    rows = table[table.index("score"):].replace("\r", "").splitlines()[:-1]
    assert rows[0].split() == ["score", "kind", "date", "text"]
    assert '"score":' not in table, "a table, not JSON"
    assert any(row.split()[1:] == ["fact", row.split()[2], "city:", "Porto"] for row in rows[2:]), rows
    assert all(len(row) < 80 for row in rows), "each row fits the terminal's 80 columns"
    for _ in range(2):
        engine.type("research the history of Porto and write a report\r")
        engine.expect("> ")
    engine.type(CTRL_D)
    assert engine.exit_code() == 0
    assert engine.screen.count("run with a model and --resume") == 1


def test_recall_table_cuts_each_text_to_the_width():
    found = [{"score": 0.912, "kind": "fact", "occurred_at": "2026-01-31T12:00:00Z",
              "content": "city: Porto"},
             {"score": 0.5, "kind": "log_archive", "created_at": "2026-02-01T08:00:00Z",
              "content": "word " * 40}]
    lines = recall_table(found, width=60).splitlines()
    assert lines[0].split() == ["score", "kind", "date", "text"]
    assert lines[2].split()[:4] == ["0.91", "fact", "2026-01-31", "city:"]
    assert lines[3].startswith("0.50   log_archive  2026-02-01  word") and lines[3].endswith("…")
    assert all(len(line) < 60 for line in lines)
    assert recall_table([]) == "(nothing recalled)"


def test_history_keeps_its_newest_lines_up_to_the_bound(tmp_path):
    readline = pytest.importorskip("readline")
    path = tmp_path / ".history"
    path.write_text("old line\n", encoding="utf-8")
    history = History(path)
    assert readline.get_history_item(1) == "old line"
    for number in range(HISTORY_LINES + 5):
        readline.add_history(f"line {number}")
    history.save()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == HISTORY_LINES and lines[-1] == f"line {HISTORY_LINES + 4}" and lines[0] == "line 5"
    readline.clear_history()


@pytest.mark.slow
def test_spinners_leave_the_prompt_and_the_reply_on_the_screen(terminal, agents_home):
    """The start-up spinner and the reply spinner each erase only their own line, before the prompt is
    printed."""
    write_config(agents_home, "llm:\n  backend: ollama\n")
    with ScriptedOllama() as server:
        slow = Block(then="Porto is in Portugal.")
        server.enqueue(slow)
        engine = terminal(host=server.host)
        engine.expect("starting finn")
        engine.expect("> ")
        engine.type("where is Porto?\r")
        assert slow.entered.wait(WAIT_S), "the turn never reached the model"
        engine.expect("finn is working")  # the reply spinner is on the screen while the model thinks
        slow.release()
        engine.expect("Porto is in Portugal.")
        engine.expect("> ")
        engine.type("/exit\r")
        assert engine.exit_code() == 0
    lines = screen_lines(engine.screen)
    assert "> where is Porto?" in lines, lines
    assert lines[lines.index("> where is Porto?") + 1] == "Porto is in Portugal.", lines
    assert "> /exit" in lines, lines
    assert not [line for line in lines if "starting finn" in line or "finn is working" in line], lines
    assert any(line.startswith("Talking to finn") for line in lines), lines


BACKGROUND_LOAD = """
import sys, threading
from core.terminal import progress, prompt_shown

started = threading.Event()

def load_model():
    with progress("loading the embedding model"):
        started.set()
        with open(sys.argv[1]) as gate:  # a FIFO: the load ends when the test writes to it
            gate.read()
    open(sys.argv[2], "w").close()

worker = threading.Thread(target=load_model)
worker.start()
started.wait()
with prompt_shown():
    line = input("> ")
worker.join()
print("got " + line)
"""


@pytest.mark.slow
def test_a_load_that_ends_after_the_prompt_appeared_leaves_the_prompt(tmp_path):
    """A background job's progress (a model loading) that ends while the user types does not wipe the line."""
    gate, done = tmp_path / "gate", tmp_path / "loaded"
    os.mkfifo(gate)
    script = tmp_path / "background_load.py"
    script.write_text(BACKGROUND_LOAD, encoding="utf-8")
    shell = Terminal([sys.executable, str(script), str(gate), str(done)],
                     dict(os.environ, PYTHONPATH=str(ROOT)),
                     ROOT)
    try:
        shell.expect("> ")
        shell.type("hello")
        shell.expect("hello")
        gate.write_text("go", encoding="utf-8")  # returns once the job has opened the FIFO: the load ends now
        for _ in range(WAIT_S * 10):  # a bound against a hang only: the file comes as soon as the load ends
            if done.exists():
                break
            select.select([], [], [], 0.1)
        assert done.exists(), "the background load never ended"
        shell.type("\r")
        shell.expect("got hello")
        assert shell.exit_code() == 0
    finally:
        shell.kill()
    lines = screen_lines(shell.screen)
    assert "> hello" in lines, lines
    assert not [line for line in lines if "loading the embedding model" in line], lines
