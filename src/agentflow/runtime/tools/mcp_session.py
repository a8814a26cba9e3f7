"""The client side of an MCP connection: transport, session lifecycle and what the server asks
(docs/mcp.md "Client", docs/spec/RUNTIME.md §4).

:class:`McpSession` starts a configured server (stdio or streamable HTTP, OAuth through
:mod:`.mcp_auth`) in a dedicated owner task, initializes the SDK's session and lists the
server's tools, resources and prompts; it reports the start-up (``mcp_server``), turns the
server's log messages into ``mcp_log`` events and answers its elicitation (:mod:`.mcp_elicit`)
and sampling (:mod:`.mcp_sampling`) requests; it closes within bounded time
(:data:`CLOSE_TIMEOUT`, :data:`CANCEL_GRACE`, :data:`SERVER_EXIT_GRACE`), even for a hung
server. Tool calls over the session are :class:`~agentflow.runtime.tools.mcp.McpConnection`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import tempfile
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentflow.core.redaction import redact
from agentflow.core.version import __version__
from agentflow.core.vocabulary import Code
from agentflow.errors import RunError
from agentflow.runtime.config import McpServer
from agentflow.runtime.tools.catalog import RunServices, run_in_daemon_thread, run_services
from agentflow.runtime.tools.mcp_auth import expand_vars, oauth_provider
from agentflow.runtime.tools.mcp_elicit import elicit
from agentflow.runtime.tools.mcp_lines import install as install_line_reader
from agentflow.runtime.tools.mcp_sampling import sample
from agentflow.runtime.tools.mcp_tools import _jsonable

__all__ = ["CLOSE_TIMEOUT", "McpSession", "stderr_tail"]

#: Seconds to wait for a connection's owner task to wind down on close (then it is cancelled and,
#: after :data:`CANCEL_GRACE` more, abandoned).  A connection still starting is cancelled at once.
#: Longer than the SDK's own (shielded) shutdown of a hung stdio server (see below), which must not
#: be cancelled a second time: a second native cancel defeats its shield and the kill never runs.
CLOSE_TIMEOUT = 2.5
CANCEL_GRACE = 1.0
#: Grace for a stdio server to exit after its stdin closes (then SIGTERM), and after SIGTERM
#: before SIGKILL: the SDK's module settings, 2 s each by default.  A hung server is killed
#: within ~1–1.5 s of the close.
SERVER_EXIT_GRACE = 1.0
SERVER_KILL_GRACE = 0.5
# The SDK logs every unparsable server line with a traceback; without a handler configured by the
# application, Python's last-resort handler would print them all on stderr (a server writing
# garbage produced thousands).  Failures reach the user as tool errors instead.
logging.getLogger("mcp").addHandler(logging.NullHandler())


class _Call:
    """One tool call in flight: whose run it serves and where (for server requests and events)."""

    __slots__ = ("services", "path", "tool")

    def __init__(self, services: RunServices | None, path: str, tool: str) -> None:
        self.services, self.path, self.tool = services, path, tool


class McpSession:
    """The session with one MCP server: started lazily, kept for the run, closed bounded.

    Owns the transport (stdio ``command`` or streamable HTTP ``url``, OAuth), the owner task that
    enters and exits the SDK's context managers, the start-up (``mcp_server`` event, what a
    failure or an HTTP 401/403 means), the server's log notifications and its elicitation and
    sampling requests (``mcp_log``, :func:`~agentflow.runtime.tools.mcp_elicit.elicit`,
    :func:`~agentflow.runtime.tools.mcp_sampling.sample`), and :meth:`aclose`.  The calls made
    over it are :class:`~agentflow.runtime.tools.mcp.McpConnection`'s.
    """

    def __init__(
        self,
        name: str,
        server: McpServer,
        *,
        base_dir: Path,
        env: Mapping[str, str],
        oauth_handlers: Any = None,
    ) -> None:
        self.name = name
        self.server = server
        self.base_dir = base_dir
        self.env = env
        self.oauth_handlers = oauth_handlers
        self._lock = asyncio.Lock()
        self._session: Any = None
        self._tools: list[Any] | None = None
        self.resources: list[Any] = []
        self.resource_templates: list[Any] = []
        self.prompts: list[Any] = []
        self.server_info: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._dead: str | None = None
        self._errlog: Any = None
        self._closing: set[asyncio.Task[None]] = set()
        self._calls: dict[int, _Call] = {}
        self._services: RunServices | None = None  # of the run that connected (no call in flight)
        self._http_status: list[int] = []  # statuses of failed HTTP requests, latest last
        self._startup: dict[str, Any] | None = None  # the `mcp_server` event of the start-up
        self._announced: set[int] = set()  # the runs (id of their services) told of it

    @property
    def connected(self) -> bool:
        """True while a live session is open."""
        return self._session is not None and self._dead is None

    # ------------------------------------------------------------------ connecting

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        server, name = self.server, self.name
        if server.command is not None:
            from mcp import StdioServerParameters, stdio_client

            env = {
                k: expand_vars(v, self.env, server=name, where=f"env.{k}")
                for k, v in server.env.items()
            }
            cwd = None
            if server.cwd is not None:
                cwd = Path(server.cwd)
                cwd = cwd if cwd.is_absolute() else self.base_dir / cwd
            _bound_sdk_shutdown()
            install_line_reader()  # linear in a line's length, and bounded (mcp_lines.py)
            params = StdioServerParameters(
                command=server.command,
                args=list(server.args),
                env=env or None,
                cwd=cwd,
                # a line of invalid UTF-8 on stdout is one unparsable line (skipped), not a
                # reader that dies and leaves every call waiting out its timeout
                encoding_error_handler="replace",
            )
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            return stdio_client(params, errlog=self._errlog)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = {
            k: expand_vars(v, self.env, server=name, where=f"headers.{k}")
            for k, v in server.headers.items()
        }
        auth = None
        if server.oauth is not None:
            auth = oauth_provider(
                name, server, env=self.env, base_dir=self.base_dir, handlers=self.oauth_handlers
            )
        client = create_mcp_http_client(headers=headers or None, auth=auth)
        statuses = self._http_status

        async def on_response(response: Any) -> None:
            if response.status_code in (401, 403):
                statuses.append(response.status_code)

        client.event_hooks["response"].append(on_response)
        return _http_transport(streamable_http_client(server.url or "", http_client=client), client)

    def _session_callbacks(self) -> dict[str, Any]:
        """The SDK session's callbacks for what the server may ask or tell (see the module doc)."""
        callbacks: dict[str, Any] = {
            "logging_callback": self._on_log,
            "message_handler": self._on_message,
        }
        if self.server.elicitation != "decline":
            callbacks["elicitation_callback"] = self._on_elicit
        if self.server.sampling is not False:
            callbacks["sampling_callback"] = self._on_sample
        return callbacks

    async def _owner(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        # the SDK's first import takes a second or more (thousands of pydantic models): in a
        # thread, so the loop keeps running — the run's deadlines, the pre-run argument check's
        # bounded wait and other servers' connections are not held up by it
        await asyncio.to_thread(importlib.import_module, "mcp")
        from mcp import ClientSession
        from mcp.types import Implementation

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        client_info=Implementation(name="flowc", version=__version__),
                        **self._session_callbacks(),
                    )
                )
                init = await session.initialize()
                self.server_info = getattr(init, "server_info", None)
                caps = getattr(init, "capabilities", None)
                self._tools = await _list_all(session.list_tools, "tools")
                if getattr(caps, "resources", None) is not None:
                    self.resources = await _list_all(session.list_resources, "resources", True)
                    self.resource_templates = await _list_all(
                        session.list_resource_templates, "resource_templates", True
                    )
                if getattr(caps, "prompts", None) is not None:
                    self.prompts = await _list_all(session.list_prompts, "prompts", True)
                if getattr(caps, "logging", None) is not None:
                    with contextlib.suppress(Exception), warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # deprecated in 2026-07-28 only
                        await session.set_logging_level("info")
                self._session = session
                if not ready.done():
                    ready.set_result(None)
                await stop.wait()
        except BaseException as exc:  # reported through `ready` or on the next call
            if not ready.done():
                if isinstance(exc, asyncio.CancelledError):
                    ready.cancel()
                else:
                    ready.set_exception(exc)
            elif self._dead is None and not stop.is_set():
                self._dead = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._session = None

    async def connect(self) -> None:
        """Start the server and initialize the session once (later calls return at once).

        Emits an ``mcp_server`` event (``state: started`` with the tool count, or ``failed``)
        into the trace of the run that connects.  Raises RunError(tool_error) when it cannot
        start or initialize within ``connect_timeout`` (the message ends with the tail of the
        server's stderr, when there is one, or says what an HTTP 401/403 means).
        """
        if self._dead is not None:
            self._announce(run_services())
            raise self._unavailable()
        if self._session is not None:
            return
        async with self._lock:
            if self._session is not None:
                return
            if self._dead is not None:
                raise self._unavailable()
            self._services = run_services()
            # Importing the SDK takes a second or more: on a worker thread, so the event loop
            # (step timeouts, the deadline, Ctrl-C) keeps running meanwhile.
            await run_in_daemon_thread(_import_sdk)
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[None] = loop.create_future()
            # Nobody may be left to read `ready` (the connecting step was cancelled): retrieve its
            # outcome so asyncio never logs "Future exception was never retrieved".
            ready.add_done_callback(_retrieve)
            self._stop = asyncio.Event()
            self._task = asyncio.create_task(
                self._owner(ready, self._stop), name=f"mcp-{self.name}"
            )
            t0 = time.monotonic()
            try:
                await asyncio.wait_for(asyncio.shield(ready), self.server.connect_timeout)
            except RunError as exc:
                await self._abandon()
                self._event_failed(t0, exc.message)
                raise
            except TimeoutError:
                await self._abandon()
                self._dead = f"did not start within {self.server.connect_timeout:g}s"
                self._event_failed(t0, self._dead)
                raise self._unavailable() from None
            except Exception as exc:  # noqa: BLE001 - spawn failure, handshake error, …
                await self._abandon()
                self._dead = self._explain(exc)
                self._event_failed(t0, self._dead)
                raise self._unavailable() from None
            except asyncio.CancelledError:
                # The connecting step timed out or was cancelled: give the half-open connection up
                # (aclose waits for it, bounded); a later call starts afresh.
                if self._task is not None and not self._task.done():
                    self._task.cancel()
                    self._closing.add(self._task)
                self._task = None
                raise
            info = self.server_info
            self._startup = {
                "server": self.name,
                "state": "started",
                "transport": self.server.transport,
                "server_info": {"name": info.name, "version": info.version} if info else None,
                "tools": len(self._tools or []),
                "resources": len(self.resources),
                "prompts": len(self.prompts),
                "elapsed_ms": round((time.monotonic() - t0) * 1000, 1),
            }
            self._announce(self._services)

    def _announce(self, services: RunServices | None) -> None:
        """Put the server's start-up into the trace of the run ``services`` belong to, once per
        run (a connection made before the run started is announced at its first call)."""
        if services is None or self._startup is None or id(services) in self._announced:
            return
        self._announced.add(id(services))
        with contextlib.suppress(Exception):
            services.emit("mcp_server", "", dict(self._startup))

    def _event_failed(self, t0: float, error: str) -> None:
        self._startup = {
            "server": self.name,
            "state": "failed",
            "transport": self.server.transport,
            "error": error,
            "elapsed_ms": round((time.monotonic() - t0) * 1000, 1),
        }
        self._announce(self._services)

    def _explain(self, exc: BaseException) -> str:
        """What went wrong, in words: an HTTP 401/403 of the server says what to configure."""
        message = _describe(exc)
        if self._http_status:
            status = self._http_status[-1]
            message = _auth_message(self.name, status, self.server.oauth is not None, message)
        return message

    async def _abandon(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await _wind_down({self._task}, CLOSE_TIMEOUT)
        self._task = None

    def _stderr_tail(self) -> str:
        if self._errlog is None:
            return ""
        try:
            self._errlog.seek(0)
            text = self._errlog.read()
        except (OSError, ValueError):
            return ""
        # redacted before the cut: a secret the server prints is never shown, not even in part
        tail = stderr_tail(redact(text))
        return f"; server stderr: {tail}" if tail else ""

    def _unavailable(self) -> RunError:
        return RunError(
            Code.TOOL_ERROR,
            f"MCP server '{self.name}' is not available: {self._dead}{self._stderr_tail()}",
        )

    # ------------------------------------------------------------------ events, server requests

    def _current(self) -> _Call | None:
        """The call a server request most likely belongs to: the latest one in flight."""
        return next(reversed(self._calls.values()), None) if self._calls else None

    def _emit(self, kind: str, path: str, **data: Any) -> None:
        call = self._current()
        services = call.services if call is not None else self._services
        if services is None:
            return
        if not path and call is not None:
            path = call.path
        with contextlib.suppress(Exception):  # a trace sink never fails the server's request
            services.emit(kind, path, {"server": self.name, **data})

    async def _on_log(self, params: Any) -> None:
        data = params.data
        self._emit(
            "mcp_log",
            "",
            level=str(params.level),
            logger=params.logger,
            data=data
            if isinstance(data, str | int | float | bool | type(None))
            else _jsonable(data),
        )

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):  # a transport-level problem: the call that waits reports
            return
        await asyncio.sleep(0)

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        call = self._current()
        services = call.services if call is not None else self._services
        return await elicit(
            self.name,
            self.server.elicitation,
            params,
            services,
            call.path if call is not None else "",
        )

    async def _on_sample(self, context: Any, params: Any) -> Any:
        call = self._current()
        services = call.services if call is not None else self._services

        return await sample(
            self.name, self.server.sampling, params, services, call.path if call else ""
        )

    async def aclose(self) -> None:
        """Close the session and stop the server; safe to repeat.

        Bounded: an open session gets :data:`CLOSE_TIMEOUT` to shut down cleanly, a connection
        still starting is cancelled at once; a task that has not finished
        :data:`CANCEL_GRACE` after its cancellation is abandoned (the SDK kills the server
        process within :data:`SERVER_EXIT_GRACE` of closing its stdin, then SIGTERM/SIGKILL).
        A later call connects again (a new run reuses the catalog)."""
        task, stop = self._task, self._stop
        self._task = None
        tasks, self._closing = self._closing, set()
        if stop is not None:
            stop.set()
        if task is not None and not task.done():
            if self._session is None:  # still starting: a hung server never answers
                task.cancel()
            tasks.add(task)
        await _wind_down(tasks, CLOSE_TIMEOUT)
        self._session, self._tools, self._dead = None, None, None
        self.resources, self.resource_templates, self.prompts = [], [], []
        self._services = None
        self._http_status.clear()
        self._startup = None
        self._announced.clear()
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()
            self._errlog = None


async def _list_all(method: Any, attr: str, optional: bool = False) -> list[Any]:
    """Every page of a ``tools/list``-like listing.  ``optional``: a server that does not
    implement it (method not found, …) lists nothing instead of failing the connection."""
    from mcp.types import PaginatedRequestParams

    items: list[Any] = []
    cursor = None
    for _ in range(1000):  # a server that never stops paging is cut off
        try:
            page = await method(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        except Exception:
            if optional:
                return items
            raise
        items.extend(getattr(page, attr, None) or [])
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            break
    return items


def stderr_tail(text: str, limit: int = 600) -> str:
    """The part of a server's stderr that says why it failed: the last non-empty lines, kept
    whole from the end (the cause of a crash — a traceback's last line — comes last), joined by
    `` | `` and cut at the front to ``limit`` characters."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    picked: list[str] = []
    size = 0
    for line in reversed(lines[-8:]):
        if picked and size + len(line) + 3 > limit:
            break
        picked.insert(0, line)
        size += len(line) + 3
    out = " | ".join(picked)
    return out if len(out) <= limit else "…" + out[-(limit - 1) :]


def _auth_message(server: str, status: int, has_oauth: bool, detail: str) -> str:
    """What an HTTP 401/403 from MCP server ``server`` means and what to configure."""
    if status == 401:
        if has_oauth:
            return (
                f"the server refused the credentials (HTTP 401 Unauthorized) after OAuth "
                f"authorization ({detail})"
            )
        return (
            "the server requires authorization (HTTP 401 Unauthorized): add an "
            f"[mcp.{server}.oauth] table to flow.toml (OAuth 2.1), or an Authorization header "
            f"under [mcp.{server}] headers"
        )
    return (
        "the server refused access (HTTP 403 Forbidden): the credentials are valid but lack the "
        f"permission or scope this needs ({detail})"
        + ("" if has_oauth else f"; check the token in [mcp.{server}] headers")
    )


async def _wind_down(tasks: set[asyncio.Task[None]], timeout: float) -> None:
    """Wait up to ``timeout`` s for ``tasks``, cancel those not cancelled yet, wait
    :data:`CANCEL_GRACE` more, then abandon them; their outcomes (exceptions, cancellation) are
    retrieved, never raised.  A task is never cancelled twice (that would break the SDK's shielded
    server shutdown)."""
    pending = {t for t in tasks if not t.done()}
    if pending:
        _, pending = await asyncio.wait(pending, timeout=timeout)
    fresh = {t for t in pending if not t.cancelling()}
    for t in fresh:
        t.cancel()
    if fresh:
        await asyncio.wait(fresh, timeout=CANCEL_GRACE)
    for t in tasks:
        if t.done():
            _retrieve(t)
        else:
            t.add_done_callback(_retrieve)


def _retrieve(fut: asyncio.Future[Any]) -> None:
    """Mark the outcome of ``fut`` as retrieved (no "exception was never retrieved" log)."""
    if not fut.cancelled():
        fut.exception()


def _import_sdk() -> None:
    """Import the parts of the MCP SDK a connection uses (see :meth:`McpConnection.connect`)."""
    import mcp  # noqa: F401
    import mcp.client.stdio  # noqa: F401
    import mcp.client.streamable_http  # noqa: F401
    import mcp.shared._httpx_utils  # noqa: F401
    import mcp.types  # noqa: F401


def _bound_sdk_shutdown() -> None:
    """Shorten the SDK's shutdown grace periods for stdio servers to :data:`SERVER_EXIT_GRACE`.

    ``mcp.client.stdio`` reads them as module globals at shutdown; a well-behaved server exits as
    soon as its stdin closes, so only a hung one is affected (it is SIGTERMed, then SIGKILLed)."""
    import mcp.client.stdio as sdk_stdio

    for attr, bound in (
        ("PROCESS_TERMINATION_TIMEOUT", SERVER_EXIT_GRACE),
        ("FORCE_KILL_TIMEOUT", SERVER_KILL_GRACE),
    ):
        if isinstance(getattr(sdk_stdio, attr, None), int | float):
            setattr(sdk_stdio, attr, min(getattr(sdk_stdio, attr), bound))


@contextlib.asynccontextmanager
async def _http_transport(inner: Any, client: Any) -> Any:
    async with client:
        async with inner as streams:
            yield streams[0], streams[1]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        return f"cannot start the server: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")
    return str(message)
