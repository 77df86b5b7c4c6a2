"""``agentos reflect`` and ``agentos facts --json``, the learned profile in the engine's memory message, and
the ``reflect`` config section."""

from __future__ import annotations

import json

import pytest

from core.commands import main
from core.config import Config, merge
from core.errors import ConfigError
from tests.inprocess import run_main
from tests.ollama_server import ScriptedOllama, verbatim
from tests.reflection.conftest import MODEL


def agentos(*args: str):
    return run_main(main, args)


def test_agentos_reflect_learns_and_reports_and_facts_show_their_sources(finn, server):
    """agentos reflect reads with the configured model and says what it did; --status --json shows the lag,
    the failure rate per model and the quarantine; facts --json shows each fact's sources and extraction."""
    seq = finn.append_log("USER_FEEDBACK", "my editor is Helix")
    finn.save_fact("timezone", "Europe/Lisbon")
    finn.close()
    server.enqueue(verbatim("{\"facts\": ["))  # the first reply is cut off, the second one is fine
    ran = agentos("reflect", "--agent", "finn")
    assert ran.returncode == 0, ran.stderr
    assert "read by qwen2.5" in ran.stdout and "learned: 1 facts" in ran.stdout
    assert "replies unusable: 1" in ran.stdout and "left to read: 0" in ran.stdout
    status = json.loads(agentos("reflect", "--agent", "finn", "--status", "--json").stdout)
    assert status["lag"]["total"] == 0 and status["learned"]["facts"] == 1 and status["quarantined"] == []
    assert status["models"]["qwen2.5"]["calls"] == 2 and status["models"]["qwen2.5"]["failure_rate"] == 0.5
    facts = {f["key"]: f for f in json.loads(agentos("facts", "--agent", "finn", "--json").stdout)}
    assert facts["user.editor"]["sources"] == [f"log:{seq}"]
    assert facts["user.editor"]["extracted"]["model"] == "qwen2.5"
    assert facts["timezone"]["sources"] == [] and facts["timezone"]["extracted"] is None
    text = agentos("reflect", "--agent", "finn", "--status").stdout
    assert "qwen2.5: 2 calls, 1 unusable replies (50.0%)" in text


def test_agentos_reflect_offline_says_it_reads_by_rules(agents_home):
    """With no model server the offline backend's rules read, and the output says it is the fallback."""
    agentos("init", "--agent", "finn")
    from core.memory_manager import MemoryManager

    with MemoryManager("finn") as manager:
        manager.append_log("USER_FEEDBACK", "remember that my deploy target is fly.io")
    ran = agentos("reflect", "--agent", "finn", "--offline")
    assert "the offline backend's rules (the fallback" in ran.stdout and "learned: 1 facts" in ran.stdout
    assert "--status only" in agentos("reflect", "--agent", "finn", "--status", "--rebuild").stderr


def test_the_engine_shows_the_learned_profile_in_its_memory_message(reflecting, server, backend):
    """Once reflection learned facts about the user, the memory message starts with a profile whose lines name
    their facts; those facts are not listed again under Facts; before, no profile section appears."""
    from core.engine import Engine
    from core.engine.prompting.memory_message import PROFILE_TITLE, memory_context

    with Engine("finn") as engine:
        manager = engine.manager
        manager.save_fact("project", "AgentOS")
        assert PROFILE_TITLE not in memory_context(manager, 2000)
        manager.append_log("USER_FEEDBACK", "I moved to Porto yesterday. my editor is Helix")
        manager.reflection.run(backend)
        text = memory_context(manager, 2000)
        profile = text.split(PROFILE_TITLE)[1].split("## Facts")[0]
        assert "- city: Porto [user.city]" in profile and "- editor: Helix [user.editor]" in profile
        facts = text.split("## Facts")[1].split("## NOW")[0]
        assert "user.city" not in facts and "project (general): AgentOS" in facts
        small = memory_context(manager, 150)
        assert len(small) // 4 <= 150 + 40
        manager.close()


def test_reflect_enabled_takes_auto_and_yaml_booleans_and_refuses_the_rest():
    """reflect.enabled is auto, true or false (YAML's true/false/on/off read as booleans); anything else names
    the valid choices."""
    assert Config().reflect.enabled == "auto"
    assert merge(Config(), {"reflect": {"enabled": True}}).reflect.enabled == "true"
    assert merge(Config(), {"reflect": {"enabled": False}}).reflect.enabled == "false"
    with pytest.raises(ConfigError, match="auto, true, false"):
        merge(Config(), {"reflect": {"enabled": "sometimes"}})


def test_agentos_reflect_takes_the_backend_flags_of_agentos_run(agents_home, model):
    """``agentos reflect --backend openai --host URL --model M`` reads with the server that ``agentos run``
    was pointed at by the same flags (a llama-server on its own port), with no config file to write
    first."""
    agentos("init", "--agent", "finn")
    from core.memory_manager import MemoryManager

    with MemoryManager("finn") as manager:
        manager.append_log("USER_FEEDBACK", "my editor is Helix")
    with ScriptedOllama(models=(MODEL,), default=model, apis=("openai",)) as llama_server:
        ran = agentos("reflect", "--agent", "finn", "--backend", "openai",
                      "--host", f"{llama_server.host}/v1", "--model", MODEL)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.startswith(f"backend: openai, model {MODEL} at {llama_server.host}/v1")
    assert f"read by {MODEL}" in ran.stdout and "learned: 1 facts" in ran.stdout


def test_agentos_reflect_reads_with_reflect_model(agents_home, server):
    """``agentos reflect`` asks ``reflect.model`` when it is set, as the background does, not ``llm.model``
    (which this server does not serve); ``--model`` still wins over both."""
    from tests.conftest import write_home_config
    from tests.reflection.conftest import reflect_config

    write_home_config(agents_home, {**reflect_config(model=MODEL),
                                    "llm": {"backend": "ollama", "model": "llama3.1", "timeout_s": 10.0}})
    agentos("init", "--agent", "finn")
    from core.memory_manager import MemoryManager

    with MemoryManager("finn") as manager:
        manager.append_log("USER_FEEDBACK", "my editor is Helix")
    ran = agentos("reflect", "--agent", "finn")
    assert ran.returncode == 0, ran.stderr
    assert f"read by {MODEL}" in ran.stdout and "learned: 1 facts" in ran.stdout
    assert "model llama3.1 at" in agentos("reflect", "--agent", "finn", "--model", "llama3.1").stderr


def test_agentos_reflect_says_what_is_quarantined_and_how_to_retry_it(finn, server):
    """An entry whose replies cannot be used: the pass's report does not stop at "left to read: 0" but names
    the quarantined entry and --retry; --status says "1 attempt", not "1 attempts"."""
    finn.append_log("USER_FEEDBACK", "my editor is Helix")
    finn.close()
    server.enqueue(*[verbatim("{")] * 2)  # both replies cut off: the lone entry is quarantined
    ran = agentos("reflect", "--agent", "finn")
    assert ran.returncode == 0, ran.stderr
    assert ("left to read: 0; quarantined: 1 entry (tried again at their next try; `agentos reflect --agent "
            "finn --retry` tries them now; --status lists them)") in ran.stdout
    assert json.loads(agentos("reflect", "--agent", "finn", "--json").stdout)["waiting"] == 1
    text = agentos("reflect", "--agent", "finn", "--status").stdout
    assert "quarantined: 1 entry whose replies could not be used, tried again at their next try; " in text
    assert " 1 attempt, next try " in text and "1 attempts" not in text
