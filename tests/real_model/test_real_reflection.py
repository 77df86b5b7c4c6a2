"""Reflection on a real model: SmolLM2 on llama-server reads LOG.md entries and conversation messages, its
replies constrained to the reflection's JSON schema (``response_format``). What a 135M model extracts is not
asserted; the promises are: the pass completes, every learned memory cites entries that say it, and an entry
whose reply cannot be used stays queued with the reason, to be read again later."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from core.llm.openai_backend import OpenAIBackend
from core.memory.provider import Message, Session
from tests.real_model.conftest import MODEL_TIMEOUT_S, configure, stop_clock

pytestmark = pytest.mark.timeout(3600)  # a real model on 2 cores: minutes, not seconds

SAID = ["My deploy target is fly.io and the staging app is called harbour-staging.",
        "I moved to Porto last Tuesday.",
        "Remember that my dog is called Biscuit.",
        "The billing service timed out again this morning; we added a retry."]
TOLD = ["My favourite editor is Helix.", "Our team standup is at 9:30 every weekday."]
REFLECT = {"enabled": "true", "timeout_s": MODEL_TIMEOUT_S, "interval_s": 3600.0}
WINDOW = 2048
"""The server's window: reflection bounds a reply to a quarter of it (512 tokens), which SmolLM2, looping
inside the schema, reaches in most calls (at 8,192 tokens a reply could take 2,048, minutes each on a busy
machine)."""
TOO_SHORT = 8
"""Reply tokens that cannot hold the smallest reply of the schema (``{"facts": [], "events": [], ...}``)."""


class ShortReplies(OpenAIBackend):
    """The OpenAI-compatible backend asking the server for replies of :data:`TOO_SHORT` tokens: the server
    cuts every one (finish reason ``length``), as it cuts a reply at its own limit."""

    def chat(self, messages, tools, on_text=None, *, format=None, max_tokens=None):
        return super().chat(messages, tools, on_text, format=format, max_tokens=TOO_SHORT)


WRITTEN_AT = datetime(2026, 11, 24, 9, 30, tzinfo=timezone.utc)
"""The moment every entry and message is written at: the reflection's input shows their times, and a 135M
model's reply moves with any change of its input, so the input is the same at every run."""


def write_entries(manager) -> dict[str, str]:
    """SAID as the user's LOG.md entries and TOLD as conversation messages, all written at
    :data:`WRITTEN_AT`; their texts by source id."""
    from core.plugins.memory import open_provider

    with pytest.MonkeyPatch.context() as clock:
        stop_clock(clock, WRITTEN_AT)
        texts = {f"log:{manager.append_log('USER_FEEDBACK', text)}": text for text in SAID}
        provider = open_provider(None, manager.db)
        session = Session(id="finn:main", agent_id="finn", user_id="local", channel="cli")
        provider.bootstrap(session)
        provider.append(session, [Message("user", text) for text in TOLD])
    ids = [row[0] for row in manager.db.conn.execute("SELECT id FROM ctx_messages ORDER BY id")]
    texts.update({f"msg:{i}": text for i, text in zip(ids, TOLD)})
    return texts


def said_in(value: str, cited: list[str]) -> bool:
    """Whether each word of ``value`` (of four letters or more, its first four) is in the cited texts, but for
    the words a value may hold that its entries need not (``reflection.check.GENERIC``: "user", "that"...)."""
    from core.memory.reflection.check import GENERIC

    words = " ".join(cited).lower()
    return all(word[:4] in words for word in re.findall(r"[^\W_]{4,}", value.lower()) if word not in GENERIC)


def learned(manager) -> dict[str, tuple[str, list[str]]]:
    """Every learned memory: its text and its sources, by memory id."""
    from core.memory.storage import extracted

    conn = manager.db.conn
    found = extracted.of(conn, extracted.learned_ids(conn))
    texts = {f"fact:{f['key']}": f["value"] for f in manager.list_facts()}
    texts.update({f"event:{r[0]}": r[1] for r in conn.execute("SELECT id, what FROM extracted_events")})
    texts.update({f"contradiction:{r[0]}": r[1]
                  for r in conn.execute("SELECT id, statement FROM fact_contradictions")})
    return {memory_id: (texts[memory_id], list(p.sources)) for memory_id, p in found.items()}


def test_a_pass_on_the_real_server_completes_and_each_learned_memory_cites_its_entries(llama_server,
                                                                                       agents_home):
    """With ``llm.backend: openai`` at llama-server, a pass over four LOG.md entries and two conversation
    messages reads them all: each is learned from, read with nothing to keep, or quarantined with a reason
    (none is left unread); llama-server takes the schema as ``response_format``; each learned memory cites
    entries of the pass whose words hold its value; the model's counts are kept under its name."""
    from core.memory_manager import MemoryManager

    server = llama_server(WINDOW)
    configure(agents_home, server, memory={"auto_compact": False}, reflect=REFLECT)
    with MemoryManager("finn") as finn:
        texts = write_entries(finn)
        report = finn.reflection.run()  # the backend llm configures: openai at the server
        status = finn.reflection.status()
        memories = learned(finn)
        reader = finn.reflection.reader(explicit=True)

    assert report.reader == server.model and not report.fallback and report.stopped == ""
    assert report.entries == len(texts) and report.calls >= 1
    assert reader.backend.name == "openai" and reader.backend.constrained, "llama-server took response_format"
    assert status["lag"]["total"] == 0, status["lag"]
    assert all(q["reason"] and q["item"] in texts for q in status["quarantined"])
    assert status["models"][server.model]["calls"] == report.calls
    for memory_id, (text, sources) in memories.items():
        assert sources and set(sources) <= set(texts), (memory_id, sources)
        assert said_in(text, [texts[s] for s in sources]), (memory_id, text, sources)
    print(f"\nSmolLM2 reflected on {report.entries} entries in {report.calls} calls: {report.facts} facts, "
          f"{report.events} events, {report.contradictions} contradictions learned; {report.rejected} values "
          f"rejected, {report.quarantined} entries quarantined; learned {sorted(memories)}")


def test_replies_that_cannot_be_used_leave_every_entry_queued_with_the_reason(llama_server, agents_home):
    """Replies the server cuts short of the schema (8 tokens asked): every entry ends in the quarantine with
    the reason, nothing is learned, the marks move past nothing unrecorded; a later pass with whole replies
    reads each quarantined entry again (learned from, or set aside again: never dropped)."""
    from core.memory_manager import MemoryManager

    server = llama_server(WINDOW)
    configure(agents_home, server, memory={"auto_compact": False}, reflect=REFLECT)
    with MemoryManager("finn") as finn:
        texts = write_entries(finn)
        report = finn.reflection.run(ShortReplies(server.model, server.url, timeout_s=MODEL_TIMEOUT_S))
        status = finn.reflection.status()
        memories = learned(finn)

    assert report.stopped == "" and report.failed >= 2 and report.facts == report.events == 0
    assert memories == {}
    assert status["lag"]["total"] == 0
    quarantined = {q["item"]: q for q in status["quarantined"]}
    assert set(quarantined) == set(texts)
    assert all(q["reason"] and q["model"] == server.model and q["attempts"] == 1
               for q in quarantined.values())
    assert all("JSON" in q["reason"] or "unusable replies" in q["reason"]
               for q in quarantined.values()), quarantined

    with MemoryManager("finn") as finn:
        again = finn.reflection.run(retry_all=True)  # the configured backend: whole replies
        status = finn.reflection.status()
        memories = learned(finn)
    still = {q["item"] for q in status["quarantined"]}
    assert again.released + len(still) == len(texts) and still <= set(texts)
    assert all(q["attempts"] == 2 for q in status["quarantined"])
    for memory_id, (text, sources) in memories.items():
        assert sources and set(sources) <= set(texts) and said_in(text, [texts[s] for s in sources])
