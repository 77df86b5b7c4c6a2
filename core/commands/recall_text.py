"""How ``agentos recall`` prints results, their explanations and a listed time window, and how
``agentos forget`` lists what it forgets."""

from __future__ import annotations

from typing import Any


def hits_text(found: list[dict[str, Any]]) -> str:
    """Ranked results, best first: score, kind, id, date and source, then the text (and why, if explained)."""
    return "\n".join(_hit(hit) for hit in found) or "(nothing found)"


def window_text(found: list[dict[str, Any]]) -> str:
    """A listed time window, newest first: date and time, kind, id and source, then the text."""
    return "\n".join(
        f"{hit['occurred_at'][:16].replace('T', ' ')} {hit['kind']} {hit['id']} ({hit['source']})\n"
        f"  {hit['content']}{_superseded(hit)}{_also(hit)}"
        for hit in found) or "(nothing happened in that window)"


def explained_text(found: dict[str, Any]) -> str:
    """Explained results, then what was left out and why."""
    return (
        hits_text(found["results"])
        + "\n"
        + left_out_text(found["left_out"])
        + widened_text(found.get("spread"))
    )


def widened_text(spread: dict[str, Any] | None) -> str:
    """How the search of a question whose answer is spread out was widened ('' for any other question)."""
    if not spread:
        return ""
    return ("\nwidened: a question that counts, adds up, compares or orders (\"" + spread["cue"]
            + "\"): every result "
            f"its best one brings along is kept (relative floor {spread['relative_floor']:g})")


def left_out_text(left_out: dict[str, Any]) -> str:
    """One line a reason: how many were left out, and examples."""
    if not left_out:
        return "left out: nothing"
    lines = ["left out:"]
    for reason, part in left_out.items():
        shown = "; ".join(_example(e) for e in part["examples"])
        more = (
            f" (+{part['count'] - len(part['examples'])} more)"
            if part["count"] > len(part["examples"])
            else ""
        )
        lines.append(f"  {part['count']} {reason.replace('_', ' ')}: {shown}{more}")
    return "\n".join(lines)


def _hit(hit: dict[str, Any]) -> str:
    text = (f"{hit['score']:.2f} {hit['kind']} {hit['id']} ({hit['occurred_at'][:10]}, {hit['source']}"
            f"{', by ' + hit['author'] if hit.get('space') else ''})\n  "
            f"{hit['content']}{_superseded(hit)}{_also(hit)}")
    return text + ("\n  " + why_text(hit["why"]) if "why" in hit else "")


def _superseded(hit: dict[str, Any]) -> str:
    later = hit.get("superseded_by")
    return f"\n  (superseded by {later['id']}, {later['occurred_at'][:10]})" if later else ""


def _also(hit: dict[str, Any]) -> str:
    """The other records of the same thing folded into ``hit``."""
    return f"\n  (also recorded as {', '.join(hit['also'])})" if hit.get("also") else ""


def why_text(why: dict[str, Any]) -> str:
    """One line: the words matched, each feature, the kind, the factors applied after, and the score."""
    words = ", ".join(why["words"]) or "none"
    if why.get("common_words"):
        words += f" (too common to weigh: {', '.join(why['common_words'])})"
    vector = "not among the nearest" if why["vector"] is None else f"{why['vector']:.2f}"
    if why["vector_search"] != "ran":
        vector = why["vector_search"]
    parts = [f"words: {words}", f"word match {why['word_score']:.2f}", f"vector {vector}"]
    parts += [f"{name} {value:.2f}" for name,
              value in why["features"].items() if name not in ("vector", "words")]
    parts.append(f"kind {why['kind']}" + (f" (+{why['kind_bonus']:g})" if why["kind_bonus"] else ""))
    if why["recency"] is not None:
        parts.append(f"recency ×{why['recency']:.2f}")
    if why["superseded_by"]:
        parts.append("superseded")
    line = "why: " + " · ".join(parts) + f" → {why['score']:.2f}"
    if why.get("extracted"):
        line += f"\n  {why['extracted']}"
    if why.get("learned"):
        line += "\n  learned from it: " + "; ".join(why["learned"])
    return line


def _example(example: dict[str, Any]) -> str:
    shown = example["id"] + (f" {example['score']:.2f}" if "score" in example else "")
    if "repeats" in example:
        shown += f" repeats {example['repeats']}"
    if "superseded_by" in example:
        shown += f" superseded by {example['superseded_by']}"
    return shown + (f" \"{example['content']}\"" if "content" in example else "")


_HEADERS = {"asking": "{n} will be forgotten:", "dry run": "{n} would be forgotten (dry run: nothing is):",
            "forgot": "forgot {n}:", "confirmed": "forgot {n}"}


def forgotten_text(found: Any, state: str) -> str:
    """What a forget takes (``found``: a ``Forgotten``), one thing a line with why it was taken and its other
    records; ``state``: asking, dry run, forgot (listed), confirmed (just listed: the count only) or none."""
    if state == "none" or not found:
        return "nothing to forget"
    count = f"{len(found)} memor{'y' if len(found) == 1 else 'ies'}"
    lines = [_HEADERS[state].format(n=count)]
    if state != "confirmed":
        lines += [_forget_line(entry) for entry in found.matched]
    if found.more:
        lines.append(f"({found.more} more match: raise --limit to take them too, or narrow the query)")
    return "\n".join(lines)


def _forget_line(entry: dict[str, Any]) -> str:
    why = entry["why"]
    text = _around(" ".join(entry["content"].split()), why.get("words", []), 90)
    reasons = []
    if "words" in why:
        reasons.append(f"says: {', '.join(why['words'])}")
    if "meaning" in why:
        reasons.append(f"meaning {why['meaning']:.2f}")
    if "id" in why:
        reasons.append("asked by id")
    if "before" in why:
        reasons.append(f"before {why['before'][:10]}")
    also = f" · also recorded as {', '.join(entry['also'])}" if entry["also"] else ""
    when = entry["occurred_at"][:16].replace("T", " ")
    return f"  {entry['id']}  {when}  {text}\n      {' · '.join(reasons)}{also}"


def _around(text: str, words: list[str], width: int) -> str:
    """``text`` cut to ``width`` characters around the first of ``words`` it says (its start if none)."""
    if len(text) <= width:
        return text
    lower = text.lower()
    found = [i for w in words for i in (lower.find(w.lower()), lower.find(w.lower()[:5])) if i >= 0]
    start = max(0, min(found, default=0) - width // 3)
    if start == 0:
        return text[:width - 1] + "…"
    end = start + width - 2
    return "…" + text[start:end] + ("…" if end < len(text) else "")
