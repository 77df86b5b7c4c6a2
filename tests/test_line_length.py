"""Every line of the code, tests and scripts within the configured line length (pyproject's ruff)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_line_fits_the_configured_line_length() -> None:
    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.exists():
        pytest.fail("ruff is missing: install the test extra (scripts/setup.sh does)")
    out = subprocess.run([str(ruff), "check", "--select", "E501", "--output-format", "json", "core", "tests",
                          "scripts"], cwd=ROOT, capture_output=True, text=True, check=False)
    wide = [f"{item['filename']}:{item['location']['row']}" for item in json.loads(out.stdout or "[]")]
    assert not wide, f"{len(wide)} line(s) wider than the configured length: {wide[:20]}"
