"""LangGraph checkpoints hold a running turn's raw messages: a killed run's reach no other file and no prompt
beyond what the user typed, and a finished turn's are gone from the disk."""

from __future__ import annotations

import pytest

from tests.engine.conftest import kill_engine_at, run_cli
from tests.leaks.conftest import write_config
from tests.leaks.leak_check import leaks, prompt_leaks
from tests.ollama_server import Block, tool_call

VALUE = "sk-live-4242-9911"
TASK = f"Keep this for the deploys: {VALUE}"


@pytest.mark.slow
def test_a_killed_runs_checkpoint_leaks_nowhere_and_is_gone_once_the_turn_ends(ollama, agents_home,
                                                                               storage_backend):
    """SIGKILL after save_fact: only the checkpoints hold the value (the user's own request), in
    checkpoints.db or LangGraph's tables of the agent's schema; resuming sends it in no prompt but as the
    user's request; once the turn ends no checkpoint holds it."""
    write_config(agents_home, {"llm": {"backend": "ollama"}})
    blocked = Block()
    server = ollama
    server.enqueue(tool_call("save_fact", key="deploy_token", value=VALUE, category="secret"), blocked,
                   "Saved your deploy token as a secret.", "The weather is fine.")
    kill_engine_at(blocked, "--agent", "finn", TASK)
    root = agents_home / "finn"
    held = leaks(root, VALUE)
    assert held and all(place.startswith(("memory/checkpoints.db",
                                          "postgres checkpoint")) for place in held), \
        f"the killed turn leaked beyond its checkpoint: {held}"
    assert leaks(root, VALUE, checkpoints=False) == []

    resumed = run_cli("--agent", "finn", "Continue")
    assert resumed.returncode == 0, resumed.stderr
    later = run_cli("--agent", "finn", "How is the weather?")
    assert later.returncode == 0, later.stderr

    # The first request came before the value was saved as a secret: from the next one on, only the user's
    # request (the turn's own first message) may show it.
    assert prompt_leaks(server.chat_requests[1:], VALUE, typed=(TASK,)) == []
    last = server.chat_requests[-1]["messages"]
    assert all(VALUE not in str(m.get("content")) for m in last), "a later turn replayed the secret"
    assert leaks(root, VALUE) == [], "a finished turn's checkpoints stay readable on disk"
