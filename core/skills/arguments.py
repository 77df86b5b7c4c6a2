"""A tool's arguments: a pydantic model built from the function's signature, its JSON schema, and
validation of what a model sent.

The model is the single source of truth: the JSON schema offered to the model and the check of
its call both come from it, so ``Literal``, ``Enum``, ``dict[str, float]``, nested models and
``Optional`` types are described and enforced alike. Validation is pydantic's lax mode, so a
number sent as a numeric string is accepted; anything else that does not fit is a
:class:`~core.errors.ToolArgumentError` whose message the model can act on. A skill written by
hand, with a JSON schema and no type hints, is checked against its schema with ``jsonschema``.
"""

from __future__ import annotations

import inspect
import json
import typing
from typing import Any, Callable

import jsonschema
import pydantic

from core.errors import ToolArgumentError

BOUND_PARAMETERS = ("agent_name",)
"""Parameters the engine supplies; a model never sees or sets them."""

MAX_ERRORS_SHOWN = 3


class Arguments:
    """The arguments of one tool: their schema and their validation."""

    def __init__(self, tool: str, model: type[pydantic.BaseModel] | None, schema: dict[str, Any]) -> None:
        self.tool = tool
        self.model = model
        """The pydantic model, or None for a hand-written schema."""
        self.schema = schema
        """JSON schema of the arguments object (``$ref``s inlined, as small models need)."""

    @classmethod
    def of_function(cls, function: Callable[..., Any], tool: str,
                    descriptions: dict[str, str] | None = None) -> Arguments:
        """The arguments of ``function`` (without the engine-bound ones), described by ``descriptions``."""
        hints = typing.get_type_hints(function, include_extras=True)
        fields: dict[str, Any] = {}
        for param in inspect.signature(function).parameters.values():
            if param.name in BOUND_PARAMETERS or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
                continue
            default = ... if param.default is param.empty else param.default
            info = pydantic.Field(default, description=(descriptions or {}).get(param.name))
            fields[param.name] = (hints.get(param.name, str), info)
        model = pydantic.create_model(f"{_camel(tool)}Arguments",
                                      __config__=pydantic.ConfigDict(extra="forbid",
                                                                     coerce_numbers_to_str=True), **fields)
        return cls(tool, model, json_schema(model))

    @classmethod
    def of_schema(cls, tool: str, schema: dict[str, Any]) -> Arguments:
        """The arguments of a tool known only by its JSON schema."""
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ToolArgumentError(f"{tool}: its parameters are not a valid JSON schema: "
                                    f"{exc.message}") from exc
        return cls(tool, None, schema)

    def tool_function(self, name: str, description: str) -> dict[str, Any]:
        """The ``function`` part of an Ollama/OpenAI tool definition."""
        return {"name": name, "description": description, "parameters": self.schema}

    def validate(self, arguments: object) -> dict[str, Any]:
        """The arguments to call the function with.

        Raises:
            ToolArgumentError: they do not fit; the message names each wrong field and what it expects.
        """
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolArgumentError(f"{self.tool}: arguments must be a JSON object, got "
                                    f"{type(arguments).__name__}")
        try:  # a model's call is JSON: a set, bytes or an object here is a caller's mistake
            json.dumps(arguments, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ToolArgumentError(f"{self.tool}: arguments must be JSON data (objects, lists, text, "
                                    f"numbers, true/false/null): {exc}") from exc
        bound = [name for name in BOUND_PARAMETERS if name in arguments]
        if bound:
            raise ToolArgumentError(f"{self.tool}: {', '.join(bound)} is fixed by the engine or server that "
                                    "runs the tool, not an argument")
        if self.model is None:
            return self._validate_schema(arguments)
        try:
            checked = self.model.model_validate(arguments)
        except pydantic.ValidationError as exc:
            raise ToolArgumentError(f"{self.tool}: {_describe(exc)}") from exc
        return {name: getattr(checked, name) for name in type(checked).model_fields}

    def _validate_schema(self, arguments: dict[str, Any]) -> dict[str, Any]:
        validator = jsonschema.Draft202012Validator(self.schema)
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            shown = "; ".join(_schema_error(e) for e in errors[:MAX_ERRORS_SHOWN])
            raise ToolArgumentError(f"{self.tool}: {shown}")
        return dict(arguments)


def json_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The JSON schema of ``model`` with every ``$ref`` inlined and pydantic's titles dropped."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = definitions[node["$ref"].rsplit("/", 1)[-1]]
                merged = {**inline(target), **{k: inline(v) for k, v in node.items() if k != "$ref"}}
                return merged
            return {k: inline(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    return compact(inline(schema))


def compact(node: Any) -> Any:
    """``node`` without what costs a model's window and tells it nothing (every token of a tool definition is
    sent with every call; validation stays the pydantic model's, which knows all of it):

    - an optional argument's ``anyOf [X, null]`` becomes ``X`` (leaving it out means null);
    - ``default`` goes: leaving an argument out gives its default, whatever it is;
    - ``additionalProperties: false`` goes (unknown arguments are refused by validation, with a message that
      names them), and so does a ``dict`` argument's ``true`` ("any object": ``type: object`` says it);
      a schema for the values (``dict[str, float]``) stays;
    - an empty ``required`` list goes.
    """
    if isinstance(node, list):
        return [compact(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {k: ({name: compact(p) for name, p in v.items()} if k == "properties" and isinstance(v, dict)
                else compact(v))  # the names under "properties" are arguments, not keywords
            for k, v in node.items()
            if k != "default" and not (k == "additionalProperties" and isinstance(v, bool))
            and not (k == "required" and v == [])}
    options = node.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1 and len(options) == 2:
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            return {**kept[0], **rest}
    return node


def _describe(exc: pydantic.ValidationError) -> str:
    parts = []
    for error in exc.errors()[:MAX_ERRORS_SHOWN]:
        where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
        kind = error.get("type", "")
        if kind == "missing":
            parts.append(f"missing required argument {where!r}")
        elif kind == "extra_forbidden":
            parts.append(f"unknown argument {where!r}")
        else:
            value = error.get("input")
            parts.append(f"{where}: {error.get('msg', 'invalid')} (got {value!r:.60})")
    more = len(exc.errors()) - MAX_ERRORS_SHOWN
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _schema_error(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(part) for part in error.path) or "arguments"
    return f"{where}: {error.message}"


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_")) or "Tool"
