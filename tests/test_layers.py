"""The layers hold: the library never imports the applications, and it finds its data as package data."""

from __future__ import annotations

from tests.architecture import APPLICATIONS, LIBRARY, ROOT, imports

LLM_MAY_IMPORT = ("core.llm", "core.errors", "core.paths", "core.config", "core.durable")


def _within(name: str, units: tuple[str, ...]) -> bool:
    return any(name == unit or name.startswith(unit + ".") for unit in units)


def test_the_llm_package_imports_only_errors_paths_config_and_durable_writes():
    """core.llm (backends, embedders) stands below the memory and the engine: it imports none of them."""
    found = [f"{source} imports {target}" for source, targets in sorted(imports().items())
             if _within(source, ("core.llm",))
             for target in sorted(targets) if not _within(target, LLM_MAY_IMPORT)]
    assert found == []


def test_the_library_never_imports_the_applications():
    """Nothing in the library imports the engine, the command lines, the servers or the terminal helpers."""
    found = [f"{source} imports {target}" for source, targets in sorted(imports().items())
             if _within(source, LIBRARY) for target in sorted(targets) if _within(target, APPLICATIONS)]
    assert found == []


def test_no_module_finds_its_files_relative_to_itself():
    """Prompts and page assets are read with importlib.resources, never by a path built from __file__."""
    found = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "core").rglob("*.py"))
             if "__file__" in path.read_text(encoding="utf-8")]
    assert found == []


def test_every_prompt_loads_as_package_data():
    """The engine's, LOG.md compaction's and LCM's prompts all load through the one loader."""
    from core.engine import prompts
    from core.llm.backend import HANDOFF_OPENING
    from core.memory.compaction.summarizer import load_prompt as log_prompt
    from core.plugins.memory.lcm.summarizer import load_prompt as lcm_prompt

    assert prompts.load("SYSTEM").startswith("# AgentOS")
    assert "{{entries}}" in log_prompt("log_summary") and "{{text}}" in lcm_prompt("leaf")
    # The offline backend recognises a handoff request by its opening words.
    assert prompts.load("HANDOFF").startswith(HANDOFF_OPENING)
