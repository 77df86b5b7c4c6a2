"""The learned profile: who the user is and what they prefer, in a few lines drawn from the current facts.

Each line is one fact about the user (subject ``user``, or an explicit fact of category ``personal`` or
``preference``) and names it (``[user.city]``), so every line can be explained and corrected; it is
rendered from the facts as they are, never written by a model, so it cannot say what no fact says.
Personal facts come first, then preferences, then the rest, the newest first within each; at most
``reflect.profile_lines`` lines. Reflection keeps it current by keeping the facts current.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from core.memory.storage import Fact
from core.memory.storage.extracted import key_words

ORDER = {"personal": 0, "preference": 1, "general": 2, "config": 3}
MAX_VALUE_CHARS = 120


@dataclass(frozen=True)
class ProfileLine:
    """One line of the profile and the fact it comes from."""

    text: str
    key: str


def about_user(fact: Fact) -> bool:
    """Whether ``fact`` says something about the user (a secret never goes in the profile)."""
    if fact.category == "secret":
        return False
    return fact.key.startswith("user.") or ("." not in fact.key and fact.category in ("personal",
                                                                                      "preference"))


def profile(facts: Sequence[Fact], limit: int) -> list[ProfileLine]:
    """The profile drawn from ``facts`` (see the module docstring)."""
    chosen = sorted((f for f in facts if about_user(f)), key=lambda f: f.updated_at, reverse=True)
    chosen.sort(key=lambda f: ORDER.get(f.category, len(ORDER)))
    lines = []
    for fact in chosen[:max(0, limit)]:
        what = key_words(fact.key.removeprefix("user."))
        value = " ".join(fact.value.split())
        value = value if len(value) <= MAX_VALUE_CHARS else value[:MAX_VALUE_CHARS - 1] + "…"
        lines.append(ProfileLine(f"- {what}: {value} [{' '.join(fact.key.split())}]", fact.key))
    return lines
