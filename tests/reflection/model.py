"""A scripted model that reflects like a small local one: it reads the entries of the prompt it is sent and
answers what they say, in the ways real local models get it wrong, at rates a test chooses.

It reads statements by rules of its own (not the product's): "my X is Y" (a credential when X names one),
"I moved to Y <when>" (a fact and an event), "I no longer work at Z" (a contradiction of ``user.employer``).
Then each reply takes one of :data:`MODES`, drawn with a seeded RNG (the same test, the same replies):

- ``valid``: the JSON object alone;          - ``prose``: the object between sentences;
- ``fence``: in a Markdown fence;            - ``think``: after a ``<think>`` block;
- ``truncated``: cut off at 60%;             - ``wrong_types``: ``"#3"`` for 3, ``"no"`` for false, 42 for
"42";
- ``invented_keys``: extra keys, ``key`` for ``attribute``;
- ``today``: an event dated the day of the extraction, its ``when`` left out;
- ``thin_air``: one value replaced by one the entries never say (as SmolLM2 answered: "Doe not exist");
- ``timeout``: no answer at all (the request is held until :meth:`ReflectingModel.release`).

Every reply is sent verbatim (a model that ignores ``format``), so the product's reading is what is tested.
:attr:`ReflectingModel.stated` is the ground truth of a corpus: every fact the entries state.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tests.ollama_server import Block, Verbatim

MODES = ("valid", "prose", "fence", "think", "truncated", "wrong_types", "invented_keys", "today", "thin_air",
         "timeout")
REALISTIC = {"valid": 0.45, "prose": 0.1, "fence": 0.08, "think": 0.07, "truncated": 0.07,
             "wrong_types": 0.07,
             "invented_keys": 0.06, "today": 0.04, "thin_air": 0.04, "timeout": 0.02}
"""A mix like the one issue trackers of local-model users describe: most replies usable, one in five wrapped,
one in four unusable as sent."""
HARSH = {"valid": 0.2, "prose": 0.08, "fence": 0.05, "think": 0.05, "truncated": 0.18, "wrong_types": 0.06,
         "invented_keys": 0.05, "today": 0.05, "thin_air": 0.2, "timeout": 0.08}
"""A model that fails one reply in two: batches are split and entries quarantined."""

HOLD_S = 60.0
"""The longest a ``timeout`` reply holds its request (the test's end releases it sooner)."""
_ENTRY = re.compile(r"^\[(\d+)\] (\d{4}-\d\d-\d\d) \d\d:\d\d ([^:]+): (.*)$")
_MY = re.compile(r"\bmy ([a-z][a-z' ]{0,40}?) is ([^.,;!?]+(?:\.[a-z]{2,4})?)", re.IGNORECASE)
_MOVED = re.compile(r"\bI moved to ([A-Z][a-z]+)(?: (last \w+|yesterday|\w+ days ago))?")
_QUIT = re.compile(r"\bI (?:no longer work at|quit my job at) ([A-Z]\w+)")
_SECRETS = ("password", "pin", "token", "api key")


@dataclass
class ReflectingModel:
    """The model (a ScriptedOllama reply callable: ``ScriptedOllama(default=model)``)."""

    mix: dict[str, float] = field(default_factory=lambda: {"valid": 1.0})
    seed: int = 7
    calls: list[str] = field(default_factory=list)
    """The mode of each reply, in order."""
    blocks: list[Block] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def __call__(self, body: dict[str, Any]) -> Any:
        messages = body.get("messages") or []
        prompt = next((m["content"] for m in messages if m.get("role") == "user"), "")
        if "Entries, each with its number" not in prompt:
            return "I only reflect."
        mode = self.rng.choices(list(self.mix), weights=list(self.mix.values()))[0]
        self.calls.append(mode)
        reply = answer(prompt)
        if mode == "timeout":  # the server's thread waits here, as a model that never answers
            block = Block()
            self.blocks.append(block)
            block.entered.set()
            block.gate.wait(HOLD_S)
            return Verbatim(json.dumps(reply))
        return Verbatim(corrupt(reply, mode, self.rng))

    def use(self, mix: dict[str, float], seed: int | None = None) -> None:
        """Reply with ``mix`` from now on (``seed``: a new RNG seeded with it)."""
        self.mix = mix
        if seed is not None:
            self.rng = random.Random(seed)

    def release(self) -> None:
        """Let every held request answer (at the end of a test)."""
        for block in self.blocks:
            block.release()


def entries(prompt: str) -> list[tuple[int, str, str, str]]:
    """``(number, day, speaker, text)`` of each entry in a reflection prompt."""
    found = []
    for line in prompt.splitlines():
        match = _ENTRY.match(line)
        if match:
            found.append((int(match[1]), match[2], match[3], match[4]))
    return found


def answer(prompt: str) -> dict[str, Any]:
    """The right reply to a reflection prompt, as a good model would give it."""
    facts, events, contradictions = [], [], []
    for number, _day, speaker, text in entries(prompt):
        if speaker != "user":
            continue
        for attribute, value in _MY.findall(text):
            attribute = attribute.strip()
            facts.append({"subject": "user", "attribute": attribute, "value": value.strip(),
                          "sources": [number],
                          "credential": attribute.lower() in _SECRETS})
        for place, when in _MOVED.findall(text):
            facts.append({"subject": "user", "attribute": "city", "value": place, "sources": [number],
                          "credential": False})
            events.append({"what": f"moved to {place}", "when": when, "date": "", "sources": [number]})
        for employer in _QUIT.findall(text):
            statement = re.search(r"I (?:no longer work at|quit my job at) \w+", text)[0]
            contradictions.append({"subject": "user", "attribute": "employer", "statement": statement,
                                   "sources": [number]})
    return {"facts": facts, "events": events, "contradictions": contradictions}


def corrupt(reply: dict[str, Any], mode: str, rng: random.Random) -> str:
    """``reply`` as a model in ``mode`` writes it."""
    text = json.dumps(reply)
    if mode == "prose":
        return f"Sure! Here is what I found in the entries:\n{text}\nLet me know if you need anything else."
    if mode == "fence":
        return f"```json\n{json.dumps(reply, indent=2)}\n```"
    if mode == "think":
        return f"<think>The user said a few things. Let me list them.</think>\n{text}"
    if mode == "truncated":
        return text[: max(1, int(len(text) * 0.6))]
    if mode == "wrong_types":
        for item in reply["facts"] + reply["events"] + reply["contradictions"]:
            item["sources"] = ", ".join(f"#{n}" for n in item["sources"])
        for fact in reply["facts"]:
            fact["credential"] = "yes" if fact["credential"] else "no"
            if fact["value"].isdigit():
                fact["value"] = int(fact["value"])
        return json.dumps(reply)
    if mode == "invented_keys":
        for fact in reply["facts"]:
            fact["key"] = fact.pop("attribute")
            fact["confidence"] = round(rng.random(), 2)
        return json.dumps({**reply, "notes": "none"})
    if mode == "today":
        today = datetime.now(timezone.utc).date().isoformat()
        for event in reply["events"]:
            event["when"], event["date"] = "", today
        return json.dumps(reply)
    if mode == "thin_air" and reply["facts"]:
        rng.choice(reply["facts"])["value"] = "Doe not exist"
        return json.dumps(reply)
    return text
