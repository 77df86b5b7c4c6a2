"""Reflection in the background: it never makes a write or a turn wait, one pass runs at a time in a process,
close() stops and joins it, and when it runs by itself (after a run, on its timer, on or off by backend)."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import write_home_config
from tests.ollama_server import Block, verbatim
from tests.reflection.conftest import reflect_config
from tests.reflection.model import answer

WAIT_S = 60.0
"""How long a test waits for background work it started (only a failure waits that long)."""


def until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT_S:g}s: {what}")
        time.sleep(0.02)


def reply_for(*texts: str) -> str:
    prompt = "Entries, each with its number\n" + "\n".join(f"[{n}] 2026-11-20 10:00 user: {t}"
                                                          for n, t in enumerate(texts, 1))
    return json.dumps(answer(prompt))


def learned_keys(manager) -> set[str]:
    return {f["key"] for f in manager.list_facts() if f["extracted"] is not None}


def test_a_turn_never_waits_for_reflection(reflecting, server):
    """While reflection's model call hangs, the next chat turn, appends, NOW.md updates, facts and recall all
    finish; then the held reply is read and its fact kept."""
    from core.engine import Engine

    held = Block(then=verbatim(reply_for("my editor is Helix")))
    server.enqueue("Noted.", held, "Nothing else to do.")
    with Engine("finn") as engine:
        manager = engine.manager
        try:
            assert engine.run("my editor is Helix").ok
            assert held.entered.wait(WAIT_S), "the run's end started reflection"
            assert engine.run("anything else?").response == "Nothing else to do."
            seq = manager.append_log("THOUGHT", "still going")
            manager.update_now("Writing", next_steps=["Review"])
            manager.save_fact("colour", "teal")
            assert manager.recall_memory("still going", spaces=[])
            assert manager.reflection.running() and not held.gate.is_set()
            assert manager.read_log(1)[0]["seq"] >= seq
            assert "user.editor" not in learned_keys(manager), "the held pass has kept nothing yet"
            held.release()
            until(lambda: "user.editor" in learned_keys(manager), "the held reply is read")
        finally:
            held.release()
            manager.close()


def test_close_stops_and_joins_reflection_and_abandons_the_call(finn, backend, server):
    """close() returns while the model call hangs: the thread is joined, nothing of the batch is kept or
    marked, and the next open reads it again."""
    from core.memory_manager import MemoryManager

    held = Block(then=verbatim(reply_for("my editor is Helix")))
    server.enqueue(held)
    finn.append_log("USER_FEEDBACK", "my editor is Helix")
    finn.reflect_soon(backend)
    assert held.entered.wait(WAIT_S)
    thread = finn.reflection._thread
    finn.close()
    assert not thread.is_alive() and not held.gate.is_set()
    held.release()
    with MemoryManager("finn") as again:
        assert again.reflection.status()["lag"]["log"] == 1 and learned_keys(again) == set()
        again.reflection.run(backend)
        assert learned_keys(again) == {"user.editor"}


def test_one_pass_at_a_time_in_a_process(reflecting, backend, server):
    """Two agents' reflections in one process: the second's model call waits for the first's pass to end."""
    from core.memory_manager import MemoryManager

    held = Block(then=verbatim(reply_for("my editor is Helix")))
    server.enqueue(held)
    with MemoryManager("finn") as finn, MemoryManager("nova") as nova:
        finn.append_log("USER_FEEDBACK", "my editor is Helix")
        nova.append_log("USER_FEEDBACK", "my bike is a Brompton")
        finn.reflect_soon(backend)
        assert held.entered.wait(WAIT_S)
        nova.reflect_soon(backend)
        until(lambda: nova.reflection.running(), "nova's thread started")
        assert len(server.chat_requests) == 1, "nova's pass waits for finn's"
        held.release()
        until(lambda: learned_keys(nova) == {"user.bike"}, "nova's pass ran after finn's")
        assert learned_keys(finn) == {"user.editor"}


def test_the_timer_reflects_during_a_long_session(agents_home, server, backend):
    """Once started, reflection comes back every reflect.interval_s to what was recorded since."""
    from core.memory_manager import MemoryManager

    write_home_config(agents_home, reflect_config(interval_s=0.2))
    with MemoryManager("finn") as finn:
        finn.reflect_soon(backend)
        finn.append_log("USER_FEEDBACK", "my editor is Helix")
        until(lambda: learned_keys(finn) == {"user.editor"}, "the timer read the first entry")
        finn.append_log("USER_FEEDBACK", "my bike is a Brompton")
        until(lambda: learned_keys(finn) == {"user.editor", "user.bike"}, "the timer read the second one")


@pytest.mark.parametrize("enabled, learns", [("auto", False), ("true", True), ("false", False)])
def test_the_offline_backend_reads_by_rules_only_when_asked_to(agents_home, enabled, learns):
    """reflect.enabled auto leaves the offline backend alone; true reads explicit statements with its rules
    (the fallback, named so in the provenance); false never reflects in the background."""
    from core.engine import Engine

    write_home_config(agents_home, {"llm": {"backend": "offline"}, "reflect": {"enabled": enabled}})
    with Engine("finn", offline=True) as engine:
        engine.run("I moved to Porto yesterday")
        if learns:
            until(lambda: learned_keys(engine.manager) == {"user.city"}, "the rules read the move")
            [fact] = [f for f in engine.manager.list_facts() if f["key"] == "user.city"]
            assert fact["extracted"]["model"] == "offline-rules" and fact["extracted"]["prompt"] == "rules"
        else:
            assert not engine.manager.reflection.running()
        engine.manager.close()


def test_a_one_shot_run_learns_from_itself_before_its_process_ends(reflecting, server):
    """`agentos run TASK` shows the reply, then lets reflection read the run before it exits (a process that
    ended at once would abandon the model call)."""
    from core.commands import main
    from core.memory_manager import MemoryManager
    from tests.inprocess import run_main

    server.enqueue("Noted.")
    ran = run_main(main, ["run", "--agent", "finn", "--create", "my editor is Helix"])
    assert ran.returncode == 0 and "Noted." in ran.stdout, ran.stderr
    with MemoryManager("finn") as manager:
        assert learned_keys(manager) == {"user.editor"}


def test_a_log_md_compaction_wakes_reflection_which_reads_the_archive(finn):
    """After a compaction archives LOG.md's entries, reflection (with the configured model) reads them from
    the
    archive: a compaction never hides an entry from it."""
    finn.append_log("USER_FEEDBACK", "my editor is Helix")
    finn.compact_log("the user named their editor")
    until(lambda: learned_keys(finn) == {"user.editor"}, "the archived entry is read")
    assert finn.reflection.status()["lag"]["total"] == 0


def test_reflect_model_reads_with_a_model_of_its_own(agents_home, model, monkeypatch):
    """With reflect.model, reflection asks that model on the configured server, not the engine's (whose prompt
    cache it then leaves alone), and the provenance names it."""
    from core.engine import Engine
    from tests.ollama_server import ScriptedOllama

    with ScriptedOllama(models=("qwen2.5", "smollm2"), default=model) as server:
        monkeypatch.setenv("OLLAMA_HOST", server.host)
        write_home_config(agents_home, reflect_config(model="smollm2"))
        server.enqueue("Noted.")
        with Engine("finn") as engine:
            assert engine.run("my editor is Helix").ok
            until(lambda: learned_keys(engine.manager) == {"user.editor"}, "the run is read")
            [fact] = [f for f in engine.manager.list_facts() if f["key"] == "user.editor"]
            engine.manager.close()
        assert [r["model"] for r in server.chat_requests] == ["qwen2.5", "smollm2"]
        assert fact["extracted"]["model"] == "smollm2"
