"""A memory of several sentences gets a vector for each: a remark in passing inside a turn about something
else is found by meaning, and the sentence rows live and die with their memory."""

from __future__ import annotations

from core.memory.recall import lance_table as pieces

TURN = ("I'm trying to improve my bakery's online presence and I was wondering which tools track engagement "
        "on social media. I post on three platforms every morning and I'd like to see which posts people "
        "share. By the way, I went to a two-day pottery workshop at the community centre last weekend. Also, "
        "what time of day should a small bakery post on Instagram?")
OTHERS = ["Can you suggest a good recipe for sourdough with a longer cold proof?",
          "My sister is visiting in June and I need ideas for a day trip by train.",
          "I signed up for a Spanish course at the language school that starts in May.",
          "What is the best way to store fresh herbs so they last a week?",
          "I have been learning to play the ukulele with online lessons every evening.",
          "Our team meeting moved to Thursdays, so I need to reorganise my calendar."]


def piece_ids(manager, memory_id: str) -> list[str]:
    return sorted(i for i in manager.cold.store().chunk_ids() if pieces.memory_of(i) == memory_id)


def expected_ids(memory_id: str, text: str) -> list[str]:
    return sorted(pieces.chunk_id(memory_id, n) for n in range(1, len(pieces.piece_texts(text)) + 1))


def test_a_remark_in_passing_is_found_by_its_sentence(finn):
    """No word of the question is in the turn, whose own vector is mostly about social media: the vector of
    its third sentence finds it first, above the default min_score."""
    stored = finn.store_memories([TURN, *OTHERS])
    finn.cold.catch_up()
    hits = finn.recall_memory("What ceramics class did I go to?", 3)
    assert hits and hits[0]["id"] == stored[0] and hits[0]["content"] == TURN
    assert [h["id"] for h in hits].count(stored[0]) == 1


def test_each_sentence_of_a_memory_has_a_row_and_one_sentence_none(finn):
    """Four sentences, four rows beside the memory's own; a memory of one sentence has only its own."""
    stored = finn.store_memories([TURN, OTHERS[0]])
    finn.cold.catch_up()
    assert piece_ids(finn, stored[0]) == expected_ids(stored[0],
                                                      TURN) and len(piece_ids(finn, stored[0])) == 4
    assert piece_ids(finn, stored[1]) == []
    texts = {r["id"]: r["text"] for r in finn.cold.store().rows_of(pieces.CHUNK_PREFIX)}
    assert texts[pieces.chunk_id(stored[0], 3)] == \
        "By the way, I went to a two-day pottery workshop at the community centre last weekend."
    assert sorted(finn.cold.store().ids()) == sorted(finn.cold.docs.ids())


def test_forgetting_a_memory_removes_its_sentence_rows(finn):
    memory_id = finn.store_memory(TURN)
    finn.cold.catch_up()
    assert piece_ids(finn, memory_id)
    assert finn.forget_memory(memory_id)
    finn.cold.sync()
    assert finn.cold.store().chunk_ids() == [] and finn.cold.store().ids() == []


def test_a_memory_rewritten_with_fewer_sentences_keeps_none_of_the_old_ones(finn):
    """A fact whose new value is one sentence loses the rows of its old value's sentences in the write of its
    new vector; another memory's rows are untouched."""
    finn.save_fact("plan", "We fly to Lisbon on Monday morning. Then we drive to Porto for the wedding.",
                   category="personal")
    other = finn.store_memory(TURN)
    finn.cold.catch_up()
    assert len(piece_ids(finn, "fact:plan")) == 2
    finn.save_fact("plan", "We stay home this year", category="personal")
    finn.cold.catch_up()
    assert piece_ids(finn, "fact:plan") == []
    assert piece_ids(finn, other) == expected_ids(other, TURN)
    assert finn.recall_memory("wedding in Porto", 3, kind="fact", min_score=0)[0]["content"] == \
        "plan: We stay home this year"


def test_a_secret_saved_later_leaves_no_sentence_row_holding_it(finn):
    note = finn.store_memory("I set up the new router this morning and it works well. "
                             "The wifi password is tangerine-owl-42 so write it down somewhere safe.")
    finn.cold.catch_up()
    assert len(piece_ids(finn, note)) == 2
    finn.save_fact("wifi_password", "tangerine-owl-42", category="secret")
    finn.cold.catch_up()
    rows = finn.cold.store().rows_of("")
    assert len([r for r in rows if pieces.memory_of(r["id"]) == note]) == 3
    assert not [r["id"] for r in rows if "tangerine-owl-42" in r["text"] + r["memory"]]


def test_rebuilding_the_index_writes_the_sentence_rows_again(finn):
    from core.memory.upkeep import rebuild_all

    stored = finn.store_memories([TURN, *OTHERS])
    finn.cold.catch_up()
    before = sorted(finn.cold.store().chunk_ids())
    rebuild_all(finn.tiers)
    assert sorted(finn.cold.store().chunk_ids()) == before == expected_ids(stored[0], TURN)


def test_sentences_end_at_stops_and_line_breaks_and_short_ones_join_the_one_before():
    assert pieces.sentences("I moved to Porto in May 2021. My dog is called Biscuit, really!\n"
                            "What should I pack for the trip?") == [
        "I moved to Porto in May 2021.", "My dog is called Biscuit, really!",
        "What should I pack for the trip?"]
    assert pieces.sentences("Thanks! I went to the pottery workshop last weekend. It was great. See "
                            "you.") == [
        "Thanks! I went to the pottery workshop last weekend. It was great. See you."]
    assert pieces.sentences('My manager said "it is finally done." Then the meeting ended at noon.') == [
        'My manager said "it is finally done."', "Then the meeting ended at noon."]
    assert pieces.sentences("  ") == [] and pieces.sentences("one sentence only") == ["one sentence only"]
    assert pieces.piece_texts("I moved to Porto in May last year. My dog is called Biscuit, he is four.") == [
        "I moved to Porto in May last year.", "My dog is called Biscuit, he is four."]
    assert pieces.piece_texts("I moved to Porto in May last year.") == []
    long = "word " * 500
    assert pieces.piece_texts(long) == pieces.chunk_texts(long)  # past LONG_CHARS: chunks, not sentences


def test_a_hit_is_its_own_row_raised_toward_its_best_sentence():
    """Folded hits keep each memory's own distance (the farthest row's when the search did not reach it), and
    its similarity adds a share of what its best sentence adds."""
    from core.memory.recall.query import similarity

    rows = [{"id": pieces.chunk_id("note:a", 2), "_distance": 0.2}, {"id": "note:b", "_distance": 0.3},
            {"id": "note:a", "_distance": 0.5}, {"id": pieces.chunk_id("note:c", 1), "_distance": 0.6}]
    hits = pieces.folded_hits(rows, 10)
    assert [(h["id"], h["_distance"], h["own_distance"]) for h in hits] == [
        ("note:a", 0.2, 0.5), ("note:b", 0.3, 0.3), ("note:c", 0.6, 0.6)]
    assert similarity(hits[0], 0.5) == 0.5 + 0.5 * (0.8 - 0.5)
    assert similarity(hits[1], 0.5) == 0.7 and similarity(hits[0], 0.0) == 0.5
    assert [h["id"] for h in pieces.folded_hits(rows, 1)] == ["note:a"]
