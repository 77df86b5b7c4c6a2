"""How ``agentos recall`` prints results, their explanations and a listed time window."""

from __future__ import annotations

from typing import Any


def hits_text(found: list[dict[str, Any]]) -> str:
    """Ranked results, best first: score, kind, id, date and source, then the text (and why, if explained)."""
    return "\n".join(_hit(hit) for hit in found) or "(nothing found)"


def window_text(found: list[dict[str, Any]]) -> str:
    """A listed time window, newest first: date and time, kind, id and source, then the text."""
    return "\n".join(
        f"{hit['occurred_at'][:16].replace('T', ' ')} {hit['kind']} {hit['id']} ({hit['source']})\n"
        f"  {hit['content']}{_superseded(hit)}" for hit in found) or "(nothing happened in that window)"


def explained_text(found: dict[str, Any]) -> str:
    """Explained results, then what was left out and why."""
    return hits_text(found["results"]) + "\n" + left_out_text(found["left_out"])


def left_out_text(left_out: dict[str, Any]) -> str:
    """One line a reason: how many were left out, and examples."""
    if not left_out:
        return "left out: nothing"
    lines = ["left out:"]
    for reason, part in left_out.items():
        shown = "; ".join(_example(e) for e in part["examples"])
        more = f" (+{part['count'] - len(part['examples'])} more)" if part["count"] > len(part["examples"]) else ""
        lines.append(f"  {part['count']} {reason.replace('_', ' ')}: {shown}{more}")
    return "\n".join(lines)


def _hit(hit: dict[str, Any]) -> str:
    text = (f"{hit['score']:.2f} {hit['kind']} {hit['id']} ({hit['occurred_at'][:10]}, {hit['source']}"
            f"{', by ' + hit['author'] if hit.get('space') else ''})\n  {hit['content']}{_superseded(hit)}")
    return text + ("\n  " + why_text(hit["why"]) if "why" in hit else "")


def _superseded(hit: dict[str, Any]) -> str:
    later = hit.get("superseded_by")
    return f"\n  (superseded by {later['id']}, {later['occurred_at'][:10]})" if later else ""


def why_text(why: dict[str, Any]) -> str:
    """One line: the words matched, each feature, the kind, the factors applied after, and the score."""
    words = ", ".join(why["words"]) or "none"
    if why.get("common_words"):
        words += f" (too common to weigh: {', '.join(why['common_words'])})"
    vector = "not among the nearest" if why["vector"] is None else f"{why['vector']:.2f}"
    if why["vector_search"] != "ran":
        vector = why["vector_search"]
    parts = [f"words: {words}", f"word match {why['word_score']:.2f}", f"vector {vector}"]
    parts += [f"{name} {value:.2f}" for name, value in why["features"].items() if name not in ("vector", "words")]
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
