"""memory.db's SQL as PostgreSQL runs it: the mechanical differences, translated once per statement.

The providers, facts and indexes write SQLite's SQL. Where PostgreSQL only
spells it differently, the statement is rewritten here (and cached), so both
databases run one code path:

- ``?`` placeholders become ``%s`` (and a literal ``%`` becomes ``%%``);
- ``INSERT OR IGNORE INTO ...`` becomes ``INSERT INTO ... ON CONFLICT DO NOTHING`` (it skips
  duplicate keys only, the one use memory.db's statements make of it);
- ``LIMIT ?`` keeps SQLite's meaning of a negative limit (no limit).

What differs in meaning (full-text search, locks, ids of new rows) is not
translated: the dialect (:mod:`core.memory.storage.dialect`) says it for each database.
"""

from __future__ import annotations

import re
from functools import lru_cache

_OR_IGNORE = re.compile(r"^\s*INSERT\s+OR\s+IGNORE\s+INTO\b", re.IGNORECASE)
_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)
_LIMIT = re.compile(r"\bLIMIT\s+%s", re.IGNORECASE)


@lru_cache(maxsize=2048)
def translate(sql: str) -> str:
    """``sql`` (SQLite's form) as PostgreSQL's form; see the module docstring."""
    text = _placeholders(sql)
    if _OR_IGNORE.match(text):
        text = _OR_IGNORE.sub("INSERT INTO", text, count=1)
        returning = _RETURNING.search(text)
        at = returning.start() if returning else len(text.rstrip().rstrip(";"))
        text = text[:at].rstrip() + " ON CONFLICT DO NOTHING " + text[at:]
    return _LIMIT.sub("LIMIT NULLIF(GREATEST(%s, -1), -1)", text)


def _placeholders(sql: str) -> str:
    """``?`` outside quotes and comments becomes ``%s``; every ``%`` becomes ``%%``."""
    out = []
    quote = ""
    index = 0
    while index < len(sql):
        char = sql[index]
        if quote:
            out.append("%%" if char == "%" else char)
            if char == quote:
                quote = ""
        elif char in ("'", '"'):
            quote = char
            out.append(char)
        elif sql.startswith("--", index):
            end = sql.find("\n", index)
            end = len(sql) if end < 0 else end
            out.append(sql[index:end].replace("%", "%%"))
            index = end
            continue
        elif char == "?":
            out.append("%s")
        elif char == "%":
            out.append("%%")
        else:
            out.append(char)
        index += 1
    return "".join(out)
