"""Network addresses of the servers AgentOS runs (the MCP server, the inspector)."""

from __future__ import annotations

import ipaddress
from typing import Sequence


def number_in(text: str, low: int, high: int) -> int | None:
    """``text`` as a whole number from ``low`` to ``high`` (a port, a query parameter), else None.

    ASCII digits only, no more of them than ``high`` has: ``str.isdigit()`` takes ``²`` and ``①``, which
    ``int()`` refuses, and ``int()`` refuses a string of too many digits.
    """
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(high)) or not low <= int(text) <= high:
        return None
    return int(text)


def is_loopback(host: str) -> bool:
    """True when ``host`` is reachable only from this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str, port: int, extra: Sequence[str] = ()) -> list[str]:
    """The ``Host`` headers a server bound to ``host:port`` answers: the bound address and the loopback names,
    each with its port, and the names in ``extra`` (with the port, unless given with one). Any other is
    refused, whatever the bound address: a web page elsewhere whose name is made to resolve to this machine
    (DNS rebinding) sends its own name."""
    names = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
    hosts = {f"{name}:{port}" for name in names}
    for name in extra:
        hosts.add(name if name.rpartition(":")[2].isdigit() and not name.endswith("]") else f"{name}:{port}")
    return sorted(hosts)
