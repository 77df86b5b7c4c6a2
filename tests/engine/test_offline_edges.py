"""The offline backend and the interactive mode at their edges: keys in any script, no internal placeholder in
a reply, nothing continued once finished, a status question that changes nothing, and commands that say what
they did (or that they are unknown)."""

from __future__ import annotations

from core.llm.backend import THIS_REQUEST
from core.llm.offline import fact_key
from core.memory_manager import MemoryManager
from tests.engine.conftest import run_cli, write_config

OFFLINE_WARNING = "WARNING: running with the OFFLINE backend"


def test_fact_keys_keep_letters_of_any_script(agents_home):
    """"remember that my café is ..." saves café (not caf), however the é was typed, and finds it again."""
    assert fact_key("café") == fact_key("cafe\u0301") == "café"
    assert fact_key("Straße Nummer") == "straße_nummer" and fact_key("API key") == "api_key"
    saved = run_cli("--agent", "finn", "--offline", "remember that my café is Le Procope")
    assert saved.returncode == 0 and "Saved café" in saved.stdout, saved.stderr
    asked = run_cli("--agent", "finn", "--offline", "what is my cafe\u0301?")
    assert asked.stdout.strip() == "Your café is Le Procope."


def test_a_long_open_ended_task_is_quoted_not_a_placeholder(agents_home):
    """The blocked reply to a task of 48 characters or more names the task as the objective."""
    task = "Research Python asyncio and write a summary of how its event loop schedules tasks"
    result = run_cli("--agent", "finn", "--offline", task)
    assert result.returncode == 3
    assert THIS_REQUEST not in result.stdout and f"Objective: {task}." in result.stdout


def test_continue_after_a_finished_request_continues_nothing(agents_home):
    """"continue" once the last request is done says there is nothing to continue, and NOW stays done."""
    assert run_cli("--agent", "finn", "--offline", "remember that my city is Porto").returncode == 0
    with MemoryManager("finn") as memory:
        before = memory.now_state()
    result = run_cli("--agent", "finn", "--offline", "continue")
    assert result.returncode == 0
    assert "nothing to continue" in result.stdout and "remember that my city is Porto" in result.stdout
    with MemoryManager("finn") as memory:
        after = memory.now_state()
        assert (after.status, after.objective) == ("done", before.objective)
        assert not any(e["type"] == "TOOL_USE" and "update_status" in e["content"]
                       for e in memory.read_log(40))


def test_a_status_question_leaves_now_as_it_was(agents_home):
    """"status" on an interrupted objective answers it and leaves NOW interrupted with its plan."""
    with MemoryManager("finn") as memory:
        memory.update_now(objective="Write the report", next_steps=["Draft the intro"], state="interrupted")
    result = run_cli("--agent", "finn", "--offline", "status")
    assert result.returncode == 0 and "Status: interrupted" in result.stdout
    with MemoryManager("finn") as memory:
        now = memory.now_state()
        assert (now.status, now.objective, now.next_steps) == ("interrupted", "Write the report",
                                                               ["Draft the intro"])


def test_exit_with_words_after_it_leaves(agents_home):
    """``/exit now`` leaves as ``/exit`` does (as ``/status now`` is ``/status``): it was answered ``unknown
    command /exit`` with a list that names /exit, and the session went on."""
    result = run_cli("--agent", "finn", "--offline", stdin="/exit now\nremember that my city is Porto\n")
    assert result.returncode == 0, result.stderr
    assert "unknown command" not in result.stdout
    with MemoryManager("finn") as memory:
        assert memory.get_fact("city") is None


def test_interactive_commands_say_what_they_did(agents_home):
    """/compact with nothing to compact says so (and logs no compaction), /status gives the backend in one
    line (the offline warning is printed once, at start), and an unknown command is called unknown."""
    write_config(agents_home, "provider:\n  name: lcm\n")
    lines = "remember that my city is Porto\n/compact\n/status\n/bogus\n/exit\n"
    result = run_cli("--agent", "finn", "--offline", stdin=lines)
    assert result.returncode == 0, result.stderr
    assert "nothing to compact" in result.stderr and "->" not in result.stdout
    assert "backend: offline, model offline-rules" in result.stdout
    assert (result.stdout + result.stderr).count(OFFLINE_WARNING) == 1
    assert "unknown command /bogus; commands: /compact" in result.stdout
    with MemoryManager("finn") as memory:
        assert not any(e["metadata"].get("kind") == "session_compaction" for e in memory.read_log(40))
