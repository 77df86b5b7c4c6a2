"""``filter`` of a store search: which item values match, as LangGraph's ``InMemoryStore`` decides.

A filter maps top-level keys of the value to an expected value (nested objects and
lists compared structurally) or to operators ``$eq``, ``$ne``, ``$gt``, ``$gte``,
``$lt``, ``$lte`` (the last four compare numbers).
"""

from __future__ import annotations

from typing import Any, Mapping

from core.errors import ValidationError

_COMPARE = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """True if the item ``value`` satisfies every condition of ``filter`` (an empty filter matches all)."""
    return all(_compare(value.get(key), expected) for key, expected in (filter or {}).items())


def _compare(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(str(k).startswith("$") for k in expected):
            return all(_operator(actual, op, operand) for op, operand in expected.items())
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(expected)
                and all(_compare(a, e) for a, e in zip(actual, expected)))
    return actual == expected


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return actual == operand
    if op == "$ne":
        return actual != operand
    if op not in _COMPARE:
        raise ValidationError(f"unsupported filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")
    try:
        return _COMPARE[op](float(actual), float(operand))
    except (TypeError, ValueError):
        return False  # a missing or non-numeric value does not match a numeric comparison
