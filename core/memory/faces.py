"""A package's face, loaded on first use: ``from core.memory.recall import Filters`` imports only the
module that defines ``Filters``.

The memory's sub-packages span layers (the secrets package holds both the redaction that storage uses
and the scrub that uses storage), so a face that imported every module at once would make the lower
modules import the higher ones. A face built here names where each public name lives instead.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_face(package: str, exports: dict[str, str]) -> tuple[list[str], Callable[[str], Any]]:
    """``__all__`` and the module ``__getattr__`` of ``package``, whose ``exports`` map a name to its module."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return sorted(exports), __getattr__
