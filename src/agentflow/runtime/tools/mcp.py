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

What the server may ask of the run goes through the run's :class:`RunServices` (the task that
calls a tool carries them): an elicitation request is put to the run's interlocutor
(:func:`elicit`, ``[mcp.NAME] elicitation``), a sampling request to a model role
(``[mcp.NAME] sampling``, usage counted in the run's), and the server's start-up, log messages
and progress notifications become ``mcp_server`` / ``mcp_log`` / ``mcp_progress`` trace events.
A server's resources and prompts are offered as the tools ``NAME__read_resource`` and
``NAME__get_prompt`` (when it has any and no tool of its own takes those names).  Remote servers
may authenticate with OAuth 2.1 (``[mcp.NAME.oauth]``, :mod:`.mcp_auth`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import logging
import re
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
from agentflow.runtime.hooks import NO_ANSWER, AskRequest
from agentflow.runtime.tools.catalog import (
    RunServices,
    Tool,
    ToolContext,
    run_in_daemon_thread,
    run_services,
)
from agentflow.runtime.tools.mcp_auth import expand_vars, oauth_provider
from agentflow.runtime.tools.mcp_lines import install as install_line_reader
from agentflow.runtime.tools.mcp_sampling import sample

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
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, name: str) -> str:
    """The catalog name of MCP tool ``name`` of ``server``: ``server__name``, with characters model
    APIs reject (anything but letters, digits, ``_`` and ``-``) replaced by ``_``."""
    return f"{server}__{_UNSAFE.sub('_', name)}"


class _Call:
    """One tool call in flight: whose run it serves and where (for server requests and events)."""

    __slots__ = ("services", "path", "tool")

    def __init__(self, services: RunServices | None, path: str, tool: str) -> None:
        self.services, self.path, self.tool = services, path, tool


class McpConnection:
    """One lazily opened connection to the MCP server ``name``.

    ``server``: its configuration; ``base_dir``: where a relative ``cwd`` is resolved;
    ``env``: the environment ``${VAR}`` references are expanded from; ``oauth_handlers``:
    overrides the OAuth redirect/callback handlers (:mod:`.mcp_auth`; the conformance client
    follows the authorization redirect itself).
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

    # ------------------------------------------------------------------ tools

    async def list_tools(self) -> list[Any]:
        """The server's tools (``mcp.types.Tool``), listed once per connection."""
        await self.connect()
        return list(self._tools or [])

    async def call(self, name: str, arguments: dict[str, Any], path: str = "") -> Any:
        """Call tool ``name`` (the server's own name) with ``arguments``; the JSON-able result.

        ``path``: the calling step's path (server requests and notifications during the call
        are reported under it).  The result is the structured content when the server sends one
        (unwrapping the SDK's ``{"result": x}`` wrapper of non-object returns), else the text
        content — parsed as JSON when it is a JSON object or array — or a list of content blocks
        (MCP's own field names: ``mimeType``). Raises RunError(tool_error) for a tool error or
        a dead server, RunError(timeout) past ``timeout``.
        """
        await self.connect()
        session = self._session
        if session is None:
            raise self._unavailable()
        timeout = self.server.timeout
        call = _Call(run_services(), path, name)
        self._announce(call.services)
        key = id(call)
        self._calls[key] = call

        async def progress(value: float, total: float | None, message: str | None) -> None:
            data: dict[str, Any] = {"tool": name, "progress": value}
            if total is not None:
                data["total"] = total
            if message:
                data["message"] = message
            if call.services is not None:
                with contextlib.suppress(Exception):
                    call.services.emit("mcp_progress", path, {"server": self.name, **data})

        try:
            if needs_tasks(self._tool(name)):
                work = self._call_as_task(session, name, arguments, timeout)
            else:
                work = session.call_tool(
                    name, arguments, read_timeout_seconds=timeout, progress_callback=progress
                )
            result = await self._unless_dead(work, timeout + 1.0)
        except TimeoutError:
            raise RunError(
                Code.TIMEOUT, f"MCP tool {self.name}__{name} did not answer within {timeout:g}s"
            ) from None
        except Exception as exc:  # noqa: BLE001 - MCPError, broken streams
            from mcp_types import REQUEST_TIMEOUT

            if getattr(exc, "code", None) == REQUEST_TIMEOUT:
                raise RunError(
                    Code.TIMEOUT, f"MCP tool {self.name}__{name} did not answer within {timeout:g}s"
                ) from None
            message = self._explain(exc)
            if _is_closed(exc) or not self.connected:
                self._dead = self._dead or f"the connection closed ({message})"
                raise self._unavailable() from None
            raise RunError(Code.TOOL_ERROR, f"MCP tool {self.name}__{name}: {message}") from None
        finally:
            self._calls.pop(key, None)
        tool = self._tool(name)
        if result.is_error:
            _convert(result, _Named(f"MCP tool {tool_name(self.name, name)}"))
        return _convert(result, tool)

    async def _call_as_task(
        self, session: Any, name: str, arguments: dict[str, Any], timeout: float
    ) -> Any:
        """Call a tool that runs only as an MCP task (2025-11-25): ``tools/call`` with a
        ``task`` asks the server to start it, ``tasks/result`` waits for its result (the server
        sends its elicitation and sampling requests meanwhile, answered like any other).  A
        call given up (timeout, cancellation) cancels the task, best effort."""
        from mcp.types import (
            CallToolResult,
            CancelTaskRequest,
            CancelTaskRequestParams,
            CreateTaskResult,
            EmptyResult,
            GetTaskPayloadRequest,
            GetTaskPayloadRequestParams,
        )

        # The SDK's call_tool reads the answer as a CallToolResult; a task's first answer is a
        # CreateTaskResult, so the request goes through the session's dispatcher itself.
        data = {
            "method": "tools/call",
            "params": {
                "name": name,
                "arguments": arguments,
                "task": {"ttl": int(timeout * 1000)},
            },
        }
        opts: dict[str, Any] = {"timeout": timeout}
        session._stamp(data, opts)
        raw = await session._dispatcher.send_raw_request("tools/call", data["params"], opts)
        task_id = CreateTaskResult.model_validate(raw, by_name=False).task.task_id
        try:
            return await session.send_request(
                GetTaskPayloadRequest(params=GetTaskPayloadRequestParams(task_id=task_id)),
                CallToolResult,
                request_read_timeout_seconds=timeout,
            )
        except BaseException:
            with contextlib.suppress(Exception):
                cancel = CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id))
                await asyncio.wait_for(
                    asyncio.shield(session.send_request(cancel, EmptyResult)), 2.0
                )
            raise

    async def read_resource(self, uri: str) -> Any:
        """The contents of resource ``uri``: its text (parsed when it is JSON), or
        ``{uri, mimeType, blob}`` for binary contents; a list when the server sends several."""
        await self.connect()
        session = self._session
        if session is None:
            raise self._unavailable()
        try:
            result = await asyncio.wait_for(session.read_resource(uri), self.server.timeout)
        except TimeoutError:
            raise RunError(
                Code.TIMEOUT, f"MCP server '{self.name}' did not send resource {uri} in time"
            ) from None
        except Exception as exc:  # noqa: BLE001 - MCPError (unknown resource, …)
            raise RunError(
                Code.TOOL_ERROR, f"MCP server '{self.name}': resource {uri}: {self._explain(exc)}"
            ) from None
        items = [_resource_value(c) for c in result.contents]
        return items[0] if len(items) == 1 else items

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None) -> Any:
        """Prompt ``name`` filled with ``arguments``: ``{description?, messages: [{role,
        content}]}`` (text contents as text, other blocks with MCP's field names)."""
        await self.connect()
        session = self._session
        if session is None:
            raise self._unavailable()
        args = {k: v if isinstance(v, str) else json.dumps(v) for k, v in (arguments or {}).items()}
        try:
            result = await asyncio.wait_for(
                session.get_prompt(name, args or None), self.server.timeout
            )
        except TimeoutError:
            raise RunError(
                Code.TIMEOUT, f"MCP server '{self.name}' did not send prompt {name} in time"
            ) from None
        except Exception as exc:  # noqa: BLE001
            raise RunError(
                Code.TOOL_ERROR, f"MCP server '{self.name}': prompt {name}: {self._explain(exc)}"
            ) from None
        messages = []
        for m in result.messages:
            block = m.content
            content = block.text if getattr(block, "type", "") == "text" else _block(block)
            messages.append({"role": m.role, "content": content})
        out: dict[str, Any] = {"messages": messages}
        if result.description:
            out["description"] = result.description
        return out

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


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return str(value)


def _block(block: Any) -> Any:
    """A content block with MCP's own field names (``mimeType``), as JSON."""
    return block.model_dump(mode="json", by_alias=True, exclude_none=True)


def _resource_value(contents: Any) -> Any:
    text = getattr(contents, "text", None)
    if text is not None:
        mime = getattr(contents, "mime_type", None) or ""
        if mime.endswith("json"):
            with contextlib.suppress(ValueError):
                return json.loads(text)
        return text
    return _block(contents)


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


def _is_closed(exc: BaseException) -> bool:
    from mcp_types import CONNECTION_CLOSED

    code = getattr(exc, "code", None)
    return code == CONNECTION_CLOSED or "closed" in str(exc).lower()


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name


def _convert(result: Any, tool: Any) -> Any:
    text = "\n".join(
        getattr(block, "text", "")
        for block in result.content
        if getattr(block, "type", "") == "text"
    )
    if result.is_error:
        label = getattr(tool, "name", None) or "the MCP tool"
        raise RunError(Code.TOOL_ERROR, f"{label}: {text or 'the tool reported an error'}")
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
    return [_block(b) for b in blocks]


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
        """Catalog tools of ``server`` (connecting it if needed): its tools, and
        ``SERVER__read_resource`` / ``SERVER__get_prompt`` when it has resources / prompts.
        Raises RunError(tool_error)."""
        conn = self.connections[server]
        out = [_catalog_tool(conn, mcp_tool) for mcp_tool in await conn.list_tools()]
        taken = {t.name for t in out}
        if conn.resources or conn.resource_templates:
            tool = _resource_tool(conn)
            if tool.name not in taken:
                out.append(tool)
        if conn.prompts:
            tool = _prompt_tool(conn)
            if tool.name not in taken:
                out.append(tool)
        return out

    async def aclose(self) -> None:
        """Close every open connection (in parallel)."""
        await asyncio.gather(*(c.aclose() for c in self.connections.values()))


def needs_tasks(mcp_tool: Any) -> bool:
    """Whether the MCP tool can only run as an MCP task (``execution.taskSupport: required``):
    :meth:`McpConnection.call` then runs it as one."""
    execution = getattr(mcp_tool, "execution", None)
    return getattr(execution, "task_support", None) == "required"


def _catalog_tool(conn: McpConnection, mcp_tool: Any) -> Tool:
    original = mcp_tool.name
    tasks = needs_tasks(mcp_tool)
    name = tool_name(conn.name, original)

    async def call(args: dict[str, Any], ctx: ToolContext) -> Any:
        return await conn.call(original, args, ctx.step_path)

    schema = dict(getattr(mcp_tool, "input_schema", None) or {"type": "object"})
    schema.pop("title", None)
    description = mcp_tool.description or getattr(mcp_tool, "title", None) or original
    meta: dict[str, Any] = {
        "server": conn.name,
        "mcp_name": original,
        "idempotent": _idempotent(mcp_tool),
    }
    output_schema = getattr(mcp_tool, "output_schema", None)
    if isinstance(output_schema, dict):
        meta["output_schema"] = output_schema
    if tasks:
        meta["needs_tasks"] = True
    return Tool(
        name=name,
        description=description,
        input_schema=schema,
        func=call,
        source="mcp",
        meta=meta,
    )


def _resource_tool(conn: McpConnection) -> Tool:
    """``SERVER__read_resource(uri)``: read one of the server's resources; the description
    lists them (and the URI templates) so an agent knows what there is to read."""

    async def call(args: dict[str, Any], ctx: ToolContext) -> Any:
        uri = args.get("uri")
        if not isinstance(uri, str) or not uri:
            raise RunError(Code.TOOL_ERROR, "`uri` must be a non-empty string")
        return await conn.read_resource(uri)

    lines = [f"Read a resource of MCP server '{conn.name}' by its URI."]
    for r in conn.resources[:30]:
        what = r.description or r.title or r.name or ""
        lines.append(f"- {r.uri}" + (f": {_one_line(what)}" if what else ""))
    if len(conn.resources) > 30:
        lines.append(f"- … ({len(conn.resources) - 30} more)")
    for t in conn.resource_templates[:10]:
        what = t.description or t.name or ""
        lines.append(f"- {t.uri_template}" + (f": {_one_line(what)}" if what else ""))
    return Tool(
        name=f"{conn.name}__read_resource",
        description="\n".join(lines),
        input_schema={
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "the resource's URI"}},
            "required": ["uri"],
            "additionalProperties": False,
        },
        func=call,
        source="mcp",
        meta={"server": conn.name, "kind": "resources"},
    )


def _prompt_tool(conn: McpConnection) -> Tool:
    """``SERVER__get_prompt(name, arguments?)``: one of the server's prompts, filled in."""
    names = [p.name for p in conn.prompts]

    async def call(args: dict[str, Any], ctx: ToolContext) -> Any:
        name = args.get("name")
        if not isinstance(name, str) or name not in names:
            raise RunError(
                Code.TOOL_ERROR,
                f"MCP server '{conn.name}' has no prompt {name!r} (it has: {', '.join(names)})",
            )
        arguments = args.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise RunError(Code.TOOL_ERROR, "`arguments` must be an object")
        return await conn.get_prompt(name, arguments)

    lines = [f"Get a prompt of MCP server '{conn.name}', filled with its arguments."]
    for p in conn.prompts[:30]:
        params = ", ".join(
            a.name + ("" if a.required else "?") for a in (getattr(p, "arguments", None) or [])
        )
        what = p.description or p.title or ""
        lines.append(f"- {p.name}({params})" + (f": {_one_line(what)}" if what else ""))
    return Tool(
        name=f"{conn.name}__get_prompt",
        description="\n".join(lines),
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": names},
                "arguments": {"type": "object", "additionalProperties": {"type": "string"}},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        func=call,
        source="mcp",
        meta={"server": conn.name, "kind": "prompts"},
    )


def _one_line(text: str, limit: int = 100) -> str:
    first = " ".join(str(text).split())
    return first if len(first) <= limit else first[: limit - 1] + "…"


# ---------------------------------------------------------------------------- server requests


async def elicit(
    server: str, policy: str, params: Any, services: RunServices | None, path: str
) -> Any:
    """Answer an elicitation request of MCP server ``server`` (``mcp.types.ElicitResult``).

    ``policy`` (``[mcp.NAME] elicitation``): ``ask`` puts each field of the requested form to
    the run's interlocutor (the hook of ``ask`` steps, serialized with them); ``defaults``
    answers with the schema's defaults without asking; ``decline`` never reaches here (the
    client then does not offer elicitation at all).  An unanswered question (no interlocutor,
    as in CI, or an empty answer) takes the field's default, as an ``ask``'s ``when_unanswered:
    default`` does; a required field left without a value declines the request.  URL-mode
    requests are declined (flowc opens no browser for a server).  Each answer is an ``ask``
    trace event (``source: mcp``).
    """
    from mcp.types import ElicitRequestURLParams, ElicitResult

    def event(**data: Any) -> None:
        if services is not None:
            with contextlib.suppress(Exception):
                services.emit("ask", path, {"source": "mcp", "server": server, **data})

    if isinstance(params, ElicitRequestURLParams):
        event(question=params.message, url=params.url, answered=False)
        return ElicitResult(action="decline")
    schema: dict[str, Any] = (
        params.requested_schema if isinstance(params.requested_schema, dict) else {}
    )
    raw_props = schema.get("properties")
    props: dict[str, Any] = raw_props if isinstance(raw_props, dict) else {}
    required = set(schema.get("required") or [])
    interlocutor = services.interlocutor if services is not None and policy == "ask" else None
    content: dict[str, Any] = {}
    for field_name, sub in props.items():
        sub = sub if isinstance(sub, dict) else {}
        answer: Any = NO_ANSWER
        if interlocutor is not None:
            label = sub.get("title") or sub.get("description") or field_name
            question = params.message if len(props) == 1 else f"{params.message} — {label}"
            choices = _elicit_choices(sub)
            value_schema = {k: v for k, v in sub.items() if k not in ("title", "default")}
            async with services.ask_lock:  # type: ignore[union-attr]
                answer = await _maybe_await(
                    interlocutor(
                        AskRequest(question, value_schema or None, choices, path, [server])
                    )
                )
            if answer is not NO_ANSWER and choices is None and sub.get("type") == "array":
                if isinstance(answer, str):
                    answer = [a.strip() for a in answer.split(",") if a.strip()]
        if answer is NO_ANSWER:
            if "default" in sub:
                content[field_name] = sub["default"]
                event(
                    question=params.message, field=field_name, answer=sub["default"], answered=False
                )
            elif field_name in required:
                event(question=params.message, field=field_name, answered=False)
                return ElicitResult(action="decline")
            continue
        problem = _check_value(answer, sub)
        if problem:
            event(question=params.message, field=field_name, answered=True, error=problem)
            return ElicitResult(action="decline")
        content[field_name] = answer
        event(question=params.message, field=field_name, answer=_jsonable(answer), answered=True)
    return ElicitResult(action="accept", content=content)


def _elicit_choices(sub: dict[str, Any]) -> list[Any] | None:
    if isinstance(sub.get("enum"), list):
        return list(sub["enum"])
    for key in ("oneOf", "anyOf"):
        options = sub.get(key)
        if isinstance(options, list) and all(isinstance(o, dict) and "const" in o for o in options):
            return [o["const"] for o in options]
    items = sub.get("items") if isinstance(sub.get("items"), dict) else None
    if items is not None:
        return None
    return None


def _check_value(value: Any, schema: dict[str, Any]) -> str | None:
    import jsonschema

    try:
        jsonschema.validate(value, {k: v for k, v in schema.items() if k != "default"})
    except jsonschema.ValidationError as e:
        return e.message
    except jsonschema.SchemaError:
        return None
    return None


async def _maybe_await(value: Any) -> Any:

    return await value if inspect.isawaitable(value) else value


def _idempotent(mcp_tool: Any) -> bool:
    """Whether the server says calling the tool again is harmless (its ``readOnlyHint`` or
    ``idempotentHint`` annotation; MCP's default for both is false)."""
    annotations = getattr(mcp_tool, "annotations", None)
    if annotations is None:
        return False
    hints = ("read_only_hint", "idempotent_hint", "readOnlyHint", "idempotentHint")
    return any(getattr(annotations, hint, None) is True for hint in hints)


__all__ = ["McpConnection", "McpHub", "expand_vars", "tool_name"]
