"""What must not be shown: secrets' values hidden wherever they would be written, what a forget
hides, and the scrub that takes a value out of every file and index that held it.

Import the names below from here; the modules of this package import each other directly.
"""

from core.memory.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "FORGOTTEN": "forgotten",
    "Redactor": "redaction",
    "forgotten_ids": "forgotten",
    "forgotten_of": "forgotten",
    "forgotten_values": "redaction",
    "redactor_for": "redaction",
    "redactor_of": "redaction",
    "rewrite_lines": "redaction",
    "visible_entries": "forgotten",
})
