"""MCP servers as catalog tools (docs/spec/RUNTIME.md §4), through the official ``mcp`` SDK (2.x).

A server configured under ``[mcp.NAME]`` (:class:`agentflow.runtime.config.McpServer`: stdio
``command``/``args``/``env``/``cwd``, or streamable HTTP ``url``/``headers``) exposes its tools as
``NAME__tool`` with the server's own input schemas and descriptions.

Lifecycle: nothing connects at load or validate time. The first time a run needs a server (an agent
whose ``tools`` request may match it, or a step naming one of its tools) :class:`McpConnection`
starts it, initializes the session and lists its tools; the connection is reused for the rest of
the run and closed by :meth:`McpHub.aclose` (``agentflow.api.run`` does that on exit).

Each connection lives in a dedicated owner task that enters and exits the SDK's context managers
(anyio cancel scopes must be exited by the task that entered them); tool calls from any task send
requests over the shared session. A call is bounded by the server's ``timeout`` (``timeout`` error);
a server that dies mid-run turns the pending and every later call into a ``tool_error`` result
(no hang, no reconnect within the run).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentflow.core.redaction import redact, register_secret
from agentflow.errors import RunError
from agentflow.runtime.config import McpServer
from agentflow.runtime.tools.catalog import Tool, ToolContext, run_in_daemon_thread

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
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, name: str) -> str:
    """The catalog name of MCP tool ``name`` of ``server``: ``server__name``, with characters model
    APIs reject (anything but letters, digits, ``_`` and ``-``) replaced by ``_``."""
    return f"{server}__{_UNSAFE.sub('_', name)}"


def expand_vars(value: str, env: Mapping[str, str], *, server: str, where: str) -> str:
    """``${VAR}`` references in ``value`` replaced from ``env``.

    Raises RunError(tool_error) naming the variable (never its value) when it is unset.
    """

    def sub(m: re.Match[str]) -> str:
        var = m.group(1)
        if var not in env:
            raise RunError(
                "tool_error",
                f"MCP server '{server}': environment variable {var} (used in [mcp.{server}] "
                f"{where}) is not set",
            )
        register_secret(env[var])  # a value given to a server is never shown
        return env[var]

    return _VAR.sub(sub, value)


class McpConnection:
    """One lazily opened connection to the MCP server ``name``.

    ``server``: its configuration; ``base_dir``: where a relative ``cwd`` is resolved;
    ``env``: the environment ``${VAR}`` references are expanded from.
    """

    def __init__(
        self, name: str, server: McpServer, *, base_dir: Path, env: Mapping[str, str]
    ) -> None:
        self.name = name
        self.server = server
        self.base_dir = base_dir
        self.env = env
        self._lock = asyncio.Lock()
        self._session: Any = None
        self._tools: list[Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._dead: str | None = None
        self._errlog: Any = None
        self._closing: set[asyncio.Task[None]] = set()

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
        client = create_mcp_http_client(headers=headers or None)
        return _http_transport(streamable_http_client(server.url or "", http_client=client), client)

    async def _owner(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                tools: list[Any] = []
                cursor = None
                while True:
                    from mcp.types import PaginatedRequestParams

                    params = PaginatedRequestParams(cursor=cursor) if cursor else None
                    listing = await session.list_tools(params=params)
                    tools.extend(listing.tools)
                    cursor = getattr(listing, "next_cursor", None)
                    if not cursor:
                        break
                self._session, self._tools = session, tools
                if not ready.done():
                    ready.set_result(None)
                await stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported through `ready` or on the next call
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

        Raises RunError(tool_error) when it cannot start or initialize within ``connect_timeout``
        (the message ends with the tail of the server's stderr, when there is one).
        """
        if self._dead is not None:
            raise self._unavailable()
        if self._session is not None:
            return
        async with self._lock:
            if self._session is not None:
                return
            if self._dead is not None:
                raise self._unavailable()
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
            try:
                await asyncio.wait_for(asyncio.shield(ready), self.server.connect_timeout)
            except RunError:
                await self._abandon()
                raise
            except TimeoutError:
                await self._abandon()
                self._dead = f"did not start within {self.server.connect_timeout:g}s"
                raise self._unavailable() from None
            except Exception as exc:  # noqa: BLE001 - spawn failure, handshake error, …
                await self._abandon()
                self._dead = _describe(exc)
                raise self._unavailable() from None
            except asyncio.CancelledError:
                # The connecting step timed out or was cancelled: give the half-open connection up
                # (aclose waits for it, bounded); a later call starts afresh.
                if self._task is not None and not self._task.done():
                    self._task.cancel()
                    self._closing.add(self._task)
                self._task = None
                raise

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
            lines = [ln for ln in self._errlog.read().splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        # redacted before the cut: a secret the server prints is never shown, not even in part
        return ("; server stderr: " + redact(" | ".join(lines[-3:]))[:500]) if lines else ""

    def _unavailable(self) -> RunError:
        return RunError(
            "tool_error",
            f"MCP server '{self.name}' is not available: {self._dead}{self._stderr_tail()}",
        )

    # ------------------------------------------------------------------ tools

    async def list_tools(self) -> list[Any]:
        """The server's tools (``mcp.types.Tool``), listed once per connection."""
        await self.connect()
        return list(self._tools or [])

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call tool ``name`` (the server's own name) with ``arguments``; the JSON-able result.

        The result is the structured content when the server sends one (unwrapping the SDK's
        ``{"result": x}`` wrapper of non-object returns), else the text content — parsed as JSON
        when it is a JSON object or array — or a list of content blocks. Raises
        RunError(tool_error) for a tool error or a dead server, RunError(timeout) past ``timeout``.
        """
        await self.connect()
        session = self._session
        if session is None:
            raise self._unavailable()
        timeout = self.server.timeout
        try:
            result = await self._unless_dead(
                session.call_tool(name, arguments, read_timeout_seconds=timeout), timeout + 1.0
            )
        except TimeoutError:
            raise RunError(
                "timeout", f"MCP tool {self.name}__{name} did not answer within {timeout:g}s"
            ) from None
        except Exception as exc:  # noqa: BLE001 - MCPError, broken streams
            from mcp_types import REQUEST_TIMEOUT

            if getattr(exc, "code", None) == REQUEST_TIMEOUT:
                raise RunError(
                    "timeout", f"MCP tool {self.name}__{name} did not answer within {timeout:g}s"
                ) from None
            message = _describe(exc)
            if _is_closed(exc) or not self.connected:
                self._dead = self._dead or f"the connection closed ({message})"
                raise self._unavailable() from None
            raise RunError("tool_error", f"MCP tool {self.name}__{name}: {message}") from None
        return _convert(result, self._tool(name))

    async def _unless_dead(self, coro: Any, timeout: float) -> Any:
        """Await ``coro`` for at most ``timeout`` seconds (TimeoutError), but give up at once —
        with the :meth:`_unavailable` error — when the connection's owner task ends meanwhile
        (the server died, its output broke the transport): a pending call never waits out its
        timeout on a connection that is gone."""
        call = asyncio.ensure_future(coro)
        owner = self._task
        if owner is None or owner.done():
            return await asyncio.wait_for(call, timeout)
        try:
            done, _ = await asyncio.wait(
                {call, owner}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except BaseException:
            call.cancel()
            raise
        if call in done:
            return call.result()
        call.cancel()
        if owner in done:
            self._dead = self._dead or "the connection closed"
            raise self._unavailable()
        raise TimeoutError

    def _tool(self, name: str) -> Any:
        for tool in self._tools or []:
            if tool.name == name:
                return tool
        return None

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
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()
            self._errlog = None


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


def _is_closed(exc: BaseException) -> bool:
    from mcp_types import CONNECTION_CLOSED

    code = getattr(exc, "code", None)
    return code == CONNECTION_CLOSED or "closed" in str(exc).lower()


def _convert(result: Any, tool: Any) -> Any:
    text = "\n".join(
        getattr(block, "text", "")
        for block in result.content
        if getattr(block, "type", "") == "text"
    )
    if result.is_error:
        raise RunError("tool_error", text or "the MCP tool reported an error")
    structured = result.structured_content
    if structured is not None:
        schema = getattr(tool, "output_schema", None) or {}
        props = schema.get("properties") if isinstance(schema, dict) else None
        if isinstance(structured, dict) and set(structured) == {"result"} and props is not None:
            if set(props) == {"result"}:
                return structured["result"]
        return structured
    blocks = list(result.content)
    if all(getattr(b, "type", "") == "text" for b in blocks):
        stripped = text.strip()
        if stripped[:1] in ("{", "["):
            try:
                return json.loads(stripped)
            except ValueError:
                pass
        return text
    return [b.model_dump(mode="json", exclude_none=True) for b in blocks]


class McpHub:
    """The MCP servers of a configuration: one :class:`McpConnection` each (opened lazily).

    ``servers``: ``Config.mcp``; ``base_dir``: directory of ``flow.toml``; ``env``: environment
    for ``${VAR}`` expansion.
    """

    def __init__(
        self, servers: Mapping[str, McpServer], *, base_dir: Path, env: Mapping[str, str]
    ) -> None:
        self.connections = {
            name: McpConnection(name, server, base_dir=base_dir, env=env)
            for name, server in servers.items()
        }

    def names(self) -> list[str]:
        """The configured server names, sorted."""
        return sorted(self.connections)

    async def tools(self, server: str) -> list[Tool]:
        """Catalog tools of ``server`` (connecting it if needed). Raises RunError(tool_error)."""
        conn = self.connections[server]
        out = []
        for mcp_tool in await conn.list_tools():
            out.append(_catalog_tool(conn, mcp_tool))
        return out

    async def aclose(self) -> None:
        """Close every open connection (in parallel)."""
        await asyncio.gather(*(c.aclose() for c in self.connections.values()))


def _catalog_tool(conn: McpConnection, mcp_tool: Any) -> Tool:
    original = mcp_tool.name

    async def call(args: dict[str, Any], ctx: ToolContext) -> Any:
        return await conn.call(original, args)

    schema = dict(getattr(mcp_tool, "input_schema", None) or {"type": "object"})
    schema.pop("title", None)
    description = mcp_tool.description or getattr(mcp_tool, "title", None) or original
    return Tool(
        name=tool_name(conn.name, original),
        description=description,
        input_schema=schema,
        func=call,
        source="mcp",
        meta={"server": conn.name, "mcp_name": original},
    )


__all__ = ["McpConnection", "McpHub", "expand_vars", "tool_name"]
