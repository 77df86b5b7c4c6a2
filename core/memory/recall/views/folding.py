"""Folding: one hit for what was recorded more than once, which knows its other records.

The same words are often kept in several places: the engine records a request as a RUN_START entry (its
objective), a USER_FEEDBACK entry and the conversation's user message, and its reply as a THOUGHT
("response: ..."), the RUN_END and the assistant message; a script may store as a note what it also
logged. Every record stays where it is (LOG.md and the conversation are the record); recall and a listed
time window show them once, as the first of them (the best ranked, or the newest), whose ``also`` lists
the others' ids.

Two memories are records of the same thing when

- their words are the same (case, spacing and the punctuation around words aside), either whole or after a
leading label
  of one word and a colon ("response: ...") is set aside; or one holds the start of the other, cut short
  (a preview, "…"), and that start is at least :data:`CUT_CHARS` characters long (a short sentence at the
  start of a longer one is something else said);
- they happened within ``within_s`` of each other (``Tuning.fold_within_s``, an hour): the same words on
  another day, or asked again later, are another memory;
- they are not the words of two different people: when both name who said them (a note's speaker, a
  message's role) those agree. A LOG.md entry names no one: its type says what kind of record it is.

Near-duplicates fold too, as recall always collapsed them: the same speaker and session with
``near_jaccard`` of their words in common (within the same time).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, lru_cache
from typing import Sequence

from core.memory.recall.docs import Doc

CUT_CHARS = 200
"""A record that holds only the start of another's text is one of it when that start is this long."""
COMPARED_CHARS = 4000
"""Characters of a memory compared (a memory may hold a megabyte; one that starts as long the same is a record
of the same thing, as a record cut short is)."""
STARTS = 8
"""Words of a text's start by which records cut short are found."""
RECORD_KINDS = ("log", "log_archive")
"""Kinds whose ``speaker`` is the record's type (``user feedback``, ``thought``), not a person."""
_MARKS = string.punctuation + "…“”‘’–—«»¿¡"
"""Punctuation around a word, which comparing leaves out ("fly.io" keeps its dot; "target?" is "target")."""
_LABEL = re.compile(r"\s*\w+:\s")


@dataclass
class _Shape:
    """What folding compares of one memory."""

    words: list[str]
    forms: tuple[str, ...]
    """Its words joined by spaces, and without a leading label when it has one."""
    starts: tuple[str, ...]
    """The first :data:`STARTS` words of each form, when the memory is long enough to be found as the start of
    another record (or to hold one) and has more words; else empty."""
    at: float
    voice: str
    who: tuple[str, str]

    @cached_property
    def vocabulary(self) -> frozenset[str]:
        """Its distinct words (for near-duplicates, computed when one of the same speaker and session is
        met)."""
        return frozenset(self.words)



@dataclass
class _Group:
    head: _Shape
    members: list[int] = field(default_factory=list)
    voices: set[str] = field(default_factory=set)


def fold(docs: Sequence[Doc], within_s: float, near_jaccard: float | None, near_groups: int | None = None,
         ) -> list[list[int]]:
    """``docs`` (best or newest first) in groups of records of the same thing, as positions in ``docs``:
    each group in the order of its first record, which stands for it, the others after it in order.

    ``near_jaccard`` None: near-duplicates are not folded (only records of the same words are);
    ``near_groups``: only the first groups (the results to be shown) take near-duplicates, which spares
    comparing every pair of a long list."""
    groups: list[_Group] = []
    exact: dict[tuple[str, ...], list[_Group]] = {}
    starts: dict[tuple[str, ...], list[_Group]] = {}
    by_who: dict[tuple[str, str], list[_Group]] = {}
    for position, doc in enumerate(docs):
        shape = _shape(doc)
        group = _find(shape, exact, starts, by_who, within_s, near_jaccard)
        if group is None:
            group = _Group(shape)
            groups.append(group)
            for form in shape.forms:
                exact.setdefault(form, []).append(group)
            for start in shape.starts:
                starts.setdefault(start, []).append(group)
            if near_jaccard is not None and (near_groups is None or len(groups) <= near_groups):
                by_who.setdefault(shape.who, []).append(group)
        group.members.append(position)
        if shape.voice:
            group.voices.add(shape.voice)
    return [g.members for g in groups]


def _find(shape: _Shape, exact: dict, starts: dict, by_who: dict, within_s: float,
          near_jaccard: float | None) -> _Group | None:
    """The group ``shape`` is a record of, if any."""
    def fits(group: _Group) -> bool:
        return abs(group.head.at - shape.at) <= within_s and (not shape.voice
                                                              or group.voices <= {shape.voice})

    for form in shape.forms:
        for group in exact.get(form, ()):
            if fits(group):
                return group
    for form, start in zip(shape.forms, shape.starts):
        for group in starts.get(start, ()):
            if fits(group) and any(_cut_from(form, other) or _cut_from(other,
                                                                       form) for other in group.head.forms):
                return group
    for group in by_who.get(shape.who, ()):
        if fits(group) and _near(shape.vocabulary, group.head.vocabulary, near_jaccard or 0.0):
            return group
    return None


def _cut_from(part: str, whole: str) -> bool:
    """Whether ``part`` is ``whole`` cut short (its last word may be cut in the middle)."""
    head = part.rpartition(" ")[0]
    return len(part) <= len(whole) and bool(head) and (whole == head or whole.startswith(head + " "))


def _shape(doc: Doc) -> _Shape:
    text = doc.text.strip()[:COMPARED_CHARS]
    words = [w for w in (w.strip(_MARKS) for w in text.lower().split()) if w]
    full = " ".join(words) or " ".join(text.split())
    labelled = len(words) > 1 and _LABEL.match(text) is not None
    forms = (full, full.partition(" ")[2]) if labelled else (full,)
    starts = ()
    if len(text) >= CUT_CHARS and len(words) > STARTS + labelled:
        starts = (" ".join(words[:STARTS]), " ".join(words[1:STARTS + 1]))[:len(forms)]
    voice = "" if doc.kind in RECORD_KINDS else doc.speaker
    at = _seconds(doc.occurred_at)
    return _Shape(words, forms, starts, at, voice, (doc.speaker, doc.thread))


@lru_cache(maxsize=4096)
def _seconds(stamp: str) -> float:
    """A stored UTC time as seconds (memories of one session share theirs)."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _near(a: frozenset[str], b: frozenset[str], share: float) -> bool:
    """Whether ``a`` and ``b`` have ``share`` of their words in common (Jaccard); sets of unlike sizes never
    do, which spares most intersections."""
    small, large = sorted((len(a), len(b)))
    if small < share * large:
        return False
    return not large or len(a & b) >= share * len(a | b)
