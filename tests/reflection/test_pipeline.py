"""Reflection end to end against the scripted model: what it learns, from where, and that nothing is lost to a
bad reply (the failure mix of real local models), nothing learned from thin air, supersession by the rules."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import write_home_config
from tests.ollama_server import verbatim
from tests.reflection.conftest import MODEL, reflect_config
from tests.reflection.corpus import conversation
from tests.reflection.model import HARSH, MODES, answer


def say(manager, turns: list[str]) -> list[int]:
    """Log ``turns`` as the user's requests; return their seqs."""
    return [manager.append_log("USER_FEEDBACK", text) for text in turns]


def learned(manager) -> dict[str, dict]:
    """The learned facts by key (with their sources)."""
    return {f["key"]: f for f in manager.list_facts() if f["extracted"] is not None}


def entry_texts(manager) -> dict[str, str]:
    """Every LOG.md entry's text by its recall id."""
    return {f"log:{e['seq']}": e["content"] for e in manager.read_log(10_000)}


def words(text: str) -> set[str]:
    return set(re.findall(r"[^\W_]+", text.lower()))


def test_facts_said_in_passing_are_learned_each_with_the_entries_it_came_from(finn, backend):
    """Every fact the turns state is saved under its slot, with the sources that say it, the model and
    prompt."""
    turns, stated = conversation(30)
    seqs = say(finn, turns)
    report = finn.reflection.run(backend)
    found = learned(finn)
    assert {s.key: s.value for s in stated} == {key: f["value"] for key, f in found.items()}
    texts = entry_texts(finn)
    for statement in stated:
        fact = found[statement.key]
        assert fact["sources"] == [f"log:{seqs[turns.index(statement.text)]}"]
        assert fact["extracted"]["model"] == "qwen2.5" and fact["extracted"]["prompt"] == "reflect v1"
        assert words(fact["value"]) <= words(texts[fact["sources"][0]])
    assert report.entries == 30 and report.failed == 0 and finn.reflection.status()["lag"]["total"] == 0


def test_under_the_failure_mix_of_local_models_no_stated_fact_is_lost(agents_home, server, backend, model):
    """With replies wrapped in prose, fences and <think>, truncated, mistyped, with invented keys, values from
    thin air and timeouts, every stated fact is learned or its entry is visibly quarantined; no learned value
    lacks a source that says it; the quarantined entries are learned once the model answers well."""
    from core.memory_manager import MemoryManager

    write_home_config(agents_home, reflect_config(batch_entries=3))
    model.use(HARSH, seed=15)  # a seed whose replies take every mode, and quarantine an entry
    with MemoryManager("finn") as finn:
        _failure_mix(finn, backend, model)


def _failure_mix(finn, backend, model) -> None:
    turns, stated = conversation(90, seed=11, facts=20)
    seqs = dict(zip(turns, say(finn, turns)))
    report = finn.reflection.run(backend)
    found, texts = learned(finn), entry_texts(finn)
    status = finn.reflection.status()
    quarantined = {q["item"] for q in status["quarantined"]}
    assert set(model.calls) == set(MODES), model.calls
    assert quarantined, "the seed's replies make an entry fail alone"
    for statement in stated:
        source = f"log:{seqs[statement.text]}"
        got = found.get(statement.key, {}).get("value")
        assert got == statement.value or source in quarantined, (statement, got, quarantined)
    for key, fact in found.items():
        assert fact["sources"], key
        assert any(words(fact["value"]) <= words(texts[s]) for s in fact["sources"]), (key, fact)
    assert "Doe not exist" not in json.dumps(finn.list_facts())
    stats = status["models"]["qwen2.5"]
    assert stats["failed"] == report.failed > 0 and stats["rejected"] >= 1 and stats["calls"] == report.calls
    assert status["lag"]["total"] == 0, "quarantined entries are accounted for: the marks moved past them"
    model.use({"valid": 1.0})
    again = finn.reflection.run(backend, retry_all=True)
    assert again.released == len(quarantined)
    assert {s.key: s.value for s in stated} == {k: f["value"] for k, f in learned(finn).items()}
    assert finn.reflection.status()["quarantined"] == []


def test_an_unusable_reply_is_asked_again_with_its_error_shown(finn, backend, server):
    """A truncated reply is asked again once, the error and the start of the bad reply shown to the model."""
    finn.append_log("USER_FEEDBACK", "my editor is Helix")
    prompt_reply = answer("Entries, each with its number\n[1] 2026-11-20 10:00 user: my editor is Helix")
    text = json.dumps(prompt_reply)
    server.enqueue(verbatim(text[:30]), verbatim(text))
    report = finn.reflection.run(backend)
    assert learned(finn)["user.editor"]["value"] == "Helix"
    assert (report.calls, report.failed, report.split, report.quarantined) == (2, 1, 0, 0)
    retry = server.chat_requests[1]["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert retry[1]["content"] == text[:30] and "cannot be used" in retry[2]["content"]
    assert server.chat_requests[0]["format"]["required"] == ["facts", "events", "contradictions"]


def test_a_reply_nested_deeper_than_the_parser_follows_is_asked_again(finn, backend, server):
    """A reply of JSON nested thousands deep is an unusable reply like any other (asked again, the fact
    learned from the second): it ended the pass in a RecursionError."""
    finn.append_log("USER_FEEDBACK", "my editor is Helix")
    good = json.dumps(answer("Entries, each with its number\n[1] 2026-11-20 10:00 user: my editor is Helix"))
    server.enqueue(verbatim('{"facts": ' + "[" * 5000 + "]" * 5000 + "}"), verbatim(good))
    report = finn.reflection.run(backend)
    assert learned(finn)["user.editor"]["value"] == "Helix"
    assert (report.calls, report.failed, report.quarantined) == (2, 1, 0)


def test_a_batch_that_fails_twice_is_split_and_an_entry_that_fails_alone_is_quarantined(finn, backend,
                                                                                        server):
    """Two failed replies split the batch; each half is asked alone; the entry whose replies still fail is set
    aside with the reason and a next try, the other's fact is kept, and the marks move past both."""
    first, second = say(finn, ["my editor is Helix", "my bike is a Brompton"])
    good = json.dumps(answer("Entries, each with its number\n[1] 2026-11-20 10:00 user: my editor is Helix"))
    server.enqueue(verbatim("{"), verbatim("no idea"), verbatim(good), verbatim("{\"facts\": ["),
                   verbatim("{\"facts\": [{\"attr"))
    report = finn.reflection.run(backend)
    assert (report.calls, report.failed, report.split, report.quarantined) == (5, 4, 1, 1)
    assert learned(finn)["user.editor"]["sources"] == [f"log:{first}"]
    status = finn.reflection.status()
    [held] = status["quarantined"]
    assert held["item"] == f"log:{second}" and held["attempts"] == 1 and "ReflectReply" in held["reason"]
    assert held["next_try"] > held["last_failed_at"]
    assert status["lag"]["total"] == 0


def test_a_new_value_supersedes_and_the_old_one_stays_as_history(finn, backend):
    """"I moved to Porto" after "my city is Lisbon": user.city is Porto, Lisbon its earlier value with its own
    sources; the move is an event."""
    lisbon, porto = say(finn, ["my city is Lisbon", "I moved to Porto yesterday"])
    finn.reflection.run(backend)
    history = finn.get_fact("user.city", history=True)
    assert [v["value"] for v in history] == ["Porto", "Lisbon"]
    assert learned(finn)["user.city"]["sources"] == [f"log:{porto}"]
    version = finn.db.conn.execute("SELECT sources FROM fact_versions WHERE key = 'user.city'").fetchone()[0]
    assert json.loads(version)["sources"] == [f"log:{lisbon}"]
    assert finn.reflection.status()["learned"]["events"] == 1


def test_a_contradiction_without_a_new_value_is_kept_beside_the_fact(finn, backend):
    """"I no longer work at Acme" marks user.employer, which stays (no new value was given)."""
    say(finn, ["my employer is Acme"])
    finn.reflection.run(backend)
    quit_seq = say(finn, ["I no longer work at Acme, long story"])[0]
    finn.reflection.run(backend)
    [fact] = [f for f in finn.list_facts() if f["key"] == "user.employer"]
    assert fact["value"] == "Acme"
    [beside] = fact["contradicted_by"]
    assert beside["id"].startswith("contradiction:")
    assert (beside["statement"], beside["sources"]) == ("I no longer work at Acme", [f"log:{quit_seq}"])


def test_an_explicit_fact_wins_and_a_learned_value_that_disagrees_is_kept_beside_it(finn, backend):
    """A fact saved with save_fact is never overwritten by a learned one (also after a rebuild); a disagreeing
    value is kept beside it as a contradiction, an agreeing one changes nothing."""
    finn.save_fact("favourite_colour", "green", "preference")
    finn.save_fact("user.editor", "vim")
    say(finn, ["my favourite colour is teal", "my editor is vim"])
    for run in (finn.reflection.run, finn.reflection.rebuild):
        report = run(backend)
        facts = {f["key"]: f for f in finn.list_facts()}
        assert facts["favourite_colour"]["value"] == "green" and facts["favourite_colour"]["sources"] == []
        assert "user.favourite_colour" not in facts
        assert [c["statement"] for c in facts["favourite_colour"]["contradicted_by"]] == ["teal"]
        assert facts["user.editor"]["extracted"] is None and report.agreed == 1


def test_a_credential_becomes_a_secret_and_is_scrubbed_from_what_held_it(finn, backend):
    """A password said in passing is saved as a secret: never in the FACT entry, and scrubbed from LOG.md."""
    say(finn, ["ok, my password is hunter2-xyz, please keep it"])
    finn.reflection.run(backend)
    assert finn.get_fact("user.password") == "hunter2-xyz"
    assert [f["category"] for f in finn.list_facts() if f["key"] == "user.password"] == ["secret"]
    assert b"hunter2-xyz" not in finn.paths.log_file.read_bytes()


def test_an_event_is_dated_from_the_entry_that_says_it_never_from_the_day_it_was_read(finn, backend, model):
    """"last Tuesday" in a note of Friday 20 November 2026 is 17 November 2026, even when the model answers
    with the day of the extraction (and no "when"); an event whose entry says no time gets the entry's day."""
    model.use({"today": 1.0})
    finn.store_memory("I moved to Porto last Tuesday", {"speaker": "user"},
                      occurred_at="2026-11-20T09:00:00Z")
    finn.store_memory("I moved to Braga", {"speaker": "user"}, occurred_at="2026-10-02T09:00:00Z")
    finn.reflection.run(backend)
    rows = finn.db.conn.execute("SELECT what, occurred_at, basis FROM extracted_events ORDER BY "
                                "what").fetchall()
    assert [tuple(r) for r in rows] == [("moved to Braga", "2026-10-02T00:00:00.000Z", "entry"),
                                       ("moved to Porto", "2026-11-17T00:00:00.000Z", "stated")]
    found = finn.recall_memory(None, kind="event", since="2026-11-17", until="2026-11-17")
    assert [r["content"] for r in found] == ["moved to Porto"]


def test_messages_and_notes_are_read_once_and_a_copy_of_a_log_entry_is_skipped(finn, backend, server):
    """A conversation message and a note are read from the queue; a message with the text of a LOG.md entry is
    skipped as its copy; a second pass reads nothing."""
    from core.plugins.memory import open_provider
    from core.memory.provider import Message, Session

    finn.append_log("USER_FEEDBACK", "my gym is Iron Temple")
    provider = open_provider(None, finn.db)
    session = Session(id="finn:main", agent_id="finn", user_id="local", channel="cli")
    provider.bootstrap(session)
    provider.append(session,
                    [Message("user", "my gym is Iron Temple"), Message("user", "my bank is Nordbank")])
    finn.store_memory("my dentist is Dr Okafor", {"role": "user"})
    report = finn.reflection.run(backend)
    sources = {k: f["sources"][0].split(":")[0] for k, f in learned(finn).items()}
    assert sources == {"user.gym": "log", "user.bank": "msg", "user.dentist": "note"}
    assert report.entries == 3 and len(server.chat_requests) == 1
    assert finn.reflection.run(backend).entries == 0 and len(server.chat_requests) == 1


def test_a_model_that_never_answers_well_is_not_asked_four_times_an_entry(agents_home, server, backend,
                                                                          model):
    """After eight unusable replies in a row the rest is quarantined unread (a broken model would otherwise be
    asked four times an entry); the marks move past it all, and a model that answers well learns it all
    later."""
    from core.memory_manager import MemoryManager
    from core.memory.reflection.extract import FAILURES_IN_A_ROW

    write_home_config(agents_home, reflect_config(batch_entries=4))
    model.use({"truncated": 1.0})
    turns, stated = conversation(24, seed=4, facts=8)
    with MemoryManager("finn") as finn:
        say(finn, turns)
        report = finn.reflection.run(backend)
        status = finn.reflection.status()
        assert report.calls == FAILURES_IN_A_ROW == report.failed
        assert len(status["quarantined"]) == 24 and status["lag"]["total"] == 0
        assert any("unusable replies in a row" in q["reason"] for q in status["quarantined"])
        model.use({"valid": 1.0})
        finn.reflection.run(backend, retry_all=True)
        assert {s.key: s.value for s in stated} == {k: f["value"] for k, f in learned(finn).items()}
        assert finn.reflection.status()["quarantined"] == []


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_a_reply_that_runs_on_is_stopped_at_the_room_the_batch_left_and_the_entry_is_quarantined(finn, server,
                                                                                                 api):
    """A small model looping inside the schema (a list of facts that never closes) is stopped by the server at
    the tokens the batch left for the reply (Ollama's num_predict, the OpenAI API's max_tokens), not at the
    end of the
    window: each reply is that long at most, and the entry is quarantined, not lost."""
    from core.llm.ollama_backend import OllamaBackend
    from core.llm.openai_backend import OpenAIBackend
    from core.memory.reflection.inputs import reply_tokens

    seq = finn.append_log("USER_FEEDBACK", "my editor is Helix")
    item = (
        '{"subject": "user", "attribute": "editor", "value": "Helix", "sources": [1], "credential": false}, '
    )
    runaway = verbatim('{"facts": [' + item * 400)  # about 14,000 tokens, never closed
    server.enqueue(runaway, runaway)
    backend = (OllamaBackend(MODEL, server.host, timeout_s=10.0, num_ctx=4096) if api == "ollama"
               else OpenAIBackend(MODEL, server.host, timeout_s=10.0, num_ctx=4096))
    report = finn.reflection.run(backend)

    bound = reply_tokens(backend.window)
    assert len(server.generated) == report.calls == 2
    assert all(tokens <= bound for tokens in server.generated), (server.generated, bound)
    [held] = finn.reflection.status()["quarantined"]
    assert held["item"] == f"log:{seq}" and "ReflectReply" in held["reason"]
    assert learned(finn) == {}
