"""Upkeep of an agent's memory, on a small bundle of its tiers (``Tiers``): recovery at open, the
rebuild of every index from the files, forgetting, NOW.md's writes, the archives' listing.

Import the names below from here; the modules of this package import each other directly.
"""

from core.memory.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "SecretScrubber": "scrub",
    "ScrubReport": "scrub",
    "archive_first_seq": "archives",
    "open_tiers": "tiers",
    "rebuild_all": "rebuild",
})
