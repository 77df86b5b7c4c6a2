"""Memory spaces: named shared memories that several agents publish to and recall from.

A space lives in the agents home, beside the agents, as ``spaces/<name>/``:

- ``LOG.md``: the journal, the truth. Append-only, one checksummed entry a line in the LOG.md
  format; a PUBLISH entry records its author agent, a FORGET entry the ids it forgets.
- ``members.yaml``: who may read (``read-only``) and who may also write (``read-write``).
- ``index.db``: words (SQLite FTS5) and vectors of the published entries, rebuilt from the journal
  whenever it is missing, behind or damaged.
- ``.lock``: one lock a space, held for every append to the journal and every change of members.

Only members read a space, only read-write members publish to it, and a publish that holds the
value of any member's secret fact is refused before anything is written.
"""

from core.memory.spaces.members import READ_ONLY, READ_WRITE
from core.memory.spaces.paths import SpacePaths, list_spaces, validate_space_name
from core.memory.spaces.space import Space, memory_id, parse_memory_id
from core.memory.spaces.transfer import export_space, import_space

__all__ = ["READ_ONLY", "READ_WRITE", "Space", "SpacePaths", "export_space", "import_space", "list_spaces",
           "memory_id",
           "parse_memory_id", "validate_space_name"]
