"""Finding a secret fact's value in text, however it was written, and hiding it.

The same redactor hides the values of forgotten facts from everything derived
after the forget (:func:`forgotten_values`, see :mod:`core.memory.upkeep.forgetting`).

A fact in category ``secret`` is stored only in ``user_facts``. Every text that
leaves for something derived from it (a LOG.md line, NOW.md, a summary and the
prompt that asks for it, the cold store, the provider's tables, a system
prompt) goes through a :class:`Redactor` first, and :mod:`core.memory.upkeep.scrub`
removes a value that was written before its fact was saved.

Matching is normalised, so a value is found however it was typed or re-encoded:

- Unicode NFKC on both sides (full-width letters, ligatures, non-breaking spaces);
- characters that show nothing ignored (Unicode's default-ignorable code points: zero-width spaces and
  joiners, soft hyphens, bidirectional isolates, variation selectors, tag characters);
- any run of whitespace matches any other (a NOW.md field flattened to one line);
- the value's own leading and trailing whitespace dropped (a value saved with a newline);
- case ignored;
- JSON-escaped forms matched too (raw LOG.md lines, JSON columns, LanceDB metadata).

A text with no match comes back unchanged; a text with one comes back in its
normalised form with every match replaced by ``[REDACTED]``. Values shorter than
:data:`MIN_SECRET_CHARS` once normalised are not searched for: they would match
everywhere.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

from core.errors import CorruptionError
from core.memory.files.log_format import LogEntry, decode_line, encode_entry, is_header

REDACTED = "[REDACTED]"
MIN_SECRET_CHARS = 3
_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
                        "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
"""Unicode's default-ignorable code points (DerivedCoreProperties.txt): characters that show nothing, so a
value written with them between its letters looks the same (zero-width spaces and joiners, soft hyphens,
bidirectional marks and isolates, variation selectors, tag characters)."""
# Between the words of a value inside JSON text: real whitespace or its escapes.
_JSON_SPACE = r"(?:\s|\\[nrtfb]|\\u00[aA]0|\\u20(?:2[89]|0[0-9aA])|\\u3000)+"


def normalize(text: str) -> str:
    """``text`` as matching sees it: NFKC, without invisible format characters."""
    if text.isascii():
        return text
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))


def _variants(words: list[str]) -> list[str]:
    """Regex sources for one value's words: as written, and JSON-escaped (with and without
    ``ensure_ascii``)."""
    found = [r"\s+".join(re.escape(w) for w in words)]
    for ascii_only in (False, True):
        escaped = [json.dumps(w, ensure_ascii=ascii_only)[1:-1] for w in words]
        if escaped != words:
            found.append(_JSON_SPACE.join(re.escape(w) for w in escaped))
    return found


class Redactor:
    """Replaces the values of secret facts in text and in JSON-like data (dict keys included)."""

    def __init__(self, values: Iterable[str]) -> None:
        words = sorted({tuple(normalize(v).split()) for v in values if isinstance(v, str)},
                       key=lambda w: -len(" ".join(w)))
        sources = [s for w in words if len(" ".join(w)) >= MIN_SECRET_CHARS for s in _variants(list(w))]
        self.count = len(sources)
        # The marker comes first so that an earlier redaction is never redacted again (a value like
        # "act" inside "[REDACTED]"): redacting twice gives the same text.
        self._pattern = re.compile("(" + re.escape(REDACTED) + ")|" + "|".join(sources), re.IGNORECASE) \
            if sources else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, text: str) -> str:
        """``text`` with every secret replaced (unchanged when it holds none)."""
        if self._pattern is None or not text:
            return text
        target = normalize(text)
        redacted = self._pattern.sub(lambda m: m.group(1) or REDACTED, target)
        return text if redacted == target else redacted

    def __call__(self, value: Any) -> Any:
        """``value`` redacted: a string, or the strings (and keys) inside dicts, lists and tuples."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                key = self.text(key) if isinstance(key, str) else key
                while key in out:  # two keys redacted alike stay two keys
                    key = f"{key}#"
                out[key] = self(item)
            return out
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self(v) for v in value)
        return value

    def holds(self, value: Any) -> bool:
        """True when ``value`` contains a secret."""
        return self._pattern is not None and self(value) != value

    def entries(self, entries: Sequence[LogEntry]) -> list[LogEntry]:
        """LOG.md entries with their content and metadata redacted (for a summarizer's prompt)."""
        if self._pattern is None:
            return list(entries)
        return [replace(e, content=self.text(e.content), metadata=self(e.metadata)) for e in entries]


def rewrite_lines(data: bytes, redactor: Redactor,
                  archive_shas: dict[str, str] | None = None) -> tuple[bytes, list[LogEntry]]:
    """LOG.md-format bytes with the secrets redacted in every line; return them and the entries rewritten.

    A SUMMARY entry pointing at an archive in ``archive_shas`` gets that archive's sha256 from there (an
    agent's LOG.md and archives; a space's journal has none).
    A damaged line is redacted as text (it stays damaged). Unchanged lines keep their bytes.
    """
    archive_shas = archive_shas or {}
    lines = data.split(b"\n")
    rewritten: list[LogEntry] = []
    for number, raw in enumerate(lines):
        if not raw or (number == 0 and is_header(raw)):
            continue
        try:
            entry = decode_line(raw)
        except CorruptionError:
            lines[number] = redactor.text(raw.decode("utf-8", "surrogateescape")).encode("utf-8",
                                                                                         "surrogateescape")
            continue
        meta = redactor(entry.metadata)
        archive = Path(str(meta.get("archive", ""))).stem
        if entry.type == "SUMMARY" and archive in archive_shas:
            meta = {**meta, "sha256": archive_shas[archive]}
        content = redactor.text(entry.content)
        if content != entry.content or meta != entry.metadata:
            lines[number] = encode_entry(entry.seq, entry.ts, entry.type, content, meta or None)[:-1]
            rewritten.append(LogEntry(entry.seq, entry.ts, entry.type, content, meta))
    return b"\n".join(lines), rewritten


NO_SECRETS = Redactor(())


@lru_cache(maxsize=32)
def _cached(values: tuple[str, ...]) -> Redactor:
    return Redactor(values)


def redactor_for(values: Iterable[str]) -> Redactor:
    """The redactor of these secret values (compiled once per distinct set)."""
    values = tuple(values)
    return _cached(values) if values else NO_SECRETS


def redactor_of(conn: Any, *, excluding: str | None = None, forgotten: bool = True) -> Redactor:
    """The redactor of the secret facts in a memory.db (a ``Database`` or an ``sqlite3.Connection``),
    but for the fact ``excluding`` if given.

    With ``forgotten`` (for everything derived: summaries, NOW.md, prompts, recall, indexes) it hides the
    values of forgotten facts too (:func:`forgotten_values`); records (LOG.md lines, stored messages, a
    fact's own value) are written with ``forgotten=False``: they keep what was said.
    """
    conn = getattr(conn, "conn", conn)
    rows = conn.execute("SELECT key, value FROM user_facts WHERE category = 'secret' ORDER BY key").fetchall()
    values = [row[1] for row in rows if row[0] != excluding]
    return redactor_for(values + (forgotten_values(conn) if forgotten else []))


def forgotten_values(conn: Any) -> list[str]:
    """The values of forgotten facts that no fact holds now, sorted.

    A fact saved again with a value (or with a value that contains it) makes that value live again.
    """
    conn = getattr(conn, "conn", conn)
    rows = conn.execute("SELECT DISTINCT value FROM forgotten_values").fetchall()
    if not rows:
        return []
    live = [normalize(r[0]).casefold() for r in conn.execute("SELECT value FROM user_facts").fetchall()]
    hidden = {r[0] for r in rows if not any(normalize(r[0]).strip().casefold() in value for value in live)}
    return sorted(hidden)
