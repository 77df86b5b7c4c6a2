"""Session compaction (seed 002): automatic before a turn, on demand, and its failure modes."""

from __future__ import annotations

import pytest

from core.errors import SummarizerError
from tests.engine.conftest import ROOT, run_cli, write_config
from tests.inprocess import run_script
from tests.ollama_server import Error

HANDOFF = ("## Goal\nPlan a garden\n## Progress\n- chose tomatoes\n## Key Decisions\n- raised beds\n"
           "## Files Changed\n(none)\n## Current State\nplanning\n## Blockers / Gotchas\n(none)\n"
           "## Next Steps\n- buy seeds")
LONG = "The garden plan needs sun, water, soil, compost and patience. " * 6


def scripted(summary_reply=HANDOFF, answer="Noted."):
    """Answer summary requests (no tools offered) with ``summary_reply``, chat turns with ``answer``."""
    def reply(body):
        if not body.get("tools"):
            return summary_reply(body) if callable(summary_reply) else summary_reply
        return answer
    return reply


def _summary_requests(server):
    return [r for r in server.chat_requests if not r.get("tools")]


def test_simple_session_is_handed_off_automatically_before_a_turn(server, agents_home, make_engine):
    """Over compaction.max_tokens, a handoff summary replaces all but keep_tail messages before the next
    turn."""
    write_config(agents_home, "llm:\n  backend: ollama\nprovider:\n  name: simple\n"
                              "compaction:\n  max_tokens: 300\n  keep_tail: 4\n")
    server.default = scripted()
    engine = make_engine()
    for turn in range(6):
        assert engine.run(f"Step {turn}: {LONG}").ok
    assert len(_summary_requests(server)) >= 1
    handoff_prompt = _summary_requests(server)[0]["messages"][-1]["content"]
    for section in ("## Goal", "## Progress", "## Key Decisions", "## Files Changed", "## Current State",
                    "## Blockers / Gotchas", "## Next Steps"):
        assert section in handoff_prompt
    last = server.chat_requests[-1]["messages"]
    assert last[1]["role"] == "user" and last[1]["content"].startswith("[Summary of the earlier "
                                                                       "conversation]")
    assert "buy seeds" in last[1]["content"]
    assert len(last) <= 1 + 2 + 4 + 1 + 1, (
        "system, the summary pair, keep_tail messages, memory, the new request"
    )
    assert engine.conversation.handoff() is not None
    log_text = engine.paths.log_file.read_text(encoding="utf-8")
    assert "session_compaction" in log_text


def test_empty_summary_is_an_error_and_leaves_the_session_untouched(server, agents_home, make_engine):
    """/compact with an empty summary raises 'empty summary response' and changes nothing."""
    write_config(agents_home, "llm:\n  backend: ollama\nprovider:\n  name: simple\n"
                              "compaction:\n  max_tokens: -1\n  keep_tail: 2\n")
    server.default = scripted(summary_reply="   ")
    engine = make_engine()
    for turn in range(3):
        engine.run(f"Step {turn}: {LONG}")
    before = engine.conversation.history(100_000)
    with pytest.raises(SummarizerError, match="empty summary response"):
        engine.compact()
    assert engine.conversation.handoff() is None
    assert engine.conversation.history(100_000) == before
    assert _summary_requests(server), "max_tokens -1 disables only the automatic compaction"


def test_failed_automatic_compaction_warns_and_the_turn_goes_on(server, agents_home, make_engine):
    """A summary request that fails before a turn logs a warning; the turn still runs with the full
    history."""
    write_config(agents_home, "llm:\n  backend: ollama\nprovider:\n  name: simple\n"
                              "compaction:\n  max_tokens: 150\n  keep_tail: 2\n")
    server.default = scripted(summary_reply=lambda body: Error(500, "model crashed"))
    engine = make_engine()
    results = [engine.run(f"Step {turn}: {LONG}") for turn in range(4)]

    assert all(r.ok for r in results)
    assert engine.conversation.handoff() is None
    assert "automatic session compaction failed" in engine.paths.log_file.read_text(encoding="utf-8")


def test_lcm_session_runs_the_providers_full_compaction(server, agents_home, make_engine):
    """With LCM, automatic compaction is the provider's full compaction: summaries appear, context shrinks."""
    # A session compaction keeps compaction.keep_tail messages verbatim, with LCM too.
    write_config(agents_home, "llm:\n  backend: ollama\nprovider:\n  fresh_tail: 4\n  leaf_chunk_size: 4\n"
                              "compaction:\n  max_tokens: 600\n  keep_tail: 4\n")
    server.default = scripted(summary_reply="The user described garden plans: sun, water, compost.")
    engine = make_engine()
    for turn in range(8):
        assert engine.run(f"Step {turn}: {LONG}").ok
    stats = engine.provider.stats(engine.session)
    assert stats.summary_count >= 1
    assert stats.context_tokens < stats.token_count
    assert "(lcm)" in engine.paths.log_file.read_text(encoding="utf-8")


def test_compact_script_with_offline_backend_writes_a_handoff(agents_home):
    """scripts/compact_session.py --offline compacts a Simple session with a deterministic handoff summary."""
    write_config(agents_home, "provider:\n  name: simple\ncompaction:\n  keep_tail: 2\n")
    plan = "sow tomatoes in March, move them to the raised beds in May, water twice a week " * 4
    for fact in ("my city is Lisbon", f"my garden plan is {plan}", f"my backup plan is {plan}"):
        assert run_cli("--agent", "finn", "--offline", f"remember that {fact}").returncode == 0
    result = run_script(ROOT / "scripts" / "compact_session.py", "--agent", "finn", "--offline")
    assert result.returncode == 0, result.stderr
    assert "(handoff)" in result.stdout and "## Next Steps" in result.stdout
    assert "remember that my city is Lisbon" in result.stdout


def test_a_summary_that_would_not_shrink_the_session_is_refused(server, agents_home, make_engine):
    """A handoff summary longer than what it replaces is refused; the session is left as it was."""
    write_config(agents_home, "llm:\n  backend: ollama\nprovider:\n  name: simple\n"
                              "compaction:\n  max_tokens: -1\n  keep_tail: 2\n")
    server.default = scripted(summary_reply=HANDOFF + "\n" + LONG * 20)
    engine = make_engine()
    for turn in range(3):
        engine.run(f"Step {turn}: {LONG}")
    before = engine.conversation.history(100_000)
    with pytest.raises(SummarizerError, match="not smaller"):
        engine.compact()
    assert engine.conversation.handoff() is None
    assert engine.conversation.history(100_000) == before


def test_a_kept_tail_over_the_threshold_warns_once(server, agents_home, make_engine, caplog):
    """When the kept tail alone is over max_tokens there is nothing to compact: one warning, not one a
    turn."""
    write_config(agents_home, "llm:\n  backend: ollama\nprovider:\n  name: simple\n"
                              "compaction:\n  max_tokens: 50\n  keep_tail: 40\n")
    server.default = scripted()
    engine = make_engine()
    caplog.set_level("WARNING", logger="core.engine.session_compaction")
    for turn in range(4):
        assert engine.run(f"Step {turn}: {LONG}").ok
    warnings = [r for r in caplog.records if "automatic session compaction failed" in r.getMessage()]
    assert len(warnings) == 1
    assert engine.paths.log_file.read_text(encoding="utf-8").count("automatic session compaction failed") == 1


@pytest.mark.parametrize("value, expected", [(0, 80_000), (-1, -1), (1234, 1234)])
def test_max_tokens_zero_means_the_default(agents_home, value, expected):
    from core.config import load_config

    write_config(agents_home, f"compaction:\n  max_tokens: {value}\n")
    assert load_config().compaction.max_tokens == expected


def test_max_tokens_below_minus_one_is_a_config_error(agents_home):
    from core.config import load_config
    from core.errors import ConfigError

    write_config(agents_home, "compaction:\n  max_tokens: -5\n")
    with pytest.raises(ConfigError, match="-1 to disable"):
        load_config()
