"""Self-annealing, malformed tool calls and a model server that is down."""

from __future__ import annotations

import os
from pathlib import Path

from core.memory_manager import MemoryManager
from tests.engine.conftest import run_cli, write_config
from tests.ollama_server import Error, raw, tool_call

BROKEN_SKILL = '''
from core.skills.base import skill_metadata


def execute(agent_name: str, url: str) -> dict:
    """Fetch a web page.

    Args:
        url: the address.
    """
    raise RuntimeError("network unreachable while fetching " + url)


SKILL_METADATA = skill_metadata(execute, name="fetch_page")
'''


def _install_broken_skill(home: Path) -> None:
    skills = home / "finn" / "skills"
    skills.mkdir(parents=True, exist_ok=True)
    (skills / "fetch_page.py").write_text(BROKEN_SKILL, encoding="utf-8")


def test_failing_tool_is_logged_and_the_model_recovers(server, api, agents_home, make_engine):
    """A tool that raises: ERROR with traceback in LOG.md, NOW goes to error, and the model is re-prompted to
    recover."""
    write_config(agents_home, f"llm:\n  backend: {api}\n")
    _install_broken_skill(agents_home)
    seen_now = []
    server.enqueue(tool_call("fetch_page", url="https://example.org"),
                   lambda body: seen_now.append(MemoryManager("finn").now_state().status) or
                   "I could not fetch the page: the network is unreachable.")
    result = make_engine().run("Summarise https://example.org")

    assert result.ok and "could not fetch" in result.response
    assert seen_now == ["error"]
    entries = MemoryManager("finn").scan_log().entries
    errors = [e for e in entries if e.type == "ERROR"]
    assert len(errors) == 1 and "RuntimeError" in errors[0].content
    assert "Traceback" in errors[0].metadata["traceback"]
    retry_prompt = server.chat_requests[1]["messages"]
    memory = [m["content"] for m in retry_prompt if m["role"] == "user"
              and m["content"].startswith("# Memory")]
    assert len(memory) == 1 and retry_prompt[-5]["content"] == memory[0], (
        "the memory message comes before the turn"
    )
    note = retry_prompt[-4]["content"]
    assert note.startswith("## Recovery") and "network unreachable" in note, (
        "this call's note comes before the turn"
    )
    assert retry_prompt[-3]["content"] == "Summarise https://example.org"
    assert "network unreachable" in retry_prompt[-1]["content"] and retry_prompt[-1]["role"] == "tool"


def test_run_that_keeps_failing_exits_non_zero_with_recovery_steps(server, agents_home):
    """Still failing after max_retries: exit code 1, RUN_END outcome error, NOW says what to do."""
    write_config(agents_home, "llm:\n  backend: ollama\nengine:\n  max_retries: 1\n")
    _install_broken_skill(agents_home)
    server.enqueue(tool_call("fetch_page", url="https://a.example"), tool_call("fetch_page", url="https://b.example"))
    result = run_cli("--agent", "finn", "Summarise two pages")

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    memory = MemoryManager("finn")
    now = memory.now_state()
    assert now.status == "error" and "--resume" in now.resume_hint
    assert "Review the ERROR entries in LOG.md" in now.next_steps
    run_end = [e for e in memory.scan_log().entries if e.type == "RUN_END"][-1]
    assert run_end.metadata["outcome"] == "error"


def test_malformed_tool_calls_are_fed_back_to_the_model(server, api, agents_home, make_engine):
    """Unparseable tool arguments and arguments that miss the schema both reach the model as errors it can
    fix."""
    write_config(agents_home, f"llm:\n  backend: {api}\n")
    server.enqueue(
        raw({"content": "",
             "tool_calls": [{"function": {"name": "save_fact", "arguments": "{key: broken"}}]}),
        tool_call("save_fact", key="city"),
        tool_call("save_fact", key="city", value="Lisbon", category="personal"),
        "Saved: you live in Lisbon.",
    )
    result = make_engine().run("I live in Lisbon, remember it")

    assert result.ok
    second = server.chat_requests[1]["messages"]
    assert second[-4]["content"].startswith("# Memory"), "the memory message comes before the turn"
    assert second[-3]["content"].startswith("## Recovery"), (
        "this call's note on the failed call comes before it"
    )
    assert second[-1]["role"] == "user" and "malformed tool call" in second[-1]["content"]
    third = server.chat_requests[2]["messages"]
    assert third[-1]["role"] == "tool" and "missing required argument" in third[-1]["content"]
    assert MemoryManager("finn").get_fact("city") == "Lisbon"


DOWN = {"ollama": "error: no Ollama server answers at http://127.0.0.1:9",
        "openai": "error: no OpenAI-compatible server answers at http://127.0.0.1:9/v1"}


def test_server_down_is_one_line_error_and_recorded(api, agents_home):
    """With llm.backend ollama or openai and no server: one-line error, exit 6 (backend), ERROR and RUN_END
    error in LOG, NOW error."""
    write_config(agents_home, f"llm:\n  backend: {api}\n")
    result = run_cli("--agent", "finn", "Do something")

    assert result.returncode == 6  # core.terminal.exit_codes.BACKEND
    assert result.stderr.strip().splitlines()[-1].startswith(DOWN[api])
    assert "Traceback" not in result.stderr
    memory = MemoryManager("finn")
    types = [e.type for e in memory.scan_log().entries]
    assert "ERROR" in types and types[-1] == "RUN_END"
    assert memory.now_state().status == "error"


def test_auto_backend_falls_back_to_offline_and_says_so(agents_home, monkeypatch):
    """llm.backend auto with no server: the offline backend answers, announced on stderr."""
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    result = run_cli("--agent", "finn", "remember that my favourite colour is teal")

    assert result.returncode == 0, result.stderr
    assert "No Ollama answers at http://127.0.0.1:9" in result.stderr and "OFFLINE" in result.stderr
    assert "nor an OpenAI-compatible server at http://127.0.0.1:9/v1" in result.stderr
    assert MemoryManager("finn").get_fact("favourite_colour") == "teal"


def test_auto_backend_imports_no_client_for_a_server_that_is_not_there():
    """With nothing listening at Ollama's nor at the OpenAI-compatible server's address, ``auto`` chooses the
    offline backend without importing the ollama or openai client (about a second of CPU that an agent's
    first automatic compaction would spend holding the GIL its writers need)."""
    import socket
    import subprocess
    import sys

    with socket.socket() as closed:  # a port that was free a moment ago: nothing listens there
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    script = ("import sys; from core.config import LLMConfig; from core.llm import choose_backend; "
              "choice = choose_backend(LLMConfig()); "
              "print(choice.backend.name, 'ollama' in sys.modules, 'openai' in sys.modules)")
    env = {**os.environ, "OLLAMA_HOST": f"http://127.0.0.1:{port}", "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["offline", "False", "False"]


def test_auto_backend_takes_an_openai_server_when_no_ollama_answers(agents_home, monkeypatch):
    """llm.backend auto, no Ollama, a llama-server (the OpenAI API only) at llm.host: the run uses it and says
    so, with the window the server gave."""
    from tests.ollama_server import ScriptedOllama

    with ScriptedOllama(apis=("openai",), context_length=8192) as server:
        server.enqueue("Hello from llama.cpp.")
        write_config(agents_home, f"llm:\n  host: {server.host}\n")
        result = run_cli("--agent", "finn", "hello")
        assert [body["openai"]["model"] for body in server.chat_requests] == ["llama3.1"]

    assert result.returncode == 0, result.stderr
    assert (
        f"backend: openai (no Ollama answers at {server.host}), model llama3.1 at {server.host}/v1"
        in result.stderr
    )
    assert "window: 8192 tokens (llama.cpp /props n_ctx)" in result.stderr
    assert "Hello from llama.cpp." in result.stdout


def test_second_engine_on_a_running_agent_is_refused(agents_home, make_engine):
    """While one engine runs an agent, another is refused with a clear error; once closed, it may start."""
    import pytest

    from core.errors import LockTimeoutError

    first = make_engine(offline=True)
    with pytest.raises(LockTimeoutError, match="already running"):
        make_engine(offline=True)
    first.close()
    assert make_engine(offline=True).run("status").ok


def test_missing_model_and_server_errors(server, api, agents_home, make_engine):
    """A model the server lacks is ModelNotFoundError naming the fix; an HTTP 500 is retried as a recoverable
    error."""
    import pytest

    from core.errors import ModelNotFoundError

    write_config(agents_home, f"llm:\n  backend: {api}\n")
    missing = make_engine(model="no-such-model")
    fix = {"ollama": "ollama pull", "openai": "serves 'llama3.1': pass --model"}[api]
    with pytest.raises(ModelNotFoundError, match=fix):
        missing.run("hello")
    missing.close()  # one engine an agent at a time
    server.enqueue(Error(500, "out of memory"), "Hello again.")
    result = make_engine().run("hello")
    assert result.ok and result.response == "Hello again."


def test_auto_backend_at_an_openai_address_names_the_openai_server_only(agents_home, monkeypatch):
    """llm.host with a path (``/v1``) is an OpenAI-compatible server's address: auto does not call it an
    Ollama that does not answer, whether the server answers or not."""
    from tests.ollama_server import ScriptedOllama

    with ScriptedOllama(apis=("openai",), context_length=8192) as server:
        server.enqueue("Hello from llama.cpp.")
        write_config(agents_home, f"llm:\n  host: {server.host}/v1\n")
        result = run_cli("--agent", "finn", "hello")
    assert result.returncode == 0, result.stderr
    assert f"backend: openai, model llama3.1 at {server.host}/v1\n" in result.stderr
    assert "Ollama" not in result.stderr
    result = run_cli("--agent", "finn", "hello")  # the server is gone
    assert f"No OpenAI-compatible server answers at {server.host}/v1. " in result.stderr
    assert "Ollama answers" not in result.stderr


def test_a_status_request_that_fails_reopens_no_finished_objective(agents_home):
    """"status" (or "continue" with nothing open) only reads NOW: when the model server is down its run ends
    in error (ERROR and RUN_END logged, exit code 6), and NOW still says the last objective is done. It said
    that objective hit the error and advised --resume, which would have run the finished request again."""
    with MemoryManager("finn") as memory:
        memory.update_now(objective="Publish the notes", state="done",
                          current_step="Finished the last request")
    for task in ("status", "continue"):
        result = run_cli("--agent", "finn", "--backend", "openai", "--host", "http://127.0.0.1:9/v1",
                         "--model", "m", task)
        assert result.returncode == 6, result.stderr
    with MemoryManager("finn") as memory:
        now = memory.now_state()
        assert (now.status, now.objective, now.blockers) == ("done", "Publish the notes", ())
        entries = memory.scan_log().entries
    assert [e.type for e in entries].count("ERROR") == 2
    assert [e.metadata["outcome"] for e in entries if e.type == "RUN_END"] == ["error", "error"]
