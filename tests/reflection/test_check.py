"""The checks every reply goes through, whatever model wrote it: nothing from thin air, citations that hold
the value, keys that name a slot, credentials as secrets, dates from the entry; and the reply's lenient
reading."""

from __future__ import annotations

from datetime import date

import pytest

from core.llm.structured import StructuredReplyError, parse_reply
from core.memory.reflection.check import check, slot_key
from core.memory.reflection.inputs import Item
from core.memory.reflection.reply import ReflectReply

FRIDAY = "2026-11-20T10:00:00.000Z"
ITEMS = [Item("log:12", FRIDAY, "user", "I moved to Porto last Tuesday, and our deploy target is fly.io"),
         Item("msg:40", FRIDAY, "user", "the weather is grey"),
         Item("note:ab", "2026-10-02T09:00:00.000Z", "user",
              "my password is hunter2-xyz and I adopted a cat")]


def reply(**lists) -> ReflectReply:
    return ReflectReply.model_validate({"facts": [], "events": [], "contradictions": [], **lists})


def fact(attribute, value, sources, subject="user", credential=False) -> dict:
    return {"subject": subject, "attribute": attribute, "value": value, "sources": sources,
            "credential": credential}


def test_a_value_not_in_its_entries_is_rejected_and_one_cited_wrongly_is_repaired():
    """A made-up value is rejected with the words missing; a value cited from the wrong entry is traced to the
    one that says it; an entry cited that holds none of its words is dropped from its sources."""
    checked = check(reply(facts=[fact("name", "Doe not exist", [1]), fact("city", "Porto", [2]),
                                 fact("deploy target", "fly.io", [1, 2])]), ITEMS)
    assert [(f.key, f.value, f.sources) for f in checked.facts] == [
        ("user.city", "Porto", ("log:12",)), ("user.deploy_target", "fly.io", ("log:12",))]
    assert checked.rejected == ["fact 'user.name' = 'Doe not exist': doe, exist not in the entries it cites "
                                "(1)"]
    assert checked.repaired == 1


def test_keys_name_slots_and_a_credential_is_a_secret():
    """The user's slots are user.<attribute> (possessives and a repeated subject dropped), others
    subject.attribute; a credential, or a key naming one, is a secret; a redaction mark is no value."""
    assert [slot_key(*pair) for pair in (("I", "Deploy Target"), ("user", "user's city"),
                                         ("my sister", "city"),
                                         ("user", "dog's name"), ("", "?"))] == [
        "user.deploy_target", "user.city", "my_sister.city", "user.dog_name", ""]
    masked = Item("log:13", FRIDAY, "user", "my API key is [REDACTED]")  # as the engine logs a request
    checked = check(reply(facts=[fact("password", "hunter2-xyz", [3]),
                                 fact("pet", "a cat", [3], credential=True),
                                 fact("api key", "[REDACTED]", [4])]), [*ITEMS, masked])
    assert [(f.key, f.category) for f in checked.facts] == [("user.password", "secret"),
                                                            ("user.pet", "secret")]
    assert checked.rejected == ["fact user.api_key: '[REDACTED]' is not a value to keep"]


def test_an_event_is_dated_from_its_entry():
    """'last Tuesday' said on Friday 20 November 2026 is the 17th; the extraction's own day given by the model
    for an older entry is refused; a date after its entry is refused; nothing said: the entry's day."""
    events = [{"what": "moved to Porto", "when": "last Tuesday", "date": "", "sources": [1]},
              {"what": "moved to Porto", "when": "", "date": "2026-11-29", "sources": [1]},
              {"what": "adopted a cat", "when": "", "date": "2026-12-01", "sources": [3]},
              {"what": "adopted a cat", "when": "", "date": "2026-09-30", "sources": [3]}]
    checked = check(reply(events=events), ITEMS, today=date(2026, 11, 29))
    assert [(e.occurred_at[:10], e.basis) for e in checked.events] == [
        ("2026-11-17", "stated"), ("2026-11-17", "stated"), ("2026-10-02", "entry"), ("2026-09-30", "model")]


@pytest.mark.parametrize(
    "text",
    [
        '{"facts": [], "events": [], "contradictions": []}',
        'Sure!\n```json\n{"facts": [{"key": "city", "value": "Porto", "sources": "#1", '
        '"credential": "no"}]}\n```',
        '<think>hmm</think>{"facts": {"attribute": "city", "value": 42, "sources": [1]}, "notes": "x"}',
    ],
)
def test_harmless_slips_are_read(text):
    """Prose, a fence, <think>, a missing list, a lone item, "#1" for 1, "no" for false, 42 for "42", extra
    keys."""
    parsed = parse_reply(text, ReflectReply)
    assert all(f.sources == [1] and f.credential is False for f in parsed.facts)


@pytest.mark.parametrize("text",
                         ['{"response": "I found a city"}', '{"facts": [{"attribute": "city"', "no idea"])
def test_what_is_not_an_answer_is_refused(text):
    """A reply without any list (prose a server wrapped), a cut-off object or prose alone is no answer."""
    with pytest.raises(StructuredReplyError):
        parse_reply(text, ReflectReply)
