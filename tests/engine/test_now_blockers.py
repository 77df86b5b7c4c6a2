"""NOW.md's blockers go when the block is gone: a later run that reaches the model clears what an earlier run
was blocked by, and a model call that succeeds after a failed one clears that failure."""

from __future__ import annotations

from core.llm.offline import BLOCKED_REASON
from core.memory_manager import MemoryManager
from core.terminal import exit_codes
from tests.engine.conftest import run_cli, write_config
from tests.ollama_server import Error, tool_call


def _now_seen(seen: list, reply: str):
    """A scripted reply that first records NOW.md as it is on disk while the model call is made."""
    def answer(body: dict) -> str:
        now = MemoryManager("finn").now_state()
        seen.append((now.status, now.blockers, now.resume_hint))
        return reply
    return answer


def test_offline_blocker_is_cleared_once_a_later_run_reaches_the_model(agents_home, server, make_engine):
    """Offline leaves "the offline backend cannot…" in NOW; a run with a model clears it as soon as the model
    answers, not only when the turn ends (an interrupted turn would otherwise keep it)."""
    blocked = run_cli("--agent", "finn", "--offline", "Write a market report on copper")
    assert blocked.returncode == exit_codes.BLOCKED, blocked.stderr
    assert MemoryManager("finn").now_state().blockers == (BLOCKED_REASON,)

    write_config(agents_home, "llm:\n  backend: ollama\n")
    seen: list = []
    server.enqueue(tool_call("save_fact", key="copper_price", value="9000 USD/t", category="general"),
                   _now_seen(seen, "Saved the copper price."))
    result = make_engine().run("Copper is at 9000 USD/t, remember it")

    assert result.ok, result.response
    assert seen == [("active", (), seen[0][2])], "the stale blocker was still in NOW.md during the run"
    assert "run with a model" not in seen[0][2]
    assert MemoryManager("finn").now_state().blockers == ()


def test_failed_model_call_blocker_is_cleared_when_the_retry_succeeds(agents_home, server, make_engine):
    """An HTTP 500 sets NOW to error with the failure as blocker; the next call that answers clears it and NOW
    is active again for the rest of the turn."""
    write_config(agents_home, "llm:\n  backend: ollama\n")
    after: list = []
    server.enqueue(
        Error(500, "out of memory"),
        tool_call("save_fact", key="city", value="Lisbon", category="personal"),
        _now_seen(after, "Saved: you live in Lisbon."),
    )
    result = make_engine().run("I live in Lisbon, remember it")

    assert result.ok, result.response
    status, blockers, hint = after[0]
    assert blockers == (), "the failed call's blocker stayed after the model answered"
    assert status == "active" and "Retrying the model call" not in hint
    errors = [e for e in MemoryManager("finn").read_log(50) if e["type"] == "ERROR"]
    assert len(errors) == 1 and "out of memory" in errors[0]["content"]
