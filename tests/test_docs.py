"""docs/ stays true: its code runs, its config is the real config, its commands and links exist.

The README's own checks are in test_readme.py; the command and link checks here cover it too.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import re
import shlex
import tomllib
from pathlib import Path

import pytest
import yaml

from core.config import Config, merge

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)

EXPECTED_OUTPUT = {
    "memory.md": ["## Facts", "[REDACTED]"],
    "providers.md": ['"source_type": "message"', "137"],
    "integrations.md": ["Ada prefers tea over coffee"],
    "recall.md": ["True False ['report']\nFalse True ['report']\n[]\n[True, False]",
                  "[('What is my deploy target?', 1)]",
                  "stored 1 of 3 memories; refused item 1: memory content must not be empty; item 2: "
                  "store_memory kind must be one of note, summary, got 'diary'", "{0: 'note:",
                  "Lyon ['Lyon', 'Paris']\n[('home_city: Lyon', None), ('home_city: Paris', "
                  "'fact:home_city')]"],
    "spaces.md": ["research by researcher: Sea otters hold hands",
                  "['My article about otters is due on Friday']", "refused: agent 'writer' may only read",
                  "refused: the content holds the value of a secret fact"],
}
"""What each page's Python blocks print, so a block that runs but does the wrong thing fails."""


def _blocks(page: Path, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(page.read_text(encoding="utf-8")) if lang == language]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", [p for p in DOCS if _blocks(p, "python")], ids=_name)
def test_python_blocks_run(page: Path, agents_home: Path, capsys) -> None:
    """Every Python block of a docs page runs as written, in order, on a fresh agents home."""
    namespace: dict = {}
    for block in _blocks(page, "python"):
        exec(compile(block, _name(page), "exec"), namespace)  # noqa: S102 - the docs are ours
    out = capsys.readouterr().out
    for expected in EXPECTED_OUTPUT[page.name]:
        assert expected in out, f"{_name(page)} printed no {expected!r}"


def test_configuration_page_lists_every_option_with_its_default() -> None:
    """docs/configuration.md's block equals the defaults in core/config.py, option by option."""
    (block,) = _blocks(ROOT / "docs" / "configuration.md", "yaml")
    assert yaml.safe_load(block) == dataclasses.asdict(Config())


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p, "yaml")], ids=_name)
def test_yaml_blocks_are_valid_config(page: Path) -> None:
    """A YAML block with every section shows the defaults; any other is accepted by the config loader."""
    defaults = dataclasses.asdict(Config())
    for block in _blocks(page, "yaml"):
        data = yaml.safe_load(block)
        if set(data) == set(defaults):
            assert data == defaults
        else:
            merge(Config(), data, source=_name(page))  # raises ConfigError on an unknown key or a bad value


def _agentos_parser() -> argparse.ArgumentParser:
    """The parser behind the installed ``agentos`` command, found through pyproject's entry point."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module = scripts["agentos"].split(":")[0]
    return importlib.import_module(module).parser()


PREFIXES = {
    ("agentos",): [],
    ("python", "-m", "core"): [],
    ("python", "-m", "core.engine"): ["run"],
    ("python", "core/engine.py"): ["run"],
    ("python", "-m", "core.inspector"): ["inspect"],
}
"""How a documented command line maps onto ``agentos`` arguments (``python -m core`` is ``agentos``)."""


def _command_lines() -> list[tuple[str, list[str]]]:
    """Every agentos invocation in the bash blocks of the README and docs/, as ``agentos`` arguments."""
    found = []
    for page in PAGES:
        for block in _blocks(page, "bash"):
            for line in block.splitlines():
                tokens = shlex.split(line, comments=True)
                command: list[str] = []
                for token in [*tokens, "&&"]:
                    if token not in ("&&", "&", "||", ";", "|"):
                        command.append(token)
                        continue
                    if command and command[0].endswith(("/python", "/agentos")):
                        command[0] = command[0].rsplit("/", 1)[1]  # .venv/bin/python, .venv/bin/agentos
                    for prefix, replacement in PREFIXES.items():
                        if tuple(command[: len(prefix)]) == prefix:
                            found.append((f"{_name(page)}: {line.strip()}",
                                          replacement + command[len(prefix):]))
                            break
                    command = []
    return found


COMMAND_LINES = _command_lines()


def test_documented_commands_are_found() -> None:
    """The command check below sees the commands the README and docs/ show."""
    shown = {args[0] for _, args in COMMAND_LINES if args}
    assert {"run", "recall", "inspect", "export", "import", "now"} <= shown


@pytest.mark.parametrize("where,args", COMMAND_LINES, ids=[where for where, _ in COMMAND_LINES])
def test_bash_block_commands_parse(where: str, args: list[str]) -> None:
    """Each agentos command line of a bash block parses with the real parser: subcommand and flags exist."""
    try:
        _agentos_parser().parse_args(args)
    except SystemExit as exc:  # argparse exits 2 on an unknown command or flag; --version and --help exit 0
        assert exc.code == 0, f"{where}: agentos {' '.join(args)} does not parse"


INLINE = re.compile(r"`(agentos [-a-z][^`]*)`")  # `agentos <schema>` is a connection name, not a command


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = _agentos_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_inline_commands_and_flags_exist() -> None:
    """Every `agentos ...` in running text or tables names a real subcommand and only its real flags."""
    subcommands = _subcommands()
    wrong = []
    for page in PAGES:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for mention in INLINE.findall(text):
            words = mention.split()
            if words[1].startswith("-"):
                options = {"--version", "-v", "--verbose", "-h", "--help"}
            elif words[1] in subcommands:
                parser = subcommands[words[1]]
                nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
                if nested and len(words) > 2 and words[2] in nested[0].choices:  # agentos space create ...
                    parser = nested[0].choices[words[2]]
                options = {o for a in parser._actions for o in a.option_strings}
            else:
                wrong.append(f"{_name(page)}: {mention} (no subcommand {words[1]!r})")
                continue
            for flag in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", mention):
                if flag not in options:
                    wrong.append(f"{_name(page)}: {mention} ({flag})")
    assert not wrong


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE):
        anchor, n = _anchor(heading), 1
        while anchor in anchors:  # GitHub numbers repeated headings: x, x-1, x-2
            anchor, n = f"{_anchor(heading)}-{n}", n + 1
        anchors.add(anchor)
    return anchors


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_relative_links_resolve() -> None:
    """Every relative link of the README and docs/ points to a file that exists, and to a heading in it."""
    broken = []
    for page in PAGES:
        text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", page.read_text(encoding="utf-8")))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{_name(page)}: {target} (no file)")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{_name(page)}: {target} (no heading)")
    assert not broken


def test_anchor_follows_github() -> None:
    """The anchor rule above gives GitHub's anchors for the kinds of heading the docs use."""
    assert _anchor("Cold memory and LOG.md compaction") == "cold-memory-and-logmd-compaction"
    assert _anchor("The model's context window") == "the-models-context-window"
    assert _anchor("As a person meets it: fresh processes") == "as-a-person-meets-it-fresh-processes"
    assert _anchor("Using `agentos` with PostgreSQL") == "using-agentos-with-postgresql"
