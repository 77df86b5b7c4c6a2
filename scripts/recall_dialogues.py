"""Generate long multi-session conversations between two friends, with questions and their evidence.

The recall-quality benchmark (``bench_recall_quality.py``) stores every turn
with ``store_memory`` and asks every question with ``recall_memory``. The data
imitates public long-conversation benchmarks of the LoCoMo kind:

- two named friends catch up over ~24 dated sessions (~500 turns): greetings,
  small talk, chatter about nothing in particular, and in between the things
  that happened to them, often with a shared photo's caption;
- questions are written from their evidence turn, so they share its key words
  ("When did Caroline go to the LGBTQ support group?" <- "I went to a LGBTQ
  support group yesterday and it was so powerful"), but so do the friend's
  replies ("Caroline, pottery sounds so relaxing!"), later check-ins and the
  friend's own stories about the same things;
- events are told relative to the session date ("yesterday", "last week"):
  temporal questions are answered by the session's date;
- multi-hop questions need turns from two to four sessions ("What activities
  does Melanie partake in?"); open-domain questions need an inference from
  them ("Would Caroline likely pursue writing as a career?");
- a job changes later (the question about the current one has the correction
  as its evidence), and both friends do some of the same things.

Everything comes from one ``random.Random(seed)``: the same seed gives the
same data. Nothing is downloaded.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from recall_dialogue_data import (
    ACTIVITIES, BOOK_ECHO, BOOK_TELLS, BOOKS, CHAT, CHATTER, CITIES, CLOSERS, FAMILY, FAMILY_ECHO, GREET_BACK,
    JOB_ECHO,
    JOB_FIRST, JOB_LATER, JOBS, MOVE_ECHO, MOVE_TELLS, NAMES, OPENERS, PET_ECHO, PET_TELLS, PETS, PROMPTS,
    RELATIVE,
    SMALL_TALK, TRIP_ECHO, TRIP_TELLS, TRIPS,
)


@dataclass
class Turn:
    """One utterance."""

    dia_id: str
    speaker: str
    text: str
    session: int
    date: str
    """The session's date as people write it: ``1:56 pm on 8 May, 2023``."""


@dataclass
class Question:
    """A question, the turns that hold its answer, and its kind."""

    text: str
    kind: str
    """``single-hop``, ``multi-hop``, ``temporal``, ``open-domain``."""
    evidence: list[str]
    answer: str
    mentions: list = field(default_factory=list, repr=False)
    """The planned evidence turns (their ``dia_id`` is known once the conversation is written)."""


@dataclass
class Conversation:
    """A long conversation: turns in order and the questions about it."""

    speakers: tuple[str, str]
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


@dataclass
class _Mention:
    """Something a person tells in a session: the evidence turn and how the friend reacts to it."""

    teller: str
    text: str
    echo: list[str]
    more: list[str] = field(default_factory=list)
    friend: str = ""
    topic: str = ""
    fmt: dict = field(default_factory=dict)
    dia_id: str = ""


class _Builder:
    """One conversation under construction: sessions' dates, what is told when, the questions."""

    def __init__(self, rng: random.Random, speakers: tuple[str, str], sessions: int) -> None:
        self.rng = rng
        self.conv = Conversation(speakers)
        day = datetime(2022 + rng.randint(0, 1), rng.randint(1, 12), rng.randint(1, 28), rng.randint(8, 21),
                       rng.randint(0, 59))
        self.dates = []
        for _ in range(sessions):
            day += timedelta(days=rng.randint(4, 18), minutes=rng.randint(-300, 300))
            self.dates.append(day)
        self.plan: list[list[_Mention]] = [[] for _ in range(sessions)]

    def tell(self, session: int, mention: _Mention) -> _Mention:
        self.plan[session].append(mention)
        return mention

    def ask(self, text: str, kind: str, answer: str, *mentions: _Mention) -> None:
        self.conv.questions.append(Question(text, kind, [], answer, list(mentions)))

    def relative(self, session: int) -> tuple[str, str]:
        """A relative date and the day it means in ``session``."""
        words, days = self.rng.choice(RELATIVE)
        when = self.dates[session] - timedelta(days=days)
        return words, (f"the month before {self.dates[session]:%B %Y}" if words == "last month"
                       else f"{when.day} {when:%B} {when.year}")

    # -- writing the turns ---------------------------------------------------------------------------------

    def render(self) -> None:
        rng = self.rng
        told: list[tuple[str, str]] = []  # (teller, activity) mentioned so far: later check-ins and remarks
        for s, mentions in enumerate(self.plan):
            rng.shuffle(mentions)
            a, b = self.conv.speakers if s % 2 == 0 else self.conv.speakers[::-1]
            turns: list[tuple[str, str, _Mention | None]] = [
                (a, rng.choice(OPENERS).format(o=b), None), (b, rng.choice(GREET_BACK).format(o=a), None)]
            if told and rng.random() < 0.5:
                teller, topic = rng.choice(told)
                other = b if teller == a else a
                turns.append((other, f"How's the {ACTIVITIES[topic]['keyword']} going, {teller}?", None))
                turns.append((teller, self._small(other), None))
            slots = mentions + [None] * rng.randint(2, 4) + ["remark"] * rng.randint(0, 2)
            rng.shuffle(slots)
            for mention in slots:
                if mention == "remark" and told:
                    teller, topic = rng.choice(told)
                    keyword = ACTIVITIES[topic]["keyword"]
                    turns.append((teller, rng.choice(CHAT).format(kw=keyword, t=b if teller == a else a),
                                  None))
                    turns.append((b if teller == a else a, self._small(teller), None))
                    continue
                if not isinstance(mention, _Mention):
                    who = rng.choice((a, b))
                    turns.append((who, rng.choice(CHATTER), None))
                    turns.append((b if who == a else a, self._small(who), None))
                    continue
                turns.extend(self._episode(mention, b if mention.teller == a else a))
                if mention.topic:
                    told.append((mention.teller, mention.topic))
            turns.append((a, rng.choice(CLOSERS).format(o=b), None))
            turns.append((b, rng.choice(CLOSERS).format(o=a), None))
            date = _human_date(self.dates[s])
            for n, (speaker, text, mention) in enumerate(turns, start=1):
                dia_id = f"D{s + 1}:{n}"
                self.conv.turns.append(Turn(dia_id, speaker, text, s + 1, date))
                if mention is not None:
                    mention.dia_id = dia_id
        for question in self.conv.questions:
            question.evidence = [m.dia_id for m in question.mentions]

    def _episode(self, m: _Mention, other: str) -> list[tuple[str, str, _Mention | None]]:
        rng = self.rng
        out: list[tuple[str, str, _Mention | None]] = []
        if rng.random() < 0.35:
            out.append((other, rng.choice(PROMPTS), None))
        out.append((m.teller, m.text, m))
        out.append((other, rng.choice(m.echo).format(t=m.teller, **m.fmt) if rng.random() < 0.75
                    else self._small(m.teller), None))
        if m.more and rng.random() < 0.6:
            out.append((m.teller, rng.choice(m.more), None))
        if m.friend and rng.random() < 0.3:
            out.append((other, m.friend, None))
        for _ in range(rng.randint(0, 2)):
            who = rng.choice((m.teller, other))
            out.append((who, self._small(other if who == m.teller else m.teller), None))
        return out

    def _small(self, other: str) -> str:
        line = self.rng.choice(SMALL_TALK)
        if self.rng.random() < 0.4:
            line = f"{line} {self.rng.choice(SMALL_TALK)}"
        return line.format(o=other)


def _human_date(moment: datetime) -> str:
    hour = moment.hour % 12 or 12
    return (
        f"{hour}:{moment.minute:02d} {'am' if moment.hour < 12 else 'pm'} on {moment.day} {moment:%B}, "
        f"{moment.year}"
    )


# -- what each person tells, and the questions about it -----------------------------------------------------

def _activities(b: _Builder, person: str, names: list[str], sessions: int) -> None:
    rng = b.rng
    firsts = []
    for name in names:
        act = ACTIVITIES[name]
        when = sorted(rng.sample(range(sessions), len(act["tells"])))
        told = []
        for i, (s, (text, question, answer, when_q)) in enumerate(zip(when, act["tells"])):
            dated = "{rel}" in text
            rel, day = b.relative(s) if dated else ("", "")
            photo = f" {act['photo']}" if rng.random() < 0.3 else ""
            mention = b.tell(s, _Mention(person, text.format(rel=rel) + photo, act["echo"], act["more"],
                                         act["friend"] if rng.random() < 0.5 else "", name))
            told.append(mention)
            if i == 0 or rng.random() < 0.6:
                b.ask(question.format(p=person), "single-hop", answer, mention)
            if when_q:
                b.ask(when_q.format(p=person), "temporal", day, mention)
        firsts.append(told[0])
        b.ask(act["multi"].format(p=person), "multi-hop", "; ".join(t.text for t in told), *told)
        if rng.random() < 0.8:
            question, answer = act["open"]
            b.ask(question.format(p=person), "open-domain", answer, *told[:2])
    b.ask(rng.choice([f"What activities does {person} partake in?", f"What hobbies does {person} have?",
                      f"What does {person} do for fun?"]), "multi-hop", ", ".join(names), *firsts)


def _life(b: _Builder, person: str, picks: dict, sessions: int) -> None:
    rng = b.rng
    # Trips, each in its own session.
    trips = []
    for s, (country, sight) in zip(sorted(rng.sample(range(sessions), 3)), picks["trips"]):
        fmt = {"country": country}
        trips.append(b.tell(s, _Mention(person, rng.choice(TRIP_TELLS).format(country=country, sight=sight),
                                        TRIP_ECHO, fmt=fmt)))
    country, sight = picks["trips"][0]
    b.ask(f"What did {person} see in {country}?", "single-hop", sight, trips[0])
    b.ask(rng.choice([f"Where has {person} traveled?", f"Which countries has {person} visited?"]),
          "multi-hop",
          ", ".join(c for c, _ in picks["trips"]), *trips)
    # Books.
    books = []
    for s, (book, comment) in zip(sorted(rng.sample(range(sessions), 2)), picks["books"]):
        books.append(b.tell(s, _Mention(person, rng.choice(BOOK_TELLS).format(book=book, comment=comment),
                                        BOOK_ECHO)))
    b.ask(f"What did {person} think of \"{picks['books'][0][0]}\"?", "single-hop", picks["books"][0][1],
          books[0])
    b.ask(f"What books has {person} read?", "multi-hop", ", ".join(t for t, _ in picks["books"]), *books)
    # Two pets, adopted in different sessions.
    pets = []
    for s, kind in zip(sorted(rng.sample(range(sessions), 2)), picks["pets"]):
        name = rng.choice(PETS[kind])
        rel, _ = b.relative(s)
        pets.append(b.tell(s, _Mention(person, rng.choice(PET_TELLS).format(kind=kind, name=name, rel=rel),
                                       PET_ECHO,
                                       fmt={"name": name, "kind": kind})))
        b.ask(f"What is the name of {person}'s {kind}?", "single-hop", name, pets[-1])
    b.ask(f"What pets does {person} have?", "multi-hop", ", ".join(picks["pets"]), *pets)
    # A job, changed later: the correction is the evidence for the current one.
    (job1, place1), (job2, place2) = picks["jobs"]
    first = b.tell(rng.randrange(0, sessions // 3),
                   _Mention(person, JOB_FIRST.format(job=job1, place=place1), JOB_ECHO))
    later = b.tell(rng.randrange(sessions // 2, sessions),
                   _Mention(person, rng.choice(JOB_LATER).format(job=job2, place=place2), JOB_ECHO))
    b.ask(rng.choice([f"What is {person}'s job now?", f"Where does {person} work now?"]), "single-hop",
          f"{job2} at {place2}", later)
    b.ask(f"What jobs has {person} had?", "multi-hop", f"{job1}, {job2}", first, later)
    # A move to a new city, told relative to the session date.
    s = rng.randrange(sessions // 3, sessions)
    rel, day = b.relative(s)
    move = b.tell(s, _Mention(person, rng.choice(MOVE_TELLS).format(city=picks["city"], rel=rel), MOVE_ECHO))
    b.ask(f"Which city did {person} move to?", "single-hop", picks["city"], move)
    b.ask(f"When did {person} move to {picks['city']}?", "temporal", day, move)
    # Family events, dated.
    for text, question, echo in picks["family"]:
        s = rng.randrange(sessions)
        rel, day = b.relative(s)
        event = b.tell(s, _Mention(person, text.format(rel=rel), [echo, echo, *FAMILY_ECHO]))
        b.ask(question.format(p=person), "temporal", day, event)


def generate_conversation(rng: random.Random, sessions: int = 24) -> Conversation:
    """One conversation with its questions."""
    p, q = rng.sample(NAMES, 2)
    b = _Builder(rng, (p, q), sessions)
    # Four activities each, one of them shared: both friends talk about it.
    acts = rng.sample(list(ACTIVITIES), 7)
    trips, books = rng.sample(TRIPS, 6), rng.sample(BOOKS, 4)
    pets, jobs, cities, family = (
        rng.sample(list(PETS), 4),
        rng.sample(JOBS, 4),
        rng.sample(CITIES, 2),
        rng.sample(FAMILY, 6),
    )
    for i, person in enumerate((p, q)):
        mine = acts[3 * i : 3 * i + 3] + [acts[6]]
        _activities(b, person, mine, sessions)
        _life(b, person, {"trips": trips[3 * i : 3 * i + 3], "books": books[2 * i : 2 * i + 2],
                          "pets": pets[2 * i : 2 * i + 2], "jobs": jobs[2 * i : 2 * i + 2], "city": cities[i],
                          "family": family[3 * i : 3 * i + 3]}, sessions)
    b.render()
    return b.conv


def generate(seed: int = 12, conversations: int = 6, sessions: int = 24) -> list[Conversation]:
    """``conversations`` independent conversations of ``sessions`` sessions each."""
    rng = random.Random(seed)
    return [generate_conversation(rng, sessions) for _ in range(conversations)]


if __name__ == "__main__":
    for conv in generate(conversations=1, sessions=6):
        for turn in conv.turns:
            print(turn.dia_id, turn.date, f"{turn.speaker}:", turn.text)
        for question in conv.questions:
            print(question.kind, question.text, question.evidence, question.answer)
