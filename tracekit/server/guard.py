"""Who may talk to the server: the ``Host`` a request names and the page (``Origin``) it comes from.

A web page can reach a loopback server in two ways a token-less server must
refuse. DNS rebinding: the page's own name is made to resolve to 127.0.0.1,
so the browser sends ``Host: attacker.example`` to the server; only names on
the allow-list are answered (421 otherwise). Cross-origin requests: a page on
another origin may send a "simple" request (a form, ``text/plain``) without a
preflight; a request whose ``Origin`` is not the server's own is refused
(403) before any handler runs.

Example:
    >>> guard = HostGuard(None, allowed_hosts("127.0.0.1", ["tracekit.internal"]))
    >>> guard.host_allowed("localhost:4318"), guard.host_allowed("attacker.example")
    (True, False)
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import Any, Final

from tracekit.server.responses import failure

__all__ = ["HostGuard", "allowed_hosts"]

log = logging.getLogger("tracekit.server")

_LOOPBACK: Final = ("localhost", "127.0.0.1", "::1", "localhost.localdomain", "ip6-localhost")
#: Paths that hold no data: the health check (for load balancers) and static code.
_OPEN: Final = ("/healthz", "/static/")
_WILDCARD: Final = ("0.0.0.0", "::", "")


def allowed_hosts(host: str, extra: Iterable[str]) -> frozenset[str]:
    """The names a ``Host`` header may carry: loopback, the listening address, ``--allow-host``.

    Example:
        >>> sorted(allowed_hosts("127.0.0.1", ["Box.Lan"]))[:2]
        ['127.0.0.1', '::1']
    """
    names = {*_LOOPBACK, *(name.strip().lower().strip("[]") for name in extra)}
    if host not in _WILDCARD:
        names.add(host.lower().strip("[]"))
    return frozenset(names)


def _hostname(value: str) -> str:
    """``box:4318`` -> ``box``; ``[::1]:4318`` -> ``::1``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HostGuard:
    """ASGI middleware: 421 for a ``Host`` not allowed, 403 for a foreign ``Origin``.

    Args:
        app: the application it wraps.
        allowed: the host names answered (:func:`allowed_hosts`).
        any_address: the server listens on every address (``0.0.0.0``): a
            ``Host`` that is an IP address is answered too (rebinding needs a name).
    """

    def __init__(self, app: Any, allowed: frozenset[str], *, any_address: bool = False) -> None:
        self.app = app
        self.allowed = allowed
        self.any_address = any_address

    def host_allowed(self, value: str) -> bool:
        """Whether a ``Host`` header's value names this server."""
        name = _hostname(value)
        if name in self.allowed:
            return True
        if not self.any_address:
            return False
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1")
        refusal = self._refusal(scope["path"], host, headers.get(b"origin"))
        if refusal is not None:
            log.info("refused %s %s: %s", scope["method"], scope["path"][:80], refusal[1])
            await failure(*refusal)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, path: str, host: str, origin: bytes | None) -> tuple[int, str] | None:
        if host and not self.host_allowed(host):
            return 421, f"this server does not answer for host {host[:80]!r}; see --allow-host"
        if origin is None or path.startswith(_OPEN):
            return None
        given = origin.decode("latin-1").strip().lower()
        if given != f"http://{host.lower()}":
            return 403, f"requests from another origin ({given[:80]!r}) are refused"
        return None
