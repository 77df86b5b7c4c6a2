"""The README stays true: its opening commands and its Python (docs/ is checked by test_docs.py)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _first_block(after_heading: str, language: str) -> str:
    section = README.split(after_heading, 1)[1]
    return re.search(rf"```{language}\n(.*?)```", section, re.DOTALL).group(1)


def test_opens_with_setup_and_run_and_test_commands() -> None:
    """The first code block holds the two commands; the run one sets up no model server (it stays as fast),
    the test one sets one up and runs the full suite, as .ci/run does."""
    run, test = _first_block("# AgentOS", "bash").strip().splitlines()
    assert run.startswith("./scripts/setup.sh && .venv/bin/agentos run --agent finn ")
    assert test == "./scripts/setup.sh --model-server && .venv/bin/python -m pytest --full"
    ci = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line and not line.startswith(("#", "set ", "cd ", "export "))]
    assert ci == [test]


def test_python_snippets_run(agents_home: Path, capsys) -> None:
    """Every Python block of the README runs as written, in order, on a fresh agents home."""
    blocks = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
    assert blocks
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the README is ours
    out = capsys.readouterr().out
    assert "note The report goes to Maria on Fridays" in out
    assert "## Facts" in out and "api_key (secret): [REDACTED]" in out
