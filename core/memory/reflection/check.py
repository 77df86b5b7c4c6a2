"""Checking a reply against the entries it was given: nothing learned from thin air, every date from the
entry.

Whatever the model says, a learned memory is kept only if

- it cites entries of the batch (numbers it was shown); a wrong or missing number is repaired when the
  value's words are in exactly the entries that would then be cited, never guessed otherwise;
- every word of its value (of an event's description, of a contradiction's statement) appears in the
  entries it cites (case and common endings aside: "moved" is "move", "Porto" is "porto"): a value the
  model made up is **rejected** and counted, and the batch is asked again;
- a fact has a subject and an attribute that make a key (``user.deploy_target``), and its value is not a
  redaction mark.

An event's date is read from the words that say when ("last Tuesday"), against the time of the entry
that says them; a date the model gives is kept only if it is not after that entry and is not the day of
the extraction itself for an entry said before it (the "today" a model fills in); with none, the date a
single relative phrase of the entry names, else the entry's own day.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, Sequence

from core.errors import ValidationError
from core.memory.recall.docs import STOP_WORDS
from core.memory.recall.when import parse_time, relative_dates, time_window
from core.memory.reflection.inputs import Item
from core.memory.storage.facts import REDACTED, MAX_KEY_CHARS

if TYPE_CHECKING:
    from core.memory.reflection.reply import ReflectReply

_WORD = re.compile(r"[^\W_]+")
_POSSESSIVE = re.compile(r"['’]s\b")
USER = {"user", "i", "me", "my", "myself", "the user", "you", "the person", "person"}
"""Subjects that mean the person the assistant talks to."""
GENERIC = STOP_WORDS | {"user", "users", "user's", "s"}
"""Words a value may hold that need not be in its entries."""
SECRET_WORDS = ("password", "passwd", "passphrase", "token", "secret", "pin", "credential", "api_key",
                "apikey")
MAX_VALUE_CHARS = 500
_DAY = re.compile(r"^\d{1,2} [A-Z][a-z]+ \d{4}$")


@dataclass(frozen=True)
class LearnedFact:
    key: str
    value: str
    category: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class LearnedEvent:
    what: str
    occurred_at: str
    """The day it happened, UTC ISO-8601."""
    basis: str
    """``stated`` (the entry says when), ``model`` (a date the model gave) or ``entry`` (the entry's own
    day)."""
    sources: tuple[str, ...]


@dataclass(frozen=True)
class LearnedContradiction:
    key: str
    statement: str
    sources: tuple[str, ...]


@dataclass
class Checked:
    """What a reply holds that may be kept, and what was rejected (with why)."""

    facts: list[LearnedFact] = field(default_factory=list)
    events: list[LearnedEvent] = field(default_factory=list)
    contradictions: list[LearnedContradiction] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    repaired: int = 0
    """Citations repaired (a wrong or missing entry number)."""

    @property
    def learned(self) -> int:
        return len(self.facts) + len(self.events) + len(self.contradictions)


def check(reply: ReflectReply, items: Sequence[Item], today: date | None = None) -> Checked:
    """What of ``reply`` may be kept, ``items`` being the batch (numbered from 1) it answers."""
    today = today or datetime.now(timezone.utc).date()
    out = Checked()
    for fact in reply.facts:
        key = slot_key(fact.subject, fact.attribute)
        value = " ".join(fact.value.split())
        sources = _cited(fact.sources, value, items, out, f"fact {key or fact.attribute!r} = {value!r}")
        if sources is None:
            continue
        if not key:
            out.rejected.append(f"fact {fact.attribute!r}: no subject and attribute to name it")
        elif not value or REDACTED in value or len(value) > MAX_VALUE_CHARS:
            out.rejected.append(f"fact {key}: {value[:40]!r} is not a value to keep")
        else:
            secret = fact.credential or any(word in key.split(".")[-1] for word in SECRET_WORDS)
            out.facts.append(LearnedFact(key, value, "secret" if secret else category_of(key), sources))
    for event in reply.events:
        what = " ".join(event.what.split())
        sources = _cited(event.sources, what, items, out, f"event {what!r}")
        if sources is not None:
            said = [i for i in items if i.id in sources]
            occurred, basis = event_day(event.when, event.date, said, today)
            out.events.append(LearnedEvent(what, occurred, basis, sources))
    for item in reply.contradictions:
        key = slot_key(item.subject, item.attribute)
        statement = " ".join(item.statement.split())
        sources = _cited(item.sources, statement, items, out, f"contradiction of {key!r}: {statement!r}")
        if sources is not None and key:
            out.contradictions.append(LearnedContradiction(key, statement, sources))
    return out


def _cited(numbers: list[int], value: str, items: Sequence[Item], out: Checked,
           what: str) -> tuple[str, ...] | None:
    """The entries a value cites, if its words are in them (repaired to the entries that hold them when the
    numbers are wrong); None, with the rejection recorded, when no entry of the batch says it."""
    words = content_words(value)
    if not words:
        out.rejected.append(f"{what}: says nothing")
        return None
    cited = [items[n - 1] for n in dict.fromkeys(numbers) if 1 <= n <= len(items)]
    if cited and not missing(words, [i.text for i in cited]):
        # an entry cited that holds none of the value's words is no source of it
        return tuple(dict.fromkeys(i.id for i in cited if len(missing(words, [i.text])) < len(words)))
    holding = [i for i in items if not missing(words, [i.text])]
    if holding:
        out.repaired += 1
        return tuple(dict.fromkeys(i.id for i in holding))
    gone = missing(words, [i.text for i in cited] or [i.text for i in items])
    out.rejected.append(f"{what}: {', '.join(sorted(gone))} not in the entries it cites"
                        f" ({', '.join(str(n) for n in numbers) or 'none'})")
    return None


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry meaning, lower case and without common endings."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in GENERIC}


def missing(words: set[str], texts: Sequence[str]) -> set[str]:
    """Those of ``words`` (see :func:`content_words`) that none of ``texts`` holds."""
    present = {_stem(w) for text in texts for w in _WORD.findall(text.lower())}
    return {w for w in words if w not in present}


def _stem(word: str) -> str:
    for ending in ("ing", "ed", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def slug(text: str) -> str:
    """``"Deploy Target"`` → ``deploy_target``, ``"dog's name"`` → ``dog_name``."""
    return "_".join(_WORD.findall(_POSSESSIVE.sub("", text.lower())))[:60]


def slot_key(subject: str, attribute: str) -> str:
    """The fact key of a slot: ``user.deploy_target``, ``sister.city`` ('' when either part says nothing)."""
    who = " ".join(subject.lower().split())
    who = "user" if who in USER or not who else slug(who)
    what = slug(attribute)
    if what.startswith(f"{who}_"):
        what = what[len(who) + 1:]
    key = f"{who}.{what}" if who and what else ""
    return key if len(key) <= MAX_KEY_CHARS else ""


def explicit_twin(key: str) -> str | None:
    """The key an explicit save of the same slot may use: ``deploy_target`` for ``user.deploy_target``."""
    subject, _, attribute = key.partition(".")
    return attribute if subject == "user" else None


def category_of(key: str) -> str:
    """A learned fact's category: ``personal`` for the user, ``general`` otherwise."""
    return "personal" if key.startswith("user.") else "general"


def event_day(when: str, given: str, said: Sequence[Item], today: date) -> tuple[str, str]:
    """``(day, basis)`` of an event cited by the entries ``said`` (see the module docstring)."""
    at = min(parse_time(item.ts) for item in said)
    texts = [item.text for item in said]
    if when.strip() and not missing(content_words(when), texts):
        day = _read_when(when, at)
        if day is not None:
            return _iso(day), "stated"
    if given.strip():
        try:
            day = parse_time(given, "date").date()
        except ValidationError:
            day = None
        if day is not None and day <= at.date() and (day != today or at.date() == today):
            return _iso(day), "model"
    days = {d for text in texts for d in relative_dates(text, at) if _DAY.match(d)}
    if len(days) == 1:
        # here: dateutil's import is paid by a pass, not at start-up
        from dateutil import parser as date_parser

        return _iso(date_parser.parse(days.pop()).date()), "stated"
    return _iso(at.date()), "entry"


def _read_when(when: str, at: datetime) -> date | None:
    """The day ``when`` ("last Tuesday", "yesterday", "on 3 May") names, said at ``at``; None if it names
    none."""
    try:
        return time_window(when, "when", "start", now=at).date()
    except ValidationError:
        pass
    from dateutil import parser as date_parser

    try:
        day = date_parser.parse(when, default=at.replace(tzinfo=None), fuzzy=True).date()
    except (ValueError, OverflowError):
        return None
    return day if day <= at.date() else day.replace(year=day.year - 1) if day.month > at.month else None


def _iso(day: date) -> str:
    return f"{day.isoformat()}T00:00:00.000Z"
