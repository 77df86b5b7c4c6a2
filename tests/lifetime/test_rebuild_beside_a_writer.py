"""A re-index by another process never kills a writer's background thread, and loses none of its memories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.memory_manager import MemoryManager

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("writer_child.py")


@pytest.mark.slow
def test_rebuild_index_while_another_process_writes(agents_home: Path, tmp_path: Path) -> None:
    """`agentos rebuild-index`, run twice while a writer stores memories, drops and makes anew the cold store
    under the writer's open handle: the writer's indexer opens the new table and goes on, and in the end every
    memory it stored has its vector."""
    MemoryManager("finn").close()
    stop = tmp_path / "stop"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    writer = subprocess.Popen([sys.executable, str(CHILD), str(stop)], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "writing", writer.stderr.read()
        for _ in range(2):
            rebuilt = subprocess.run([sys.executable, "-m", "core", "rebuild-index", "--agent", "finn"],
                                     env=env,
                                     cwd=ROOT, capture_output=True, text=True, timeout=600)
            assert rebuilt.returncode == 0, rebuilt.stderr
        stop.touch()
        out, err = writer.communicate(timeout=600)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    assert writer.returncode == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert report["thread_errors"] == [], report["thread_errors"]
    assert report["idle"] and report["pending"] == 0
    assert report["missing"] == []
    assert report["stored"] >= 10
