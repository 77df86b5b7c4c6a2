"""``python core/engine.py --agent finn "..."``: the engine run by its path, as the original design shows.

``core.engine`` is the package beside this file (a package wins an import), so this file only ever
runs by its path: it runs ``python -m core.engine`` with the same arguments.
"""

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path[0] = str(Path(sys.argv[0]).resolve().parent.parent)  # the repository, not core/
    runpy.run_module("core.engine", run_name="__main__", alter_sys=True)
