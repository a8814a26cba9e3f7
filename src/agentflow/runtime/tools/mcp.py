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
(:func:`~.mcp_elicit.elicit`, ``[mcp.NAME] elicitation``), a sampling request to a model role
(``[mcp.NAME] sampling``, usage counted in the run's), and the server's start-up, log messages
and progress notifications become ``mcp_server`` / ``mcp_log`` / ``mcp_progress`` trace events.
A server's resources and prompts are offered as the tools ``NAME__read_resource`` and
``NAME__get_prompt`` (when it has any and no tool of its own takes those names).  Remote servers
may authenticate with OAuth 2.1 (``[mcp.NAME.oauth]``, :mod:`.mcp_auth`).

The pieces: :mod:`.mcp_session` (the transport, the session's lifecycle, what the server asks
or tells), this module's :class:`McpConnection` (the calls made over the session: tools, MCP
tasks, resources, prompts) and :class:`McpHub`, :mod:`.mcp_tools` (a server's tools, resources
and prompts as catalog tools, results as JSON), :mod:`.mcp_elicit` and :mod:`.mcp_sampling` (a
server's elicitation and sampling requests), :mod:`.mcp_lines` and :mod:`.mcp_auth`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentflow.core.vocabulary import Code
from agentflow.errors import RunError
from agentflow.runtime.config import McpServer
from agentflow.runtime.tools.catalog import Tool, run_services
from agentflow.runtime.tools.mcp_auth import expand_vars
from agentflow.runtime.tools.mcp_session import McpSession, _Call
from agentflow.runtime.tools.mcp_tools import (
    _block,
    _catalog_tool,
    _convert,
    _Named,
    _prompt_tool,
    _resource_tool,
    _resource_value,
    needs_tasks,
    tool_name,
)

__all__ = ["McpConnection", "McpHub", "expand_vars", "tool_name"]


class McpConnection(McpSession):
    """One lazily opened connection to the MCP server ``name``.

    ``server``: its configuration; ``base_dir``: where a relative ``cwd`` is resolved;
    ``env``: the environment ``${VAR}`` references are expanded from; ``oauth_handlers``:
    overrides the OAuth redirect/callback handlers (:mod:`.mcp_auth`; the conformance client
    follows the authorization redirect itself).
    """

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


def _is_closed(exc: BaseException) -> bool:
    from mcp_types import CONNECTION_CLOSED

    code = getattr(exc, "code", None)
    return code == CONNECTION_CLOSED or "closed" in str(exc).lower()


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
