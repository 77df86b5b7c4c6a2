"""The package installs like a library: a wheel with its prompts, the agentos command, and core importable
anywhere."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

import core

ROOT = Path(__file__).resolve().parent.parent

ROUND_TRIP = textwrap.dedent("""
    import core, sys
    from pathlib import Path
    from core.memory_manager import MemoryManager
    from core.engine.prompts import load
    from core.memory.compaction.summarizer import load_prompt
    assert Path(core.__file__).resolve().is_relative_to(Path(sys.argv[1]).resolve()), core.__file__
    assert load("SYSTEM").startswith("# AgentOS") and load_prompt("log_summary")
    with MemoryManager("finn") as manager:
        manager.save_fact("city", "Porto")
        seq = manager.append_log("THOUGHT", "installed from a wheel")
        assert manager.get_fact("city") == "Porto"
        assert manager.read_log(1)[0]["content"] == "installed from a wheel"
    print("round trip ok", core.__version__)
""")


def _source_tree(tmp_path: Path) -> Path:
    """The files a source distribution holds, copied away from the checkout (whose agents/ must not ship)."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "core", source / "core", ignore=shutil.ignore_patterns("__pycache__"))
    (source / "agents" / "finn").mkdir(parents=True)  # a flat layout beside core, as in the checkout
    return source


def _venv(path: Path) -> Path:
    """A scratch venv that sees the test environment's packages through a .pth file (no network needed)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    site = next(path.glob("lib/python*/site-packages"))
    (site / "test-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return path / "bin"


def _pip(bin_dir: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "--no-deps",
                    "--no-index", "--quiet", *args], check=True, timeout=300, capture_output=True)


@pytest.mark.slow
@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_checkout(tmp_path):
    """The wheel holds core, its Markdown prompts, the inspector's page and the embedding model's probe
    vectors; installed, agentos and a memory round trip work anywhere."""
    source = _source_tree(tmp_path)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--quiet",
                    "-w",
                    str(wheels), str(source)], check=True, timeout=300, capture_output=True)
    wheel = next(wheels.glob("agentos-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"core", f"agentos-{core.__version__}.dist-info"}
    packaged_md = {n for n in names if n.endswith(".md")}
    assert packaged_md == {p.relative_to(ROOT).as_posix() for p in (ROOT / "core").rglob("*.md")}
    assert "core/py.typed" in names
    assets = {p.relative_to(ROOT).as_posix() for p in (ROOT / "core" / "inspector" / "static").iterdir()}
    assert assets <= set(names) and "core/inspector/static/app.js" in assets  # the inspector's page ships too
    assert "core/llm/embedding/minilm_probes.json" in names  # the embedding model's reference vectors

    bin_dir = _venv(tmp_path / "venv")
    _pip(bin_dir, str(wheel))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {"PATH": "/usr/bin:/bin", "AGENTOS_HOME": str(outside / "home"), "HF_HUB_OFFLINE": "1"}
    version = subprocess.run([str(bin_dir / "agentos"), "--version"], cwd=outside, env=env,
                             capture_output=True,
                             text=True, timeout=120)
    assert version.stdout.strip() == f"agentos {core.__version__}", version.stderr
    site = next((tmp_path / "venv").glob("lib/python*/site-packages"))
    script = subprocess.run([str(bin_dir / "python"), "-c", ROUND_TRIP, str(site)], cwd=outside, env=env,
                            capture_output=True, text=True, timeout=120)
    assert script.returncode == 0 and "round trip ok" in script.stdout, script.stderr
    facts = subprocess.run([str(bin_dir / "agentos"), "facts", "--agent", "finn"], cwd=outside, env=env,
                           capture_output=True, text=True, timeout=120)
    assert facts.stdout.strip() == "city (general): Porto", facts.stderr


@pytest.mark.slow
@pytest.mark.slow
def test_editable_install_imports_from_the_source(tmp_path):
    """pip install -e works: core is imported from the source tree, from any folder."""
    source = _source_tree(tmp_path)
    bin_dir = _venv(tmp_path / "venv")
    _pip(bin_dir, "--no-build-isolation", "-e", str(source))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {"PATH": "/usr/bin:/bin", "AGENTOS_HOME": str(outside / "home"), "HF_HUB_OFFLINE": "1"}
    script = subprocess.run([str(bin_dir / "python"), "-c", ROUND_TRIP, str(source)], cwd=outside, env=env,
                            capture_output=True, text=True, timeout=120)
    assert script.returncode == 0 and "round trip ok" in script.stdout, script.stderr
    assert subprocess.run([str(bin_dir / "agentos"), "--version"], env=env, capture_output=True, text=True,
                          timeout=120).returncode == 0


def _setup(checkout: Path) -> subprocess.CompletedProcess:
    """Run the checkout's scripts/setup.sh, leaving the Debian packages alone."""
    env = {**os.environ, "AGENTOS_SETUP_APT": "0"}
    return subprocess.run(["bash", str(checkout / "scripts" / "setup.sh")], cwd="/", env=env,
                          capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_setup_installs_the_agentos_command_into_the_venv(tmp_path):
    """scripts/setup.sh installs the project into .venv, editable: .venv/bin/agentos, `python -m core` and a
    script outside the checkout work from any folder; a second run installs nothing, and a changed
    pyproject.toml is installed again."""
    checkout = _source_tree(tmp_path)
    (checkout / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "setup.sh", checkout / "scripts" / "setup.sh")
    shutil.copy2(ROOT / "requirements.txt", checkout / "requirements.txt")
    bin_dir = _venv(checkout / ".venv")  # the test environment's packages stand for the pinned requirements
    digest = hashlib.sha256((checkout / "requirements.txt").read_bytes()).hexdigest()
    (checkout / ".venv" / ".agentos-requirements").write_text(digest + "\n", encoding="utf-8")

    first = _setup(checkout)
    assert first.returncode == 0 and "installing agentos into .venv (editable)" in first.stderr, first.stderr
    env = {"PATH": "/usr/bin:/bin", "AGENTOS_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    for command in ([str(bin_dir / "agentos"), "--version"],
                    [str(bin_dir / "python"), "-m", "core", "--version"]):
        ran = subprocess.run(command, cwd="/", env=env, capture_output=True, text=True, timeout=120)
        assert ran.stdout.strip() == f"agentos {core.__version__}", (command, ran.stderr)
    script = subprocess.run([str(bin_dir / "python"), "-c", ROUND_TRIP, str(checkout)], cwd="/", env=env,
                            capture_output=True, text=True, timeout=120)
    assert script.returncode == 0 and "round trip ok" in script.stdout, script.stderr

    again = _setup(checkout)
    assert again.returncode == 0 and "installing" not in again.stderr, again.stderr
    with (checkout / "pyproject.toml").open("a", encoding="utf-8") as pyproject:
        pyproject.write("\n# changed\n")
    changed = _setup(checkout)
    assert changed.returncode == 0 and "installing agentos into .venv (editable)" in changed.stderr, (
        changed.stderr
    )
