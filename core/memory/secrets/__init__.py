"""What must not be shown: secrets' values hidden wherever they would be written and what a forget
hides (the scrub that takes a value out of every file and index that held it is upkeep's).

Import the names below from here; the modules of this package import each other directly.
"""

from core.memory.secrets.forgotten import FORGOTTEN, forgotten_ids, forgotten_of, visible_entries
from core.memory.secrets.redaction import Redactor, forgotten_values, redactor_for, redactor_of, rewrite_lines

__all__ = [
    "FORGOTTEN", "Redactor", "forgotten_ids", "forgotten_of", "forgotten_values", "redactor_for",
    "redactor_of", "rewrite_lines", "visible_entries",
]
