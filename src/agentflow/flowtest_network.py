"""The network guard of ``flowc test`` (flowtest.py; docs/reference/testing.md "No network"):
while tests run, an httpx request to a host other than this machine — or a DNS lookup or socket
connection of a test's context, through an audit hook — fails the test that made it (and the
request: ``httpx.ConnectError`` / ``ConnectionRefusedError``)."""

from __future__ import annotations

import contextvars
import sys
import threading
from typing import Any

__all__ = ["CALLER", "GUARD", "network_guard"]


#: the problems list of the test running in this context (None: not in a test)
GUARD: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "flowc_test_guard", default=None
)
#: what runs in this context, for the guard's message (``tool `fetch_page```)
CALLER: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "flowc_test_caller", default=None
)
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")


def _is_loopback(host: str) -> bool:
    return host in _LOOPBACK or host.startswith("127.") or host.endswith(".localhost")


def _refuse(request: Any) -> None:
    """Raise ``httpx.ConnectError`` (and fail the running test) when ``request`` would leave."""
    import httpx

    url = request.url
    if _is_loopback(url.host):
        return
    port = f":{url.port}" if url.port else ""
    shown = f"{request.method} {url.scheme}://{url.host}{port}{url.path}"  # no query, no userinfo
    caller = CALLER.get()
    who = f"{caller} " if caller else "something "
    message = (
        f"{who}tried to reach the network ({shown}); tests run with no network: "
        "stub it (`stub tool …` / `stub agent …`)"
    )
    problems = GUARD.get()
    if problems is not None:
        problems.append(message)
    raise httpx.ConnectError(message, request=request)


def _refuse_address(host: Any, port: Any) -> None:
    """Raise ``ConnectionRefusedError`` (and fail the running test) when a socket of a test is
    about to resolve or connect to ``host`` off this machine: the guard below httpx, for tools
    that use urllib, a raw socket or any other client."""
    if GUARD.get() is None or not isinstance(host, (str, bytes)):
        return
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
    if not name or _is_loopback(name.lower()):
        return
    caller = CALLER.get()
    who = f"{caller} " if caller else "something "
    shown = f"{name}:{port}" if port else name
    message = (
        f"{who}tried to reach the network ({shown}); tests run with no network: "
        "stub it (`stub tool …` / `stub agent …`)"
    )
    problems = GUARD.get()
    if problems is not None and message not in problems:
        problems.append(message)
    raise ConnectionRefusedError(message)


def _socket_audit(event: str, args: tuple[Any, ...]) -> None:
    """A ``sys.addaudithook`` hook: DNS lookups and connections of a test's context that would
    leave the machine are refused (a no-op outside tests: one context-variable read)."""
    if event == "socket.getaddrinfo":
        _refuse_address(args[0], args[1])
    elif event == "socket.connect":
        address = args[1]
        if isinstance(address, tuple) and len(address) >= 2:  # AF_INET / AF_INET6, not AF_UNIX
            _refuse_address(address[0], address[1])


_AUDIT_INSTALLED = False


class _NetworkGuard:
    """Patches httpx's transports while at least one :func:`run_tests` runs (re-entrant), and
    installs (once per process; audit hooks cannot be removed) :func:`_socket_audit`, which only
    acts in the context of a running test."""

    def __init__(self) -> None:
        self.depth = 0
        self.saved: tuple[Any, Any] | None = None
        self.lock = threading.Lock()

    def __enter__(self) -> None:
        import httpx

        global _AUDIT_INSTALLED
        with self.lock:
            if not _AUDIT_INSTALLED:
                sys.addaudithook(_socket_audit)
                _AUDIT_INSTALLED = True
            self.depth += 1
            if self.depth > 1:
                return
            sync_send = httpx.HTTPTransport.handle_request
            async_send = httpx.AsyncHTTPTransport.handle_async_request
            self.saved = (sync_send, async_send)

            def handle_request(transport: Any, request: Any) -> Any:
                _refuse(request)
                return sync_send(transport, request)

            async def handle_async_request(transport: Any, request: Any) -> Any:
                _refuse(request)
                return await async_send(transport, request)

            httpx.HTTPTransport.handle_request = handle_request  # type: ignore[method-assign,assignment]
            httpx.AsyncHTTPTransport.handle_async_request = handle_async_request  # type: ignore[method-assign,assignment]

    def __exit__(self, *exc: Any) -> None:
        import httpx

        with self.lock:
            self.depth -= 1
            if self.depth or self.saved is None:
                return
            sync_send, async_send = self.saved
            httpx.HTTPTransport.handle_request = sync_send  # type: ignore[method-assign]
            httpx.AsyncHTTPTransport.handle_async_request = async_send  # type: ignore[method-assign]
            self.saved = None


network_guard = _NetworkGuard()
