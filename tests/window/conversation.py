"""The long conversation of the window tests and the benchmark: ~1,200-character notes, the first holding a
fact, and the summarising model that answers LCM's summary calls as a small model would."""

from __future__ import annotations

import random
import re
from typing import Any

_SECTION = re.compile(r"^## (Messages|Summaries)\s*$", re.MULTILINE)
_END = re.compile(r"^## (Summary|Merged summary)\s*$", re.MULTILINE)
_SENTENCE = re.compile(r"^.*?[.!?](?=\s|$)")
_STAMP = re.compile(r"^\[[^\]]*\]\s*")
_TARGET = re.compile(r"about\s+(\d+)\s+tokens")
_DIGIT = re.compile(r"\d")
_CHATTER = {"noted.", "ok.", "thanks.", "saved."}

TURNS = 42
FACT = "My locker code is 4417 and the locker is in hall B."
WORDS = ("harbour", "lantern", "orchard", "gravel", "copper", "meadow", "ribbon", "thistle", "canvas",
         "pepper",
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


FACT_TURNS = (5, 17, 30)
"""Turns of :func:`replies` in which the model first saves a fact, then answers: two planner calls in one
run."""


def replies() -> tuple:
    """The planner's first replies for :func:`tell_notes` ("Noted." after them): "Noted.", except in
    ``FACT_TURNS`` a save_fact call first."""
    from tests.ollama_server import tool_call

    script: list = []
    for turn in range(1, max(FACT_TURNS) + 1):
        if turn in FACT_TURNS:
            script.append(tool_call("save_fact", key=f"project_{turn}", value=f"harbour {turn}",
                                    category="general"))
        script.append("Noted.")
    return tuple(script)


def tell_notes(engine: Any, turns: int = TURNS, check: bool = True, progress: Any = None) -> list[Any]:
    """Tell ``engine`` the notes of turns 1 to ``turns``, the first one opening with ``FACT``; return the
    runs' results. ``check``: every run must end ``done`` (a scripted model's do; a real one may not);
    ``progress(turn)`` is called after each turn."""
    rng = random.Random(9)
    results = []
    for turn in range(1, turns + 1):
        result = engine.run((f"{FACT} " if turn == 1 else "") + note(turn, rng))
        assert result.ok or not check, result
        results.append(result)
        if progress is not None:
            progress(turn)
    return results


def record_requests(backend: Any) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Keep every request ``backend`` is sent from now on, the planner's and the summarizers', as
    ``(messages, tools)`` in order (the list returned fills as the calls are made)."""
    recorded: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    chat = backend.chat

    def recording(messages, tools, on_text=None, **options):
        recorded.append(([dict(m) for m in messages], list(tools)))
        return chat(messages, tools, on_text, **options)

    backend.chat = recording
    return recorded


REPLAY_WINDOW_FACTOR = 2
"""The scripted server's window in :func:`replay`, in windows of the real server: its tokenizer counts a
prompt longer than a real one (it splits JSON finely), and it must not cut a prompt the real server took whole
(its model of the prompt cache does not depend on the window)."""


def replay(requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]], num_ctx: int) -> list[Any]:
    """Send the same requests, in the same order, to the scripted Ollama-like server (a model of
    ``REPLAY_WINDOW_FACTOR * num_ctx`` tokens: it cuts none of them) and return what it saw of each
    (:class:`tests.ollama_server.Prompt`: its cached and evaluated tokens by its own reckoning)."""
    import ollama

    from tests.ollama_server import ScriptedOllama

    window = REPLAY_WINDOW_FACTOR * num_ctx
    with ScriptedOllama(default="ok", context_length=window) as server:
        client = ollama.Client(host=server.host)
        for messages, tools in requests:
            client.chat(model="llama3.1", messages=messages, tools=tools or None, options={"num_ctx": window})
        client.close()
        assert server.truncated == [], "the scripted server cut a prompt the real one took whole"
        return list(server.prompts)


def consecutive_pairs(server: Any) -> list[tuple[Any, Any]]:
    """Each planner prompt with the planner prompt right before it, when no other call came between
    (Ollama's runner with OLLAMA_NUM_PARALLEL=1 keeps one KV cache a model: a summary call takes it)."""
    prompts = list(server.prompts)
    return [(before, after) for before, after in zip(prompts, prompts[1:]) if before.tools and after.tools]


def in_run(pair: tuple[Any, Any]) -> bool:
    """True for a pair whose later prompt continues the same run (a tool result is among its last two
    messages)."""
    return any(m.get("role") == "tool" for m in pair[1].messages[-2:])
