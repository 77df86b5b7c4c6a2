"""Find the skills an agent may use: the built-in ones and those in ``agents/<name>/skills/``.

A skill is a Python module with ``SKILL_METADATA`` (name, description, JSON
schema ``parameters``) and ``execute(agent_name=..., **arguments)``. Built-in
skills live in ``core/skills/<group>/scripts/``; an agent's own skills in
``<agent>/skills/<group>/scripts/*.py`` or ``<agent>/skills/*.py``. An agent's
skill cannot replace a built-in one.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pydantic

import core.skills
from core.errors import UnknownSkillError, ValidationError
from core.paths import AgentPaths
from core.skills.arguments import Arguments
from core.skills.base import function_arguments

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Skill:
    """A function a model may call, with its tool definition."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments a model passes (never ``agent_name``)."""
    execute: Callable[..., Any]
    source: str
    """Module or file the skill came from."""
    arguments: Arguments
    """How a model's arguments are checked before ``execute`` runs."""

    def tool_definition(self) -> dict[str, Any]:
        """The skill in the tool format of Ollama and OpenAI chat APIs."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}

    def call(self, agent_name: str, arguments: object) -> Any:
        """Run the skill for ``agent_name`` with a model's ``arguments``, validated first.

        Raises:
            ToolArgumentError: the arguments do not fit the schema, or try to set ``agent_name``.
        """
        return self.execute(agent_name=agent_name, **self.arguments.validate(arguments))


def skill_from_module(module: ModuleType) -> Skill | None:
    """The skill a module defines, or None if it is not a skill module."""
    meta = getattr(module, "SKILL_METADATA", None)
    execute = getattr(module, "execute", None)
    if not isinstance(meta, dict) or not callable(execute):
        return None
    try:
        name, description, parameters = meta["name"], meta["description"], meta["parameters"]
    except KeyError as exc:
        raise ValidationError(f"skill module {module.__name__}: SKILL_METADATA lacks {exc}") from exc
    return Skill(name, description, parameters, execute, module.__name__,
                 _arguments(name, parameters, execute))


def _arguments(name: str, parameters: dict[str, Any], execute: Callable[..., Any]) -> Arguments:
    """The pydantic model of ``execute`` when its schema is the one offered, else the offered schema
    itself."""
    try:
        typed = function_arguments(execute, name)
    except (TypeError, NameError, pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError):
        typed = None  # hints pydantic cannot read: the hand-written schema is checked instead
    if typed is not None and typed.schema == parameters:
        return typed
    return Arguments.of_schema(name, parameters)


def builtin_skills() -> dict[str, Skill]:
    """Every skill under ``core/skills/*/scripts/``."""
    skills: dict[str, Skill] = {}
    for group in pkgutil.iter_modules(core.skills.__path__):
        if not group.ispkg:
            continue
        scripts = f"core.skills.{group.name}.scripts"
        try:
            package = importlib.import_module(scripts)
        except ModuleNotFoundError:
            continue
        for info in pkgutil.iter_modules(package.__path__):
            skill = skill_from_module(importlib.import_module(f"{scripts}.{info.name}"))
            if skill:
                skills[skill.name] = skill
    return skills


def agent_skills(paths: AgentPaths) -> dict[str, Skill]:
    """The skills in an agent's own ``skills/`` folder."""
    skills: dict[str, Skill] = {}
    if not paths.skills_dir.is_dir():
        return skills
    files = sorted(paths.skills_dir.glob("*.py")) + sorted(paths.skills_dir.glob("*/scripts/*.py"))
    for file in files:
        if file.name.startswith("_"):
            continue
        skill = skill_from_module(_load_file(paths.name, file))
        if skill:
            skills[skill.name] = skill
    return skills


def _load_file(agent: str, file: Path) -> ModuleType:
    name = f"agentos_skills_{agent.replace('-', '_')}_{file.parent.name}_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ValidationError(f"cannot load skill file {file}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def discover(agent_name: str | None = None) -> dict[str, Skill]:
    """Built-in skills plus, given an agent, that agent's own; built-in names win."""
    skills = builtin_skills()
    if agent_name is not None:
        for name, skill in agent_skills(AgentPaths.for_agent(agent_name)).items():
            if name in skills:
                log.warning("agent %s: skill %s in %s ignored: a built-in skill has that name",
                            agent_name, name, skill.source)
                continue
            skills[name] = skill
    return skills


def get_skill(name: str, agent_name: str | None = None) -> Skill:
    """One skill by name; UnknownSkillError lists the available ones."""
    skills = discover(agent_name)
    if name not in skills:
        raise UnknownSkillError(f"no skill named {name!r}; available: {', '.join(sorted(skills))}")
    return skills[name]
