"""Check a model's tool arguments against a skill's JSON schema before anything runs.

Models send arguments as JSON objects that are sometimes a little off; numbers
sent as numeric strings (and vice versa) are coerced, anything else that does
not fit is a ToolArgumentError that says what was expected.
"""

from __future__ import annotations

from typing import Any

from core.errors import ToolArgumentError

_PY_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
             "object": dict, "array": list}


def check_arguments(tool: str, schema: dict[str, Any], arguments: object) -> dict[str, Any]:
    """Return ``arguments`` validated (and lightly coerced) against an object ``schema``."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolArgumentError(f"{tool}: arguments must be a JSON object, got {type(arguments).__name__}")
    properties = schema.get("properties", {})
    unknown = [name for name in arguments if name not in properties]
    if unknown and schema.get("additionalProperties") is False:
        raise ToolArgumentError(
            f"{tool}: unknown argument(s) {', '.join(map(repr, unknown))}; "
            f"accepted: {', '.join(properties) or 'none'}"
        )
    missing = [name for name in schema.get("required", []) if arguments.get(name) is None]
    if missing:
        raise ToolArgumentError(f"{tool}: missing required argument(s) {', '.join(map(repr, missing))}")
    checked = {}
    for name, value in arguments.items():
        if value is None and name not in schema.get("required", []):
            continue
        checked[name] = check_value(f"{tool}.{name}", properties.get(name, {}), value)
    return checked


def check_value(where: str, schema: dict[str, Any], value: Any) -> Any:
    """Validate one value against a (small subset of) JSON schema."""
    kind = schema.get("type")
    if kind is None:
        return value
    value = _coerce(kind, value)
    expected = _PY_TYPES[kind]
    if not isinstance(value, expected) or (kind in ("integer", "number") and isinstance(value, bool)):
        raise ToolArgumentError(f"{where} must be {kind}, got {type(value).__name__} {value!r:.60}")
    if "enum" in schema and value not in schema["enum"]:
        raise ToolArgumentError(f"{where} must be one of {', '.join(map(str, schema['enum']))}, got {value!r:.60}")
    if kind == "array":
        return [check_value(f"{where}[{i}]", schema.get("items", {}), item) for i, item in enumerate(value)]
    return value


def _coerce(kind: str, value: Any) -> Any:
    if kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if kind in ("integer", "number") and isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return value
        return int(number) if kind == "integer" and number.is_integer() else number
    if kind == "array" and isinstance(value, str):
        return [value]
    return value
