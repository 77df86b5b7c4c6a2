"""The offline backend's reader: explicit statements, found by rules, where no model can be asked.

It reads what people state plainly — "remember that my X is Y", "my X is Y", "I moved to Y", "I live in
Y" — and nothing else, so it never invents; everything subtler needs a model. Reflection reports it as
the fallback it is (``offline-rules``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence

from core.memory.reflection.inputs import Item

if TYPE_CHECKING:
    from core.memory.reflection.reply import ReflectReply

MODEL = "offline-rules"

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")
_MY = re.compile(r"\bmy\s+(?P<attribute>[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,5}?)\s+(?:is|are)\s+"
                 r"(?P<value>[^,;]+?)\s*[.!?]*$", re.IGNORECASE)
_PLACE = r"(?P<place>[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,3})"
_MOVED = re.compile(r"\bI(?:'ve|\s+have)?\s+(?:just\s+|recently\s+)?moved\s+to\s+" + _PLACE)
_LIVE = re.compile(r"\bI\s+(?:now\s+)?live\s+in\s+" + _PLACE)
_WHEN = re.compile(r"\b(?:yesterday|today|last night|(?:last|this) (?:week|month|year|weekend|monday|tuesday|"
                   r"wednesday|thursday|friday|saturday|sunday)|\w+ (?:days?|weeks?|months?|years?) ago)\b",
                   re.IGNORECASE)


class RuleReader:
    """Reads explicit statements with rules (see the module docstring)."""

    model = MODEL
    fallback = True

    def read(self, items: Sequence[Item]) -> ReflectReply:
        """The facts and events ``items`` state plainly (numbered from 1, as a model is shown them)."""
        # pydantic's models: imported by the pass that needs them, not by every process that opens the memory
        from core.memory.reflection.reply import ContradictionItem, EventItem, FactItem, ReflectReply

        facts: list[FactItem] = []
        events: list[EventItem] = []
        for number, item in enumerate(items, 1):
            if item.speaker not in ("user", "note"):
                continue  # what the assistant or a tool said about the user is not the user's statement
            for sentence in _SENTENCE.split(item.text):
                sentence = sentence.strip()
                when = _WHEN.search(sentence)
                clean = _WHEN.sub("", sentence).strip()
                if match := _MOVED.search(clean):
                    place = match["place"].rstrip(".")
                    facts.append(FactItem(subject="user", attribute="city", value=place, sources=[number]))
                    events.append(EventItem(what=f"moved to {place}", when=when.group(0) if when else "",
                                            sources=[number]))
                elif match := _LIVE.search(clean):
                    facts.append(FactItem(subject="user", attribute="city", value=match["place"].rstrip("."),
                                          sources=[number]))
                elif (match := _MY.search(clean)) and match["value"].strip():
                    facts.append(FactItem(subject="user", attribute=match["attribute"],
                                          value=match["value"].strip(),
                                          sources=[number]))
        return ReflectReply(facts=facts, events=events, contradictions=list[ContradictionItem]())
