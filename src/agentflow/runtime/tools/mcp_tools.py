"""MCP's tools, resources and prompts as catalog tools (docs/mcp.md), and their results as
JSON.

:func:`tool_name` names a server's tool in the catalog (``NAME__tool``); :func:`_catalog_tool`
adapts one ``mcp.types.Tool`` (its input schema, description, ``idempotent`` and
``needs_tasks`` meta), :func:`_resource_tool` and :func:`_prompt_tool` offer a server's
resources and prompts as ``NAME__read_resource`` / ``NAME__get_prompt``. :func:`_convert` turns a
``CallToolResult`` into the step's value (structured content, text parsed as JSON when it is an
object or array, or content blocks with MCP's field names) or a ``tool_error``. The tools call
back into their :class:`~agentflow.runtime.tools.mcp.McpConnection`, which this module never
builds.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import TYPE_CHECKING, Any

from agentflow.core.vocabulary import Code
from agentflow.errors import RunError
from agentflow.runtime.tools.catalog import Tool, ToolContext

if TYPE_CHECKING:
    from agentflow.runtime.tools.mcp import McpConnection

__all__ = ["needs_tasks", "tool_name"]


_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, name: str) -> str:
    """The catalog name of MCP tool ``name`` of ``server``: ``server__name``, with characters model
    APIs reject (anything but letters, digits, ``_`` and ``-``) replaced by ``_``."""
    return f"{server}__{_UNSAFE.sub('_', name)}"


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


def _idempotent(mcp_tool: Any) -> bool:
    """Whether the server says calling the tool again is harmless (its ``readOnlyHint`` or
    ``idempotentHint`` annotation; MCP's default for both is false)."""
    annotations = getattr(mcp_tool, "annotations", None)
    if annotations is None:
        return False
    hints = ("read_only_hint", "idempotent_hint", "readOnlyHint", "idempotentHint")
    return any(getattr(annotations, hint, None) is True for hint in hints)
