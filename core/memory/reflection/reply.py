"""The shape of a reflection reply: facts, events and contradictions, each citing the entries that say it.

The JSON schema (:data:`SCHEMA`) goes to the backend as the reply's shape (Ollama's ``format``, an
OpenAI-compatible server's ``response_format``), so a constrained model answers exactly that. Reading
is lenient only where that is safe: a number given as text (``"3"``, ``"#3"``), a value given as a
number, a yes/no given as text, an unknown extra key, a list left out when another is there. A reply
without any of the three lists is no answer (a model that wrapped prose in ``{"response": ...}``).
"""

from __future__ import annotations

import re
from typing import Any

import pydantic
from pydantic import AliasChoices, ConfigDict, Field

_NUMBER = re.compile(r"\d+")
_TRUE = {"true", "yes", "y", "1"}
LISTS = ("facts", "events", "contradictions")


def _sources(value: Any) -> Any:
    """Entry numbers as a list of ints: ``3``, ``"3"``, ``"#3, #4"``, ``["3"]`` all read."""
    if value is None:
        return []
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, list):
        numbers: list[Any] = []
        for item in value:
            if isinstance(item, str):
                numbers += [int(n) for n in _NUMBER.findall(item)]
            else:
                numbers.append(item)
        return numbers
    return value


def _text(value: Any) -> Any:
    """A scalar as text (a model writes 42 for "42"); anything else is left for validation to refuse."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return value


class _Item(pydantic.BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    sources: list[int] = Field(default_factory=list, description="Numbers of the entries that say it.")

    @pydantic.field_validator("sources", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> Any:
        return _sources(value)


class FactItem(_Item):
    """One fact: a slot (subject, attribute) with its value."""

    subject: str = Field("user", description='Who or what it is about: "user" for the person you talk to.')
    attribute: str = Field(validation_alias=AliasChoices("attribute", "key", "property", "slot"),
                           description='What about them, e.g. "deploy target", "city", "dog\'s name".')
    value: str = Field(description="The value, in the entry's own words.")
    credential: bool = Field(False, description="True for a password, API key, token or PIN the user gave.")

    @pydantic.field_validator("subject", "attribute", "value", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        return _text(value)

    @pydantic.field_validator("credential", mode="before")
    @classmethod
    def _yes(cls, value: Any) -> Any:
        return value.strip().lower() in _TRUE if isinstance(value, str) else value


class EventItem(_Item):
    """Something that happened."""

    what: str = Field(validation_alias=AliasChoices("what", "event", "description"),
                      description="What happened, in the entry's own words.")
    when: str = Field("",
                      description='When, copied from the entry ("yesterday", "last Tuesday", "on 3 May"); '
                                  'empty if it does not say.')
    date: str = Field("", description="The date as YYYY-MM-DD, if the entry gives one.")

    @pydantic.field_validator("what", "when", "date", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        return "" if value is None else _text(value)


class ContradictionItem(_Item):
    """A statement that a known fact is wrong or no longer true, without a new value."""

    subject: str = Field("user", description="Who or what the fact is about.")
    attribute: str = Field(validation_alias=AliasChoices("attribute", "key", "property", "slot"),
                           description="The attribute of the known fact.")
    statement: str = Field(description="What the entry says, in its own words.")

    @pydantic.field_validator("subject", "attribute", "statement", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        return _text(value)


class ReflectReply(pydantic.BaseModel):
    """What a model found worth keeping in a batch of entries."""

    model_config = ConfigDict(extra="ignore")

    facts: list[FactItem]
    events: list[EventItem]
    contradictions: list[ContradictionItem]

    @pydantic.model_validator(mode="before")
    @classmethod
    def _lists(cls, data: Any) -> Any:
        """A list left out when another is there is empty; a lone item instead of a list is a list of one."""
        if not isinstance(data, dict) or not any(name in data for name in LISTS):
            return data
        data = dict(data)
        for name in LISTS:
            value = data.get(name)
            data[name] = [] if value is None else [value] if isinstance(value, dict) else value
        return data


def schema() -> dict[str, Any]:
    """The JSON schema a constrained model answers in: every list and every item field required."""
    return {
        "type": "object",
        "properties": {
            "facts": {"type": "array", "items": {
                "type": "object",
                "properties": {"subject": {"type": "string"}, "attribute": {"type": "string"},
                               "value": {"type": "string"},
                               "sources": {"type": "array", "items": {"type": "integer"}},
                               "credential": {"type": "boolean"}},
                "required": ["subject", "attribute", "value", "sources", "credential"]}},
            "events": {"type": "array", "items": {
                "type": "object",
                "properties": {"what": {"type": "string"}, "when": {"type": "string"},
                               "date": {"type": "string"},
                               "sources": {"type": "array", "items": {"type": "integer"}}},
                "required": ["what", "when", "date", "sources"]}},
            "contradictions": {"type": "array", "items": {
                "type": "object",
                "properties": {"subject": {"type": "string"}, "attribute": {"type": "string"},
                               "statement": {"type": "string"},
                               "sources": {"type": "array", "items": {"type": "integer"}}},
                "required": ["subject", "attribute", "statement", "sources"]}},
        },
        "required": list(LISTS),
    }
