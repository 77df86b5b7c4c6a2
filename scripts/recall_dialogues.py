"""Generate long multi-session conversations between two people, with questions and their evidence.

The recall-quality benchmark (``bench_recall_quality.py``) stores every turn
with ``store_memory`` and asks every question with ``recall_memory``. The data
is made to be hard in the ways real chat memory is hard:

- facts come up in passing, in the middle of small talk, phrased in one of
  several ways, often as the answer to the other person's question;
- questions are paraphrased and share few words with their evidence ("What
  is the name of Ada's dog?" vs. "we finally adopted a pup, Biscuit");
- both people talk about the same kinds of things (two pets, two jobs, two
  trips), so the speaker matters;
- events are told relative to the session date ("yesterday", "last
  weekend"): temporal questions are answered by the session's date;
- some values change later (a new job, a move): the question about the
  current value has the correction as its evidence;
- multi-hop questions need turns from two or more sessions, open-domain
  questions need an inference from what was said (a hobby, a taste).

Everything comes from one ``random.Random(seed)``: the same seed gives the
same data. Nothing is downloaded.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

NAMES = ["Caroline", "Melanie", "Jon", "Gina", "Maria", "John", "Evan", "Sam", "Nate", "Joanna",
         "Audrey", "Andrew", "Tim", "Deborah", "Calvin", "Dave", "James", "Jolene", "Priya", "Omar"]


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


@dataclass
class Conversation:
    """A long conversation: turns in order and the questions about it."""

    speakers: tuple[str, str]
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


# -- what people have and do ---------------------------------------------------------------------

PETS = {  # kind: (words people use for it, names)
    "dog": (["pup", "puppy", "doggo", "little guy from the shelter"], ["Biscuit", "Luna", "Max", "Pepper", "Rocky"]),
    "cat": (["kitten", "kitty", "furball", "tabby"], ["Oliver", "Mochi", "Cleo", "Simba", "Nala"]),
    "parrot": (["bird", "feathered friend", "little parakeet"], ["Kiwi", "Sunny", "Rio", "Mango"]),
    "rabbit": (["bunny", "little hopper", "floppy-eared friend"], ["Clover", "Thumper", "Hazel"]),
}
JOBS = [("nurse", "St. Mary's hospital", "looking after patients on the night shift"),
        ("software developer", "a fintech startup", "writing code for a payments app"),
        ("teacher", "Lincoln Elementary", "teaching third graders"),
        ("chef", "a small Italian bistro", "running the kitchen"),
        ("graphic designer", "an ad agency downtown", "designing logos and posters"),
        ("accountant", "a tax firm", "crunching numbers for clients"),
        ("firefighter", "the county fire department", "answering emergency calls"),
        ("librarian", "the public library", "helping people find books")]
CITIES = ["Portland", "Denver", "Austin", "Boston", "Seattle", "Chicago", "Nashville", "San Diego", "Atlanta"]
HOBBIES = {  # hobby: (how it comes up, open-domain question, answer)
    "painting": (["I spent all Sunday with my watercolors, finally finished the lake scene",
                  "my canvas of the sunset over the bay is drying in the hallway",
                  "I signed up for an acrylics workshop, brushes and everything"],
                 "Would {p} enjoy a visit to an art museum?", "yes, {p} paints"),
    "hiking": (["we did a twelve mile trail up to the ridge, my legs are dead",
                "I bought new boots for the mountain trails this summer",
                "nothing beats the view from the summit after a long climb"],
               "Would {p} like a trip to a national park?", "yes, {p} loves hiking"),
    "baking": (["I made sourdough from scratch, the starter took a week",
                "my cinnamon rolls came out of the oven perfect this morning",
                "I've been experimenting with croissants, so much butter"],
               "Is {p} likely to enjoy watching a pastry competition show?", "yes, {p} bakes"),
    "guitar": (["I finally nailed the F chord on my acoustic",
                "my fingers hurt from practicing chords for two hours",
                "I learned to strum the intro of Wonderwall"],
               "Would {p} be interested in going to a live music open mic?", "yes, {p} plays guitar"),
    "gardening": (["the tomatoes in my backyard beds are finally turning red",
                   "I planted tulip bulbs along the fence",
                   "I spent the morning weeding the vegetable patch"],
                  "Would {p} appreciate a gift card to a plant nursery?", "yes, {p} gardens"),
    "birdwatching": (["I spotted a red-tailed hawk with my binoculars at dawn",
                      "I keep a notebook of every warbler I see at the marsh",
                      "we got up at 5am to catch the owls by the creek"],
                     "Would {p} enjoy a guided nature walk at a wildlife refuge?", "yes, {p} watches birds"),
    "chess": (["I won three games at the club tournament, the last one with a queen sacrifice",
               "I've been studying openings, the Sicilian is my new favorite",
               "my rating online went up a hundred points"],
              "Would {p} be interested in a strategy board game night?", "yes, {p} plays chess"),
    "swimming": (["I did forty laps at the pool before work",
                  "I'm training for an open water race in the lake",
                  "my freestyle is finally getting smoother"],
                 "Would {p} enjoy a beach vacation?", "yes, {p} swims"),
}
TRIPS = [("Japan", "the temples in Kyoto"), ("Italy", "the canals of Venice"), ("Mexico", "the pyramids at Teotihuacan"),
         ("Iceland", "the waterfalls and black sand beaches"), ("Peru", "the hike to Machu Picchu"),
         ("Canada", "the lakes in Banff"), ("Greece", "the white houses of Santorini"),
         ("Morocco", "the markets of Marrakech"), ("Norway", "the fjords")]
EVENTS = [  # (what happened, how it is told, when-question)
    ("ran a charity 5K", ["I ran a charity 5K {rel}, raised money for the children's hospital",
                          "{rel} I did a 5K fun run for charity, crossed the line in 31 minutes"],
     "When did {p} run the charity race?"),
    ("went to a support group", ["I went to a support group meeting {rel}, it was so powerful to share",
                                 "{rel} I finally joined the community support circle, everyone was so kind"],
     "When did {p} attend the support group?"),
    ("took a pottery class", ["I took my first pottery class {rel}, my bowl came out lopsided",
                              "{rel} I tried the pottery wheel at the studio downtown"],
     "When did {p} try pottery?"),
    ("had a job interview", ["I had an interview for a new position {rel}, fingers crossed",
                             "{rel} I went in for an interview and they asked about my five year plan"],
     "When did {p} have the interview?"),
    ("went camping", ["we went camping by the river {rel}, the kids roasted marshmallows",
                      "{rel} we pitched a tent in the woods and slept under the stars"],
     "When did {p} go camping?"),
    ("attended a concert", ["I saw my favorite band live {rel}, I lost my voice from singing along",
                            "{rel} we went to an outdoor concert and danced all night"],
     "When did {p} go to the concert?"),
    ("volunteered at a shelter", ["I volunteered at the animal shelter {rel}, walked a dozen dogs",
                                  "{rel} I spent the day helping out at the homeless shelter kitchen"],
     "When did {p} volunteer?"),
    ("got a tattoo", ["I got a tattoo {rel}, a little sunflower on my wrist",
                      "{rel} I finally got inked, a small compass on my shoulder"],
     "When did {p} get the tattoo?"),
    ("visited their parents", ["I drove up to see my mom and dad {rel}, we had a big family dinner",
                               "{rel} I spent the weekend at my parents' place"],
     "When did {p} visit family?"),
    ("hosted a dinner party", ["I hosted a dinner party {rel}, cooked lasagna for ten people",
                               "{rel} we had friends over for a big dinner at my place"],
     "When did {p} host friends for dinner?"),
]
RELATIVE = [("yesterday", 1), ("last weekend", 7), ("last week", 7), ("two days ago", 2), ("last Friday", 3)]
BOOKS = ["Becoming", "The Midnight Library", "Dune", "Educated", "Circe", "The Alchemist", "Atomic Habits", "Where the Crawdads Sing"]

OPENERS = ["Hey {o}! How have you been?", "Hi {o}, long time no talk!", "Good to hear from you, {o}.",
           "Hey! Sorry I've been quiet, {o}, life got hectic.", "Morning {o}! Got a minute to catch up?"]
SMALL_TALK = [
              "That sounds amazing!", "Wow, I'm so happy for you.", "Haha, that's hilarious.",
              "Oh no, I'm sorry to hear that.", "That's so cool, tell me more!", "I totally get that.",
              "Thanks, {o}! That means a lot.", "Same here, it's been a busy few weeks.", "Nice! Keep me posted.",
              "Honestly I needed this chat today.", "Ugh, work has been crazy lately.", "I know right?",
              "Take care, talk soon!", "Bye! Catch up again soon.", "You always know what to say.",
              "The weather has been so nice lately.", "I've been trying to get more sleep."]
DISTRACTORS = ["My neighbor's dog barked all night again", "My sister works at a hospital too, she's always tired",
               "I want to visit Japan someday, it's on my list", "Moving is the worst, I hate packing boxes",
               "I watched a documentary about sharks last night", "My car broke down on the highway",
               "I started a new podcast about history", "My cousin just got engaged", "I burned the pasta, oops",
               "We're thinking about repainting the living room", "My boss wants a report by Friday",
               "The traffic downtown was terrible this morning", "I finally cleaned out the garage",
               "My phone screen cracked when I dropped it", "I've been drinking way too much coffee",
               "There's a new bakery near my office", "My friend's band is playing on Saturday",
               "I need a vacation, seriously", "I found an old photo album at my parents' house",
               "We adopted a new routine of evening walks", "I signed up for a gym membership, we'll see",
               "My kid's school has a science fair next week", "I tried yoga once and fell over",
               "The library near me is closing for renovations", "I'm thinking of learning Spanish"]
REPLIES = {"pet": "Aww, I love animals! Send me pictures!", "job": "That sounds like a demanding job, you're a hero.",
           "move": "A new place! How's the neighborhood?", "hobby": "You're so talented, I could never do that.",
           "trip": "I'm so jealous, I've always wanted to travel more.",
           "event": "That sounds like a great way to spend the day.", "book": "I need a good read, thanks for the tip."}
PROMPTS = {"pet": "Do you have any pets these days?", "job": "How's work going?", "move": "Are you still in the same place?",
           "hobby": "What have you been doing for fun?", "trip": "Been anywhere nice lately?",
           "event": "What have you been up to?", "book": "Reading anything good?"}


class _Builder:
    """State of one conversation under construction."""

    def __init__(self, rng: random.Random, speakers: tuple[str, str], sessions: int, start: datetime) -> None:
        self.rng = rng
        self.conv = Conversation(speakers)
        self.dates = []
        day = start
        for _ in range(sessions):
            day += timedelta(days=rng.randint(3, 21), minutes=rng.randint(0, 600))
            self.dates.append(day)
        self.plan: list[list[tuple[str, str, object]]] = [[] for _ in range(sessions)]

    def at(self, session: int, speaker: str, topic: str, payload: object) -> None:
        """Mention something in ``session`` (0-based), told by ``speaker``."""
        self.plan[session].append((speaker, topic, payload))

    def render(self) -> dict[tuple[int, str, object], str]:
        """Write every session's turns; return the dia_id of each planned mention."""
        placed: dict[int, str] = {}
        for s, mentions in enumerate(self.plan):
            self.rng.shuffle(mentions)
            date = _human_date(self.dates[s])
            turns: list[tuple[str, str]] = []
            a, b = self.conv.speakers if s % 2 == 0 else self.conv.speakers[::-1]
            turns.append((a, self._small(a, b, 0)))
            turns.append((b, self._small(b, a, self.rng.randint(1, 12))))
            for speaker, topic, payload in mentions:
                other = b if speaker == a else a
                if self.rng.random() < 0.55 and topic in PROMPTS:
                    turns.append((other, PROMPTS[topic]))
                turns.append((speaker, payload["text"]))  # type: ignore[index]
                placed[id(payload)] = len(turns)
                reply = REPLIES[topic] if self.rng.random() < 0.6 else self._small(other, speaker, self.rng.randint(3, 19))
                turns.append((other, reply))
                for _ in range(self.rng.randint(1, 3)):
                    who = self.rng.choice((a, b))
                    chatter = (self.rng.choice(DISTRACTORS) if self.rng.random() < 0.5
                               else self._small(who, b if who == a else a, self.rng.randint(3, 19)))
                    turns.append((who, chatter))
            turns.append((a, self._small(a, b, self.rng.choice((15, 16)))))
            for n, (speaker, text) in enumerate(turns, start=1):
                self.conv.turns.append(Turn(f"D{s + 1}:{n}", speaker, text, s + 1, date))
            for speaker, topic, payload in mentions:
                payload["dia_id"] = f"D{s + 1}:{placed[id(payload)]}"  # type: ignore[index]
        return {}

    def _small(self, speaker: str, other: str, index: int) -> str:
        if index == 0:
            return self.rng.choice(OPENERS).format(o=other)
        line = self.rng.choice(SMALL_TALK)
        if self.rng.random() < 0.5:
            line = f"{line} {self.rng.choice(SMALL_TALK)}"
        return line.format(o=other)


def _human_date(moment: datetime) -> str:
    hour = moment.hour % 12 or 12
    return f"{hour}:{moment.minute:02d} {'am' if moment.hour < 12 else 'pm'} on {moment.day} {moment:%B}, {moment.year}"


def _day(moment: datetime) -> str:
    return f"{moment.day} {moment:%B} {moment.year}"


def generate_conversation(rng: random.Random, sessions: int = 20) -> Conversation:
    """One conversation with its questions."""
    p, q = rng.sample(NAMES, 2)
    start = datetime(2022 + rng.randint(0, 1), rng.randint(1, 12), rng.randint(1, 28), rng.randint(8, 21), rng.randint(0, 59))
    b = _Builder(rng, (p, q), sessions, start)
    facts: list[tuple[str, dict]] = []  # (kind of question, payload)

    pet_kinds = rng.sample(list(PETS), 2)
    jobs = rng.sample(JOBS, 4)
    cities = rng.sample(CITIES, 4)
    hobbies = rng.sample(list(HOBBIES), 4)
    trips = rng.sample(TRIPS, 6)
    events = rng.sample(EVENTS, 8)
    books = rng.sample(BOOKS, 4)
    for i, person in enumerate((p, q)):
        # A pet, mentioned once by a nickname, its name in passing.
        kind = pet_kinds[i]
        words, names = PETS[kind]
        name = rng.choice(names)
        word = rng.choice(words)
        pet = {"text": rng.choice([f"We finally adopted a {word}! We named her {name}.",
                                   f"{name} chewed up my slippers again, this {word} is a menace",
                                   f"Meet {name}, the newest member of the family, a {word} from the rescue"])}
        b.at(rng.randrange(0, sessions // 2), person, "pet", pet)
        asked = word.split()[-1] if rng.random() < 0.5 else kind
        b.conv.questions.append(Question(f"What is the name of {person}'s {asked}?", "single-hop", [], name))
        facts.append(("pet", pet))
        # A job, changed later: the correction is the evidence for "now".
        job1, job2 = jobs[2 * i], jobs[2 * i + 1]
        first = {"text": f"I've been working as a {job1[0]} at {job1[1]}, {job1[2]}, it keeps me busy"}
        later = {"text": rng.choice([f"Big news, I quit my old job! I'm a {job2[0]} now at {job2[1]}",
                                     f"I started a new position last month, {job2[2]} at {job2[1]}"])}
        s1 = rng.randrange(0, sessions // 3)
        s2 = rng.randrange(sessions // 2, sessions)
        b.at(s1, person, "job", first)
        b.at(s2, person, "job", later)
        b.conv.questions.append(Question(rng.choice([f"What does {person} do for a living these days?",
                                                     f"What is {person}'s new job?"]), "single-hop", [], job2[0]))
        b.conv.questions.append(Question(f"What jobs has {person} had?", "multi-hop", [], f"{job1[0]}, {job2[0]}"))
        facts.extend([("job1", first), ("job2", later)])
        # A move to a new city, told relative to the session date.
        rel, days = rng.choice(RELATIVE[:3])
        move_session = rng.randrange(sessions // 3, sessions - 2)
        move = {"text": rng.choice([f"We moved to {cities[2 * i]} {rel}, boxes everywhere",
                                    f"{rel.capitalize()} we finally unpacked in our new apartment in {cities[2 * i]}"])}
        b.at(move_session, person, "move", move)
        b.conv.questions.append(Question(rng.choice([f"Which city did {person} relocate to?",
                                                     f"Where is {person}'s new apartment?"]), "single-hop", [], cities[2 * i]))
        b.conv.questions.append(Question(rng.choice([f"When did {person} move house?", f"When did {person} move?"]),
                                         "temporal", [],
                                         _day(b.dates[move_session] - timedelta(days=days))))
        facts.append(("move", move))
        # Two hobbies, each mentioned in two or three sessions.
        for hobby in hobbies[2 * i : 2 * i + 2]:
            lines, question, answer = HOBBIES[hobby]
            mentions = []
            for text in rng.sample(lines, rng.randint(2, 3)):
                mention = {"text": text}
                b.at(rng.randrange(0, sessions), person, "hobby", mention)
                mentions.append(mention)
            b.conv.questions.append(Question(question.format(p=person), "open-domain", [], answer.format(p=person)))
            facts.append(("hobby", {"group": mentions}))
        b.conv.questions.append(Question(f"What hobbies does {person} have?", "multi-hop", [],
                                         ", ".join(hobbies[2 * i : 2 * i + 2])))
        facts.append(("hobbies", {}))
        # Three trips in different sessions.
        trip_mentions = []
        for country, sight in trips[3 * i : 3 * i + 3]:
            mention = {"text": rng.choice([f"Just got back from {country}! {sight[0].upper() + sight[1:]} were unreal",
                                           f"The highlight of our vacation was {sight}, I'd go back tomorrow",
                                           f"I still can't believe we saw {sight} in person"])}
            b.at(rng.randrange(0, sessions), person, "trip", mention)
            trip_mentions.append(mention)
        b.conv.questions.append(Question(rng.choice([f"Which countries has {person} traveled to?",
                                                     f"Where did {person} go on vacation?"]), "multi-hop", [],
                                         ", ".join(c for c, _ in trips[3 * i : 3 * i + 3])))
        facts.append(("trips", {"group": trip_mentions}))
        # Dated events: "when did..." questions.
        for what, tellings, question in events[4 * i : 4 * i + 4]:
            rel, days = rng.choice(RELATIVE)
            session = rng.randrange(0, sessions)
            event = {"text": rng.choice(tellings).format(rel=rel)}
            event["text"] = event["text"][0].upper() + event["text"][1:]
            b.at(session, person, "event", event)
            b.conv.questions.append(Question(question.format(p=person), "temporal", [],
                                             _day(b.dates[session] - timedelta(days=days))))
            facts.append(("event", event))
        # A book, recommended to the other person later (a cross-session multi-hop).
        book = books[2 * i]
        reading = {"text": f"I'm halfway through '{book}', I can't put it down"}
        recommend = {"text": f"You should borrow '{book}' from me, I think you'd love it"}
        sr = rng.randrange(0, sessions // 2)
        b.at(sr, person, "book", reading)
        b.at(rng.randrange(sr + 1, sessions), person, "book", recommend)
        b.conv.questions.append(Question(f"What novel did {person} read and later lend out?", "multi-hop", [], book))
        facts.append(("book", {"group": [reading, recommend]}))
    b.render()
    _attach_evidence(b.conv, facts)
    return b.conv


def _attach_evidence(conv: Conversation, facts: list[tuple[str, dict]]) -> None:
    """Fill each question's evidence from the dia_ids the payloads were placed at, in question order."""
    per_person = len(conv.questions) // 2
    for i, person in enumerate(conv.speakers):
        questions = conv.questions[i * per_person : (i + 1) * per_person]
        mine = facts[i * len(facts) // 2 : (i + 1) * len(facts) // 2]
        hobby_groups = [f[1]["group"] for f in mine if f[0] == "hobby"]
        by_kind = {kind: payload for kind, payload in mine if kind not in ("hobby", "event")}
        events = [payload for kind, payload in mine if kind == "event"]
        temporal = [q for q in questions if q.kind == "temporal"]
        open_domain = [q for q in questions if q.kind == "open-domain"]
        for question in questions:
            if question.text.startswith("What is the name"):
                question.evidence = [by_kind["pet"]["dia_id"]]
            elif "for a living" in question.text or "new job" in question.text:
                question.evidence = [by_kind["job2"]["dia_id"]]
            elif question.text.startswith("What jobs"):
                question.evidence = [by_kind["job1"]["dia_id"], by_kind["job2"]["dia_id"]]
            elif "relocate" in question.text or "new apartment" in question.text:
                question.evidence = [by_kind["move"]["dia_id"]]
            elif question.text.startswith("What hobbies"):
                question.evidence = [m["dia_id"] for group in hobby_groups for m in group]
            elif question.text.startswith("Which countries") or "on vacation" in question.text:
                question.evidence = [m["dia_id"] for m in by_kind["trips"]["group"]]
            elif question.text.startswith("What novel"):
                question.evidence = [m["dia_id"] for m in by_kind["book"]["group"]]
        temporal[0].evidence = [by_kind["move"]["dia_id"]]
        for question, event in zip(temporal[1:], events):
            question.evidence = [event["dia_id"]]
        for question, group in zip(open_domain, hobby_groups):
            question.evidence = [m["dia_id"] for m in group]


def generate(seed: int = 12, conversations: int = 4, sessions: int = 20) -> list[Conversation]:
    """``conversations`` independent conversations of ``sessions`` sessions each."""
    rng = random.Random(seed)
    return [generate_conversation(rng, sessions) for _ in range(conversations)]


if __name__ == "__main__":
    for conv in generate(conversations=1, sessions=8):
        for turn in conv.turns:
            print(turn.dia_id, turn.date, f"{turn.speaker}:", turn.text)
        for question in conv.questions:
            print(question.kind, question.text, question.evidence, question.answer)
