"""Recall over every tier with the real all-MiniLM-L6-v2 model: tiers, scores, duplicates, time, forgetting,
secrets."""

from __future__ import annotations

import json


from core.memory.provider import Message, Session
from core.memory.upkeep.rebuild import rebuild_all
from core.memory.recall.docs import Filters
from core.memory_manager import MemoryManager
from core.plugins.memory import open_provider
from core.plugins.memory.lcm import DeterministicSummarizer


def ids_of(hits):
    return [h["id"] for h in hits]


def test_a_log_entry_is_recalled_as_soon_as_it_is_written_and_after_compaction(finn):
    """A LOG.md entry is found right after append_log (warm, by seq), and after compaction in its archive."""
    seq = finn.append_log("USER_FEEDBACK", "The user wants the Nvidia earnings summary every Monday")
    hit = finn.recall_memory("when does the user want the earnings report?", 1)[0]
    assert (hit["kind"], hit["tier"], hit["where"], hit["source"]) == ("log", "warm", {"seq": seq},
                                                                       f"LOG.md#seq={seq}")
    finn.compact_log("The user asked for weekly earnings summaries.")
    hits = finn.recall_memory("when does the user want the earnings report?", 3)
    archived = next(h for h in hits if h["id"] == f"log:{seq}")
    assert archived["kind"] == "log_archive" and archived["tier"] == "cold"
    assert archived["where"] == {"seq": seq, "archive": f"LOG-1-{seq}"}
    assert "summary:LOG-1-1" in ids_of(finn.recall_memory("weekly earnings summaries", 3))


def test_conversation_messages_and_summaries_are_recalled_with_their_ids(finn):
    """Messages and LCM summaries of a provider are found, with conversation and message or summary id."""
    provider = open_provider(None, finn.paths.db_file, summarizer=DeterministicSummarizer())
    session = Session("finn:cli:main", agent_id="finn", user_id="ada", channel="cli")
    provider.bootstrap(session)
    provider.append(session, [Message("user", "My daughter's school play is on the twelfth"),
                              Message("assistant", "Noted, I will remind you about the school play.")])
    hit = finn.recall_memory("when is the school performance of my kid?", 1)[0]
    assert hit["kind"] == "message" and hit["tier"] == "conversation"
    assert hit["where"]["conversation"] == "finn:cli:main" and isinstance(hit["where"]["message_id"], int)
    for n in range(40):
        provider.append(session, [Message("user", f"filler question {n} about gardening tomatoes")])
    from core.memory.provider import CompactionMode
    provider.compact(session, CompactionMode.FULL)
    summaries = finn.recall_memory("gardening tomatoes", 20, kind="summary", min_score=0)
    assert summaries and summaries[0]["where"]["summary_id"].startswith("sum_")
    provider.close()


def test_scores_are_probabilities_and_a_query_about_nothing_returns_nothing(finn):
    """Scores lie in [0, 1], best first; nonsense gets nothing with the default min_score, something with
    0."""
    finn.store_memories(["The report goes to Maria on Fridays", "Deploys happen after the Tuesday standup",
                         "The cat is called Mochi"])
    hits = finn.recall_memory("who receives the report?", 3)
    assert hits[0]["content"] == "The report goes to Maria on Fridays"
    assert all(0 <= h["score"] <= 1 for h in hits) and hits == sorted(hits, key=lambda h: -h["score"])
    assert finn.recall_memory("zzzz qqqq", 5) == []
    assert finn.recall_memory("zzzz qqqq", 5, min_score=0)
    assert finn.recall_memory("who receives the report?", 3, min_score=0.99999) == []


def test_storing_the_same_note_again_updates_it_and_near_duplicates_are_collapsed(finn):
    """The same note twice is one memory; copies differing in metadata show once; different speakers both
    show."""
    first = finn.store_memory("The report goes to Maria on Fridays")
    assert finn.store_memory("The report goes to Maria on Fridays") == first
    finn.store_memory("The report goes to Maria on Fridays", {"source": "email"})
    hits = finn.recall_memory("who gets the report", 5)
    assert [h["content"] for h in hits].count("The report goes to Maria on Fridays") == 1
    a = finn.store_memory("Thanks, that means a lot!", {"speaker": "Ada", "date": "8 May 2023", "session": 1})
    b = finn.store_memory("Thanks, that means a lot!", {"speaker": "Bo", "date": "9 May 2023", "session": 2})
    assert {a, b} <= set(ids_of(finn.recall_memory("thanks that means a lot", 5)))


def test_time_filters_read_written_dates_and_relative_words_are_resolved(finn):
    """since/until take written dates; a date in metadata is when it happened; "yesterday" is found by its
    date."""
    old = finn.store_memory("I ran a charity 5K yesterday",
                            {"speaker": "Ada", "date": "1:56 pm on 8 May, 2023"})
    new = finn.store_memory("I ran a half marathon", {"speaker": "Ada"}, occurred_at="2024-03-02T10:00:00Z")
    hit = finn.recall_memory("charity run", 1)[0]
    assert hit["id"] == old and hit["occurred_at"] == "2023-05-08T13:56:00.000Z"
    assert ids_of(finn.recall_memory("Ada's running race", 5, since="1 January 2024", min_score=0)) == [new]
    assert ids_of(finn.recall_memory("Ada's running race", 5, until="31 December 2023", min_score=0)) == [old]
    assert finn.recall_memory("what happened on 7 May 2023?", 1, min_score=0)[0]["id"] == old
    recent = finn.recall_memory("Ada's running race", 2, recency_days=30, min_score=0)
    assert recent[0]["id"] == new


def test_a_fact_that_replaced_a_value_outranks_a_note_that_contradicts_it(finn):
    """The saved fact (current value) ranks above an older note with the old value."""
    finn.store_memory("My favourite colour is blue")
    finn.save_fact("favourite_colour", "blue", "preference")
    finn.save_fact("favourite_colour", "green", "preference")
    hits = finn.recall_memory("what is my favourite colour?", 2)
    assert hits[0]["content"] == "favourite_colour: green" and hits[0]["kind"] == "fact"


def test_forgetting_removes_everywhere_logs_no_text_and_survives_rebuild(finn):
    """forget_memory/forget_memories remove from memory.db and LanceDB, log FORGET without the text,
    and rebuild_index does not bring anything back."""
    note = finn.store_memory("My old address is 12 Elm Street")
    seq = finn.append_log("USER_FEEDBACK", "I used to live on Elm Street")
    keep = finn.store_memory("The report goes to Maria on Fridays")
    finn.cold.catch_up()
    assert finn.forget_memory(note) and not finn.forget_memory(note)
    assert finn.forget_memories(query="Elm Street") == [f"log:{seq}"]
    assert finn.db.conn.execute("SELECT count(*) FROM cold_notes WHERE id = ?",
                                (note[5:],)).fetchone()[0] == 0
    assert note not in finn.cold.store().ids() and f"log:{seq}" not in finn.cold.store().ids()
    forget_lines = [line for line in finn.paths.log_file.read_text().splitlines() if " FORGET " in line]
    assert len(forget_lines) == 2 and all("Elm" not in line for line in forget_lines)
    assert note in forget_lines[0]
    rebuild_all(finn.tiers)
    found = ids_of(finn.recall_memory("Elm Street address", 10, min_score=0))
    assert note not in found and f"log:{seq}" not in found and keep in found


def test_forget_before_and_expiring_notes(finn, agents_home):
    """forget_memories(before=...) forgets what happened earlier; an expired note is never recalled."""
    old = finn.store_memory("Dentist appointment booked", occurred_at="2023-01-05")
    new = finn.store_memory("Dentist appointment moved", occurred_at="2024-01-05")
    assert finn.forget_memories(before="1 June 2023") == [old]
    assert ids_of(finn.recall_memory("dentist appointment", 5)) == [new]
    gone = finn.store_memory("Gate code is valid this week", expires_at="2020-01-01")
    assert gone not in ids_of(finn.recall_memory("gate code", 5, min_score=0))
    finn.close()
    with MemoryManager("finn") as again:  # expired notes are forgotten at open
        assert again.db.conn.execute("SELECT count(*) FROM cold_notes WHERE id = ?",
                                     (gone[5:],)).fetchone()[0] == 0


def test_secrets_are_never_indexed(finn):
    """A secret fact has no doc or vector; its value in a note or a log entry is redacted in the index."""
    finn.save_fact("api_key", "sk-live-998877", "secret")
    finn.store_memory("The deploy token is sk-live-998877, keep it safe")
    finn.append_log("THOUGHT", "used key sk-live-998877 for the call")
    finn.cold.catch_up()
    assert "fact:api_key" not in finn.cold.docs.ids()
    rows = finn.db.conn.execute("SELECT text, context, metadata FROM recall_docs").fetchall()
    assert all("sk-live-998877" not in json.dumps(tuple(r)) for r in rows)
    assert all("sk-live-998877" not in t
               for t in finn.cold.store().table.to_table().column("text").to_pylist())


def test_a_value_that_becomes_a_secret_leaves_the_index(finn):
    """A value saved as a secret after memories quoting it were indexed is redacted in their docs, their words
    and their vectors, and in the vector of the turn that followed them."""
    said = finn.store_memory("Ada: the door code is 4417-alpha", metadata={"speaker": "Ada", "session": "s1"})
    after = finn.store_memory("Bob: thanks, noted", metadata={"speaker": "Bob", "session": "s1"})
    finn.cold.catch_up()
    assert said in ids_of(finn.recall_memory("4417-alpha", 3))
    finn.save_fact("door_code", "4417-alpha", "secret")
    assert finn.cold.background.wait_idle(60)
    rows = finn.db.conn.execute("SELECT text, context, metadata FROM recall_docs").fetchall()
    assert all("4417" not in json.dumps(tuple(r)) for r in rows)
    vectors = finn.cold.store().table.to_table()
    texts = dict(zip(vectors.column("id").to_pylist(), vectors.column("text").to_pylist()))
    assert all("4417" not in t for t in texts.values()) and "[REDACTED]" in texts[after]
    assert finn.cold.docs.words("4417-alpha", 10, Filters()) == []  # its words left the full-text index


def test_forgetting_a_turn_gives_the_next_turn_a_new_vector(finn):
    """The vector of a short turn quotes the turn before it: once that one is forgotten, it is computed
    without it."""
    first = finn.store_memory("I moved to 12 Elm Street", metadata={"speaker": "Ada", "session": "s2"})
    reply = finn.store_memory("Nice, how is the new flat?", metadata={"speaker": "Bob", "session": "s2"})
    finn.cold.catch_up()
    texts = lambda: dict(zip(*(finn.cold.store().table.to_table().column(c).to_pylist() for c in ("id",
                                                                                                  "text"))))
    assert "Elm Street" in texts()[reply]
    finn.forget_memory(first)
    assert finn.cold.background.wait_idle(60)
    assert first not in texts() and "Elm" not in texts()[reply]


def test_a_long_turn_is_read_alone_and_a_short_one_with_the_start_of_the_turn_before(finn):
    """Up to 300 characters in all: a turn that long is its own vector's whole text; a short one is followed
    by as much of the turn before it as fits."""
    story = ("We drove up the coast road past the lighthouse and the old fish market. " * 6).strip()
    long = finn.store_memory(story, metadata={"speaker": "Ada", "session": "s3"})
    short = finn.store_memory("Sounds lovely!", metadata={"speaker": "Bob", "session": "s3"})
    finn.cold.catch_up()
    texts = dict(zip(*(finn.cold.store().table.to_table().column(c).to_pylist() for c in ("id", "text"))))
    assert texts[long] == f"Ada: {story}"
    said = "Bob: Sounds lovely!"
    assert texts[short] == f"{said}\n(in reply to {f'Ada: {story}'[:300 - len(said)]})"


def test_forget_skill_and_memory_tool_actions(finn):
    """The forget_memory skill and the memory tool's recall and forget actions work on the agent's memory."""
    import json

    from core.memory.provider import bind, build_tool
    from core.skills.memory.scripts.forget_memory import execute as forget_memory
    from core.skills.memory.scripts.store_memory import execute as store_memory

    note = store_memory(agent_name="finn", content="Parking spot is B12")["id"]
    forgot = forget_memory(agent_name="finn", memory_id=note)
    assert (forgot["forgotten"], forgot["count"], forgot["more"]) == ([note], 1, 0)
    assert forgot["matched"] == [{"id": note, "kind": "note", "content": "Parking spot is B12",
                                  "why": {"id": note},
                                  "occurred_at": forgot["matched"][0]["occurred_at"], "also": []}]
    provider = open_provider(None, finn.paths.db_file)
    session = Session("finn:cli:main", agent_id="finn", user_id="ada")
    tool = build_tool(provider, memory=finn)
    other = finn.store_memory("The wifi password hint is the cat's name")
    with bind(session=session):
        assert json.loads(tool.call({"action": "recall",
                                     "query": "wifi password hint"}))["memories"][0]["id"] == other
        assert json.loads(tool.call({"action": "forget", "id": other}))["forgotten"] == [other]
    provider.close()


def test_a_sync_that_read_a_fact_before_it_changed_never_overwrites_the_newer_docs(finn, monkeypatch):
    """The background indexer and a recall's own sync may interleave: one reads a fact's docs, the fact
    changes, the other indexes the new value, then the first writes. The newer docs stay."""
    finn.save_fact("favourite_colour", "blue", "preference")
    indexer, read, changed = finn.cold.indexer, finn.cold.indexer._item_docs, []

    def read_then_change(item, secrets):
        docs = read(item, secrets)
        if item == "fact:favourite_colour" and not changed:
            changed.append(True)
            finn.save_fact("favourite_colour", "green", "preference")
            indexer.sync()  # the other sync: reads and writes the new value first
        return docs

    monkeypatch.setattr(indexer, "_item_docs", read_then_change)
    indexer.sync()
    assert changed
    text = finn.db.conn.execute("SELECT text FROM recall_docs WHERE id = 'fact:favourite_colour'").fetchone()[
        0
    ]
    assert text == "favourite_colour: green"
    assert finn.db.conn.execute("SELECT count(*) FROM cold_pending").fetchone()[0] == 0
    assert finn.recall_memory("what is my favourite colour?", 1)[0]["content"] == "favourite_colour: green"
