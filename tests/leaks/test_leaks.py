"""Every way a secret was seen to leak, one test each: the value ends up nowhere but in get_fact's reply.

Where a test saves the secret "unscrubbed" (straight into memory.db, its scrub dropped), it checks a
boundary on its own: redaction where text leaves for a derived artifact, without the scrub's help.
"""

from __future__ import annotations

import json

from core.memory.secrets.redaction import REDACTED
from core.memory.provider import Message, Session, ToolCall
from core.memory.provider.types import CompactionMode
from core.plugins.memory.lcm import LCMProvider, LLMSummarizer
from core.plugins.memory.simple import SimpleProvider
from tests.engine.conftest import run_cli
from tests.leaks.conftest import database_of, save_unscrubbed
from tests.leaks.leak_check import holds, leaks

VALUE = "cred-5566-7788"
SESSION = Session("finn:main", agent_id="finn", user_id="local", channel="cli")


def _log_text(manager) -> str:
    return manager.paths.log_file.read_text(encoding="utf-8")


def test_the_engines_own_logging_and_compaction_keep_a_told_secret_out(home):
    """`remember that my bank credential is cred-…` through the offline engine, then LOG.md compaction:
    no RUN_START, USER_FEEDBACK, NOW_UPDATE, SUMMARY, archive, NOW.md or LanceDB row holds the value."""
    result = run_cli("--agent", "finn", "--offline", f"remember that my bank credential is {VALUE}")
    assert result.returncode == 0, result.stderr
    # A phrasing the keyword masking cannot know: the scrub at save time takes the value out.
    other = "vt-9911-2233"
    result = run_cli("--agent", "finn", "--offline", f"remember that my vault_token_id is {other}")
    assert result.returncode == 0, result.stderr
    from core.memory_manager import MemoryManager

    with MemoryManager("finn") as manager:
        assert manager.get_fact("bank_credential") == VALUE and manager.get_fact("vault_token_id") == other
        report = manager.compact_log()
        assert report.done and report.docs_indexed
        assert "[REDACTED]" in manager.paths.archive_dir.joinpath(f"{report.archive_id}.md").read_text()
    root = home / "finn"
    assert leaks(root, VALUE) == [] and leaks(root, other) == []


def test_text_logged_before_its_secret_is_saved_is_neither_summarised_nor_indexed(finn):
    """Entries that held a value before it became a secret reach no summary, summarizer prompt, archive or
    LanceDB row: after a compaction that came first, and in one that comes after."""
    finn.append_log("USER_FEEDBACK", f"my bank login is {VALUE}")
    finn.update_now("Logging in", [f"type {VALUE} at the prompt"])
    first = finn.compact_log()  # the value is archived and indexed (its entries and the summary)
    assert first.docs_indexed >= 2
    finn.append_log("THOUGHT", f"the login {VALUE} worked")
    prompts: list[str] = []
    finn.compaction.summary_llm = lambda prompt: prompts.append(prompt) or "The user logged in to the bank."

    finn.save_fact("bank_login", VALUE, "secret")
    second = finn.compact_log()

    assert second.done and second.summary_method == "llm" and prompts
    assert not any(holds(p.encode(), VALUE) for p in prompts)
    assert finn.cold.background.wait_idle(60)  # the archive's vectors are written too
    assert leaks(finn.paths.root, VALUE) == []
    hits = finn.recall_memory("bank login worked", n_results=10)
    assert hits and not holds(json.dumps(hits).encode(), VALUE)


def test_summaries_prompts_and_the_cold_store_redact_on_their_own(finn):
    """Without any scrub, the deterministic summary, the LLM summarizer's prompt and the LanceDB rows of a
    compaction hide a secret the entries hold."""
    finn.append_log("USER_FEEDBACK", f"my bank login is {VALUE}")
    finn.append_log("THOUGHT", f"will use {VALUE} again", {"note": f"login {VALUE}"})
    save_unscrubbed(finn, "bank_login", VALUE)
    prompts: list[str] = []
    finn.compaction.summary_llm = lambda prompt: prompts.append(prompt) or "The user gave a bank login."
    report = finn.compact_log()
    assert report.summary_method == "llm" and prompts and not any(holds(p.encode(), VALUE) for p in prompts)

    finn.append_log("THOUGHT", f"and once more {VALUE}")
    finn.compaction.summary_llm = None  # deterministic
    report = finn.compact_log()
    assert report.summary_method == "deterministic"
    summaries = [row[0] for row in finn.db.conn.execute("SELECT summary FROM compaction_history")]
    assert len(summaries) == 2 and not any(holds(s.encode(), VALUE) for s in summaries)
    assert not holds(finn.paths.log_file.read_bytes(), VALUE)
    lance = [p for p in leaks(finn.paths.root, VALUE) if "lancedb" in p]
    assert lance == [], "the cold store indexed the archive's text as it was"


def test_a_secret_used_as_a_metadata_key_is_redacted(finn):
    """A secret's value as a key of LOG entry or note metadata, at any depth, is hidden."""
    finn.save_fact("token", VALUE, "secret")
    finn.append_log("THOUGHT", "keys", {VALUE: "a", "nested": [{VALUE: {"deeper": VALUE}}]})
    finn.store_memory("a note with tricky metadata", {VALUE: 1})
    entry = finn.read_log(1)[0]
    assert entry["metadata"] == {REDACTED: "a", "nested": [{REDACTED: {"deeper": REDACTED}}]}
    assert leaks(finn.paths.root, VALUE) == []


def test_a_secret_saved_with_a_trailing_newline_still_matches(finn):
    """A value saved as "cred…\\n" is hidden where it appears without the newline; get_fact returns it as
    saved."""
    finn.save_fact("bank_credential", VALUE + "\n", "secret")
    finn.append_log("USER_FEEDBACK", f"my credential is {VALUE}.")
    finn.update_now("Checking", objective=f"verify {VALUE}")
    assert finn.get_fact("bank_credential") == VALUE + "\n"
    assert leaks(finn.paths.root, VALUE) == []


def test_a_secret_inside_a_non_secret_fact_is_hidden(finn):
    """A non-secret fact that contains a secret's value, saved after it or before it, shows it nowhere:
    not in list_facts, the prompt context, recall or the cold store."""
    finn.save_fact("bank_pin", VALUE, "secret")
    finn.save_fact("login_hint", f"the bank wants {VALUE} then the code")
    finn.save_fact("early_note", f"remember {VALUE.upper()} for the bank")  # saved before the second secret
    finn.save_fact("other_pin", "pin-0042", "secret")
    finn.save_fact("late_note", "the pin-0042 opens the door")

    shown = json.dumps([finn.list_facts(), finn.format_context_for_prompt(),
                        finn.recall_memory("bank code", 10)])
    assert not holds(shown.encode(), VALUE) and not holds(shown.encode(), "pin-0042")
    assert finn.get_fact("login_hint") == f"the bank wants {REDACTED} then the code"
    assert finn.get_fact("bank_pin") == VALUE
    assert leaks(finn.paths.root, VALUE) == [] and leaks(finn.paths.root, "pin-0042") == []


def test_now_fields_whose_whitespace_is_collapsed_stay_redacted(finn):
    """A secret with spaces, written into NOW.md with other whitespace (which NOW flattens), is hidden."""
    phrase = "correct horse battery staple"
    finn.save_fact("passphrase", phrase, "secret")
    finn.update_now("Typing  correct\nhorse   battery\tstaple", ["enter correct  horse battery\n staple"],
                    objective="unlock with correct\u00a0horse battery  staple",
                    blockers=["correct horse\nbattery staple?"])
    assert leaks(finn.paths.root, phrase) == []
    assert finn.read_now()["objective"] == f"unlock with {REDACTED}"


def test_a_now_plan_written_before_its_secret_is_not_carried_on(finn):
    """A plan step holding a value written before it became a secret is redacted at the next NOW.md write,
    even without the scrub; with it, at once."""
    finn.update_now("Planning", [f"log in with {VALUE}", "check the balance"], objective="pay the bill")
    save_unscrubbed(finn, "bank_credential", VALUE)
    finn.update_now(current_step="Next step")  # the plan is carried over from the earlier version
    assert not holds(finn.paths.now_file.read_bytes(), VALUE)
    assert finn.read_now()["next_steps"] == [f"log in with {REDACTED}", "check the balance"]

    finn.update_now("Planning again", [f"use {VALUE.upper()} once more"])
    finn.save_fact("bank_credential", VALUE + " ", "secret")  # a changed value: scrubbed at once
    assert not holds(finn.paths.now_file.read_bytes(), VALUE)


def _turn_with(value: str) -> list[Message]:
    return [Message("user", f"my card number is {value}, keep it safe"),
            Message("assistant", "", tool_calls=(ToolCall("save_fact", {"key": "card", "value": value}),)),
            Message("tool", json.dumps({"saved": "card", "echo": value}), tool_name="save_fact"),
            Message("assistant", f"Saved {value}.")]


def _filler(n: int) -> list[Message]:
    return [Message("user", f"Question {n}: how do tomatoes grow in a small garden bed?"),
            Message("assistant", f"Answer {n}: they want sun, deep watering and stakes as they grow.")]


def test_the_lcm_provider_keeps_secrets_out_of_its_storage_prompts_and_context(finn):
    """LCM: messages stored after a secret is saved are stored redacted; older ones are scrubbed at the
    save; and on their own, its summarizer's prompt, its summaries and ``assemble`` hide the value."""
    prompts: list[str] = []
    summarizer = LLMSummarizer(lambda prompt: prompts.append(prompt) or "The user shared a card number.")
    lcm = LCMProvider(database_of(finn), summarizer=summarizer)
    try:
        lcm.append(SESSION, _turn_with(VALUE))
        save_unscrubbed(finn, "card", VALUE)
        for n in range(6):
            lcm.append(SESSION, _filler(n))
        assembled = lcm.assemble(SESSION, 100_000, 2)
        assert assembled and not holds(json.dumps([m.text() for m in assembled]).encode(), VALUE)
        result = lcm.compact(SESSION, CompactionMode.FULL, fresh_tail=2)
        assert result.leaf_summaries_created and prompts
        assert not any(holds(p.encode(), VALUE) for p in prompts)
        stored = [r[0] for r in finn.db.conn.execute("SELECT content FROM ctx_summaries")]
        assert stored and not any(holds(s.encode(), VALUE) for s in stored)

        lcm.append(SESSION, _turn_with(VALUE))  # after the save: stored redacted
        newest = finn.db.conn.execute("SELECT content, tool_calls FROM ctx_messages ORDER BY id DESC LIMIT "
                                      "3").fetchall()
        assert not any(holds(json.dumps(tuple(r)).encode(), VALUE) for r in newest)

        finn.save_fact("card", VALUE, "secret")  # a real save: the scrub takes the first turn's copy out too
        finn.scrub_secrets()
        assert leaks(finn.paths.root, VALUE) == []
        assert lcm.search(SESSION, _query(VALUE)) == []
    finally:
        lcm.close()


def _query(text: str):
    from core.memory.provider.types import SearchQuery

    return SearchQuery(text=text.split("-")[0])  # a word of the value: the full-text index knows none of it


def test_the_simple_provider_keeps_secrets_out_of_its_storage_and_context(finn):
    """Simple: stored messages and the window it assembles hide a secret, saved before or after them."""
    simple = SimpleProvider(database_of(finn))
    try:
        simple.append(SESSION, _turn_with(VALUE))
        save_unscrubbed(finn, "card", VALUE)
        shown = simple.assemble(SESSION, 100_000, 10) + simple.load_history(SESSION.id)
        assert not holds(json.dumps([m.text() for m in shown]).encode(), VALUE)
        simple.append(SESSION, _turn_with(VALUE))
        finn.scrub_secrets()
        assert leaks(finn.paths.root, VALUE) == []
    finally:
        simple.close()
