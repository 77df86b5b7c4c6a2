"""Fixtures of the window tests: an Ollama-like server with a given window, engines on it, a summarising model,
and the long conversation of ~1,200-character notes that several tests hold on it."""

from __future__ import annotations

import random
import re

import pytest

from tests.engine.conftest import write_config  # noqa: F401 - shared by the tests of this folder
from tests.ollama_server import ScriptedOllama

_SECTION = re.compile(r"^## (Messages|Summaries)\s*$", re.MULTILINE)
_END = re.compile(r"^## (Summary|Merged summary)\s*$", re.MULTILINE)
_SENTENCE = re.compile(r"^.*?[.!?](?=\s|$)")
_STAMP = re.compile(r"^\[[^\]]*\]\s*")
_TARGET = re.compile(r"about\s+(\d+)\s+tokens")
_DIGIT = re.compile(r"\d")
_CHATTER = {"noted.", "ok.", "thanks.", "saved."}

TURNS = 42
FACT = "My locker code is 4417 and the locker is in hall B."
WORDS = ("harbour", "lantern", "orchard", "gravel", "copper", "meadow", "ribbon", "thistle", "canvas", "pepper",
         "saddle", "marble", "willow", "garnet", "timber", "beacon", "cobalt", "juniper", "parcel", "quarry")


def note(turn: int, rng: random.Random) -> str:
    """A note of about 1,200 characters: a first sentence that names it, then filler prose."""
    text = f"Note {turn} is about the {rng.choice(WORDS)} project."
    while len(text) < 1200:
        text += " " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."
    return text


def summarising_model(prompt: str) -> str:
    """What a small model answers to a summary prompt, following its instructions: the first sentence of
    each block it was shown, chatter and repetition dropped, sentences with facts (numbers) first, within
    the "about N tokens" asked for, in their original order.

    It reads only what the server kept of the prompt, so a cut prompt gives a summary of the kept part.
    """
    starts = list(_SECTION.finditer(prompt))
    body = prompt[starts[-1].end():] if starts else prompt
    end = _END.search(body)
    body = body[: end.start()] if end else body
    target = _TARGET.search(prompt)
    budget = int(target.group(1)) * 4 if target else 2000
    sentences: list[str] = []
    for line in body.splitlines():
        line = _STAMP.sub("", line.strip().lstrip("- ").strip())
        match = _SENTENCE.match(line)
        sentence = (match.group(0) if match else line)[:160]
        if sentence and sentence not in sentences and sentence.lower() not in _CHATTER:
            sentences.append(sentence)
    ranked = sorted(range(len(sentences)), key=lambda i: (not _DIGIT.search(sentences[i]), i))
    chosen, used = set(), 0
    for i in ranked:
        if used + len(sentences[i]) + 3 > budget and chosen:
            break
        chosen.add(i)
        used += len(sentences[i]) + 3
    return "\n".join(f"- {sentences[i]}" for i in sorted(chosen)) or "- (nothing to summarise)"


@pytest.fixture
def make_server(monkeypatch: pytest.MonkeyPatch):
    """Start ``ScriptedOllama(**kwargs)``; ``OLLAMA_HOST`` points at the last one started."""
    started = []

    def make(**kwargs) -> ScriptedOllama:
        server = ScriptedOllama(**kwargs).start()
        started.append(server)
        monkeypatch.setenv("OLLAMA_HOST", server.host)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def make_engine():
    """Open engines for agent finn on the Ollama backend; closed after the test."""
    from core.engine import Engine

    opened = []

    def make(**kwargs):
        engine = Engine("finn", **kwargs)
        opened.append(engine)
        return engine

    yield make
    for engine in opened:
        engine.close()
        engine.manager.close()


@pytest.fixture
def long_conversation(make_server, agents_home, make_engine):
    """``run(context_length, config="")``: the server for a model of that trained length (the summarising
    model answers LCM's summary calls), an engine on it, and the ``TURNS`` notes told to it (the first
    with ``FACT``); returns ``(server, engine)``. LOG.md compaction summarises deterministically, without
    the model; ``config`` adds lines under ``memory:``; ``replies`` are the planner's first replies
    ("Noted." after them)."""

    def run(context_length: int, config: str = "", replies: tuple = ()):
        server = make_server(context_length=context_length, default="Noted.")
        server.summarizer = summarising_model
        server.enqueue(*replies)
        write_config(agents_home, "llm:\n  backend: ollama\nmemory:\n  compact_summarizer: deterministic\n" + config)
        engine = make_engine()
        rng = random.Random(9)
        assert engine.run(f"{FACT} " + note(1, rng)).ok
        for turn in range(2, TURNS + 1):
            assert engine.run(note(turn, rng)).ok
        return server, engine

    return run
