"""The reads that a :class:`~core.memory.manager.MemoryManager` and a
:class:`~core.memory.reader.MemoryReader` answer alike, from LOG.md (``log``) and the facts (``facts``): each
class keeps one definition of them."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Protocol, TypeVar

from core.errors import ValidationError, shown
from core.memory.files import ScanResult
from core.memory.files.log_file import LogFile


C = TypeVar("C", bound=type)


def refused_once_closed(cls: C) -> C:
    """A class decorator: once ``close()`` ran, every public method of ``cls`` (its own and its bases')
    raises a ValidationError that says how to open the memory again.

    A closed memory object that carried on would open memory.db and the lock files again, holding them
    after ``close()``, and write to a folder it no longer holds in use (an import may be replacing it).
    """
    names = {name for klass in cls.__mro__[:-1] for name, member in vars(klass).items()
             if inspect.isfunction(member) and not name.startswith("_") and name != "close"}
    for name in names:
        setattr(cls, name, _refusing_once_closed(getattr(cls, name), cls.__name__))
    return cls


def _refusing_once_closed(method: Callable[..., Any], kind: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def refusing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.closed:
            raise ValidationError(f"the memory of {self.agent_name} was closed ({method.__name__} after "
                                  f"close()): open it again with {kind}({self.agent_name!r})")
        return method(self, *args, **kwargs)
    return refusing


class _FactReads(Protocol):
    def get(self, key: object) -> Any: ...

    def history(self, key: object, as_dicts: bool = False) -> list[Any]: ...


class Reads:
    """LOG.md's and the facts' reads of one agent's memory (see the module)."""

    log: LogFile
    facts: _FactReads

    def read_log(self, last_n: int = 20) -> list[dict[str, Any]]:
        """The last ``last_n`` LOG.md entries, oldest first, as dicts (seq, ts, type, content, metadata)."""
        if not isinstance(last_n, int) or isinstance(last_n, bool) or last_n < 0:
            raise ValidationError(f"last_n must be a non-negative integer, got {shown(last_n)}")
        return [entry.as_dict() for entry in self.log.tail(last_n)]

    def log_since(self, seq: int) -> list[dict[str, Any]]:
        """Every LOG.md entry after ``seq``, oldest first."""
        return [e.as_dict() for e in self.log.scan().entries if e.seq > seq]

    def scan_log(self) -> ScanResult:
        """Parse all of LOG.md, reporting damaged lines (a line being written is one of them)."""
        return self.log.scan()

    def get_fact(self, key: str, history: bool = False) -> Any:
        """The value stored under ``key`` (secrets included), or None; with ``history``, the values it has
        held as :meth:`FactStore.history <core.memory.storage.facts.FactStore.history>` lists them."""
        return (self.facts.history(key, as_dicts=True) if history
                else getattr(self.facts.get(key), "value", None))
