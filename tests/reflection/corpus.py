"""Conversations with facts said in passing, and what they state: the ground truth of the reflection tests and
of ``scripts/bench_reflect.py``."""

from __future__ import annotations

import random
from dataclasses import dataclass

FACTS = [
    ("favourite colour", "teal"), ("dog's name", "Biscuit"), ("deploy target", "fly.io"), ("editor", "Helix"),
    ("sister's name", "Ana"), ("employer", "Acme"), ("project codename", "Bluebird"), ("bike", "a Brompton"),
    ("dentist", "Dr Okafor"), ("gym", "Iron Temple"), ("favourite band", "Khruangbin"),
    ("laptop", "a ThinkPad X1"),
    ("daughter's school", "Riverside Primary"), ("cat's name", "Miso"), ("coffee order", "a flat white"),
    ("landlord", "Mr Petrov"), ("bank", "Nordbank"), ("allergy", "peanuts"), ("home router", "a Fritzbox"),
    ("book club day", "Thursday"),
]
"""Slots the user states, each as ``my <attribute> is <value>``."""
CHATTER = [
    "can you check whether the build passed", "thanks, that helps", "what's on my calendar today",
    "please summarise the last meeting", "ok, let's continue with the report",
    "how long will the upload take",
    "never mind, I found it", "draft a reply to the email from the landlord about the heating",
    "remind me what we decided about the logo", "the tests are green now",
]
OPENERS = ["By the way, ", "Oh, and ", "", "For the record, ", "Also, "]


@dataclass(frozen=True)
class Statement:
    """One fact a conversation states: the key reflection saves it under, the value, the text that says it."""

    key: str
    value: str
    text: str


def key_of(attribute: str) -> str:
    """The key reflection saves ``my <attribute> is ...`` under."""
    import re

    return "user." + "_".join(re.findall(r"[^\W_]+", re.sub(r"'s\b", "", attribute.lower())))


def conversation(size: int, seed: int = 3, facts: int | None = None) -> tuple[list[str], list[Statement]]:
    """``size`` user turns, ``facts`` of them (default a third) stating one fact each in passing, the rest
    chatter; and the statements."""
    rng = random.Random(seed)
    count = min(len(FACTS), size // 3 if facts is None else facts)
    chosen = rng.sample(FACTS, count)
    slots = sorted(rng.sample(range(size), count))
    turns, stated = [], []
    for n in range(size):
        if slots and n == slots[0]:
            slots.pop(0)
            attribute, value = chosen.pop()
            text = f"{rng.choice(OPENERS)}my {attribute} is {value}. {rng.choice(CHATTER).capitalize()}?"
            stated.append(Statement(key_of(attribute), value, text))
            turns.append(text)
        else:
            turns.append(rng.choice(CHATTER).capitalize() + ".")
    return turns, stated
