"""The tool catalog (docs/spec/RUNTIME.md §4): name → async callable + JSON Schema input.

Tool names are ``prefix__name``: ``builtin__*`` (the file tools of :mod:`.builtin`), ``user__*``
(functions the user registers), ``plan__*`` (plans), and ``SERVER__tool`` (MCP servers, or any prefix
registered through the Python API, which then counts as configured).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import re
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow.core.vocabulary import Code
from agentflow.errors import RunError
from agentflow.runtime.models.base import ToolSpec

ToolFunc = Callable[[dict[str, Any], "ToolContext"], Awaitable[Any]]

#: The builtin tools that write; the default policy leaves them out (docs/spec/RUNTIME.md §4).
WRITE_TOOLS = frozenset({"builtin__write_file", "builtin__edit_file"})


@dataclass
class ToolContext:
    """What a tool call may touch.

    ``workspace``: the run's workspace root (file tools are confined to it). ``write_scope``: the
    directories/files write tools may write (a directory covers its subtree), relative to the
    workspace or absolute; ``None`` = no scope restriction. ``step_path``: the caller's step path.
    """

    workspace: Path
    write_scope: list[Path] | None = None
    step_path: str = ""


@dataclass
class RunServices:
    """What a tool may ask of the run that called it (MCP elicitation, sampling, notifications).

    ``emit(kind, path, data)``: add an event to the run's trace (``path``: a step path);
    ``interlocutor``: the run's ``ask`` hook (``AskRequest -> answer | NO_ANSWER``, maybe async;
    None when nobody can answer, e.g. CI); ``ask_lock``: serializes questions with the run's
    ``ask`` steps; ``router``: the run's model router (None: no model configured).
    The executor sets :data:`current_run` for the duration of a run; tools read it with
    :func:`run_services` from the task that calls them.
    """

    emit: Callable[[str, str, dict[str, Any]], None]
    interlocutor: Callable[[Any], Any] | None = None
    ask_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    router: Any = None


#: The services of the run being executed (set by ``run_plan``; None outside a run).
current_run: contextvars.ContextVar[RunServices | None] = contextvars.ContextVar(
    "agentflow_run_services", default=None
)


def run_services() -> RunServices | None:
    """The :class:`RunServices` of the run calling the current task's tool (None outside one)."""
    return current_run.get()


@dataclass
class Tool:
    """A catalog entry.

    ``func(args, ctx)`` is async and returns any JSON-able value; it raises
    ``agentflow.errors.RunError`` (``tool_error``, ``write_scope``, …) on failure. ``source`` is where
    it comes from: ``builtin`` | ``user`` | ``plan`` | ``mcp`` | a free label.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    func: ToolFunc
    source: str = "user"
    meta: dict[str, Any] = field(default_factory=dict)

    def spec(self) -> ToolSpec:
        """The ToolSpec offered to a model."""
        return ToolSpec(
            name=self.name, description=self.description, input_schema=self.input_schema
        )

    @property
    def prefix(self) -> str:
        """The ``server`` part of ``server__name`` ("" when the name has no ``__``)."""
        return self.name.split("__", 1)[0] if "__" in self.name else ""


async def run_in_daemon_thread(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """Run the sync ``fn(*args, **kwargs)`` on a fresh daemon thread and await its result.

    Unlike ``asyncio.to_thread`` the thread is not part of the loop's default executor, which
    ``asyncio.run`` joins at shutdown: a sync tool abandoned by a step timeout or the deadline
    (docs/spec/RUNTIME.md §5; its thread cannot be stopped) no longer keeps the process alive after
    the run has ended.  Context variables are copied as ``to_thread`` does.  Exceptions of ``fn``
    are re-raised here; cancelling the await abandons the thread (its result is dropped).
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def body() -> None:
        try:
            outcome = (True, context.run(fn, *args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, *outcome)

    name = getattr(fn, "__name__", "tool")
    threading.Thread(target=body, name=f"agentflow-tool-{name}", daemon=True).start()
    return await future


def ensure_async(fn: Callable[..., Any]) -> ToolFunc:
    """Wrap ``fn(args, ctx)`` so it is awaitable; sync functions run on a daemon thread
    (:func:`run_in_daemon_thread`)."""
    if inspect.iscoroutinefunction(fn):
        return fn

    async def run(args: dict[str, Any], ctx: ToolContext) -> Any:
        result = await run_in_daemon_thread(fn, args, ctx)
        if inspect.isawaitable(result):
            result = await result
        return result

    return run


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """A tool-name pattern (``*`` is the only wildcard) as an anchored regex."""
    return re.compile("^" + ".*".join(re.escape(p) for p in pattern.split("*")) + "$")


def match_pattern(pattern: str, name: str) -> bool:
    """Whether tool ``name`` matches ``pattern`` (``*`` matches any run of characters)."""
    return bool(pattern_regex(pattern).match(name))


class Catalog:
    """Name → :class:`Tool`. ``configured_prefixes``: server prefixes (e.g. ``linear``) that count
    as configured (registered tools' prefixes are added automatically; MCP servers add theirs)."""

    def __init__(self, tools: Iterable[Tool] = ()):
        self._tools: dict[str, Tool] = {}
        self.configured_prefixes: set[str] = set()
        #: prefix → async loader of that prefix's tools (MCP servers), run once by :meth:`prepare`
        self._lazy: dict[str, Callable[[], Awaitable[list[Tool]]]] = {}
        self._loaded: set[str] = set()
        self._load_locks: dict[str, asyncio.Lock] = {}
        #: plans callable as ``plan__NAME`` (the plans directory), passed to the executor
        self.plans: dict[str, Any] = {}
        #: async callables run by :meth:`aclose` (MCP connections)
        self._closers: list[Callable[[], Awaitable[None]]] = []
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool, *, replace: bool = False) -> Tool:
        """Add ``tool``; raises ValueError on a duplicate name unless ``replace``."""
        if tool.name in self._tools and not replace:
            raise ValueError(f"tool '{tool.name}' is already registered")
        tool.func = ensure_async(tool.func)
        self._tools[tool.name] = tool
        if tool.prefix:
            self.configured_prefixes.add(tool.prefix)
        return tool

    def register_function(
        self,
        name: str,
        fn: Callable[..., Any],
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        *,
        source: str = "user",
        replace: bool = False,
    ) -> Tool:
        """Register a Python function as a tool.

        ``fn`` is either ``fn(args: dict, ctx: ToolContext)`` or takes the arguments as keyword
        parameters (``fn(path=..., limit=...)``; a parameter named ``ctx`` receives the context).
        The description defaults to the docstring; the schema to an object with the parameters.
        """
        func, schema = _adapt_function(fn)
        tool = Tool(
            name=name,
            description=description or inspect.getdoc(fn) or name,
            input_schema=input_schema or schema,
            func=func,
            source=source,
        )
        return self.register(tool, replace=replace)

    def get(self, name: str) -> Tool | None:
        """The tool ``name`` or None."""
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        """All tool names, sorted."""
        return sorted(self._tools)

    def match(self, pattern: str) -> list[str]:
        """Sorted names matching ``pattern`` (``*`` wildcards anywhere; an exact name matches itself)."""
        regex = pattern_regex(pattern)
        return [name for name in sorted(self._tools) if regex.match(name)]

    def specs(self, names: Iterable[str]) -> list[ToolSpec]:
        """ToolSpecs for ``names`` (unknown names skipped), in the given order."""
        return [self._tools[n].spec() for n in names if n in self._tools]

    def copy(self) -> Catalog:
        """A shallow copy (tools, lazy sources, plans and closers shared) that can be extended
        independently."""
        other = Catalog()
        other._tools = dict(self._tools)
        other.configured_prefixes = set(self.configured_prefixes)
        other._lazy = dict(self._lazy)
        other._loaded = set(self._loaded)
        other.plans = dict(self.plans)
        other._closers = list(self._closers)
        return other

    # ------------------------------------------------------------------ lazy sources (MCP)

    def add_lazy(
        self,
        prefix: str,
        loader: Callable[[], Awaitable[list[Tool]]],
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Declare server ``prefix`` whose tools ``loader()`` lists on first need
        (docs/spec/RUNTIME.md §4: MCP servers connect lazily). The prefix counts as configured at
        once; ``close`` runs on :meth:`aclose`."""
        self._lazy[prefix] = loader
        self.configured_prefixes.add(prefix)
        if close is not None:
            self._closers.append(close)

    def add_closer(self, close: Callable[[], Awaitable[None]]) -> None:
        """Run ``close()`` on :meth:`aclose` (worker processes, connections)."""
        self._closers.append(close)

    def lazy_prefixes(self) -> list[str]:
        """Server prefixes declared with :meth:`add_lazy`, sorted."""
        return sorted(self._lazy)

    def pending(self, requests: Iterable[str] | str | None) -> list[str]:
        """Lazy prefixes not loaded yet that ``requests`` may need (see :meth:`prepare`)."""
        if requests == "none":
            return []
        if isinstance(requests, str):
            requests = [requests]
        todo = [p for p in sorted(self._lazy) if p not in self._loaded]
        if requests is None:
            return todo
        out = []
        for prefix in todo:
            for request in requests:
                head = str(request).split("__", 1)[0] if "__" in str(request) else str(request)
                if "*" in head and match_pattern(head, prefix) or head == prefix:
                    out.append(prefix)
                    break
        return out

    async def prepare(self, requests: Iterable[str] | str | None) -> None:
        """Load the lazy sources (connect the MCP servers) that ``requests`` may touch.

        ``requests``: tool names or patterns (``linear__*``, ``*__search``, ``*``), ``None`` (the
        whole catalog) or ``"none"``. A server is touched when the part before ``__`` names it or
        is a pattern matching it. Each source loads once (concurrent callers wait for the first).
        Raises RunError(tool_error) when a server cannot be reached.
        """
        for prefix in self.pending(requests):
            lock = self._load_locks.setdefault(prefix, asyncio.Lock())
            async with lock:
                if prefix in self._loaded:
                    continue
                for tool in await self._lazy[prefix]():
                    self.register(tool, replace=True)
                self._loaded.add(prefix)

    async def aclose(self) -> None:
        """Close what the catalog opened (MCP connections); the lazy sources load again on the
        next :meth:`prepare`. Safe to call more than once."""
        for close in self._closers:
            await close()
        for prefix in self._loaded & set(self._lazy):
            for name in [n for n, t in self._tools.items() if t.prefix == prefix]:
                del self._tools[name]
        self._loaded -= set(self._lazy)


def _adapt_function(fn: Callable[..., Any]) -> tuple[ToolFunc, dict[str, Any]]:
    sig = inspect.signature(fn)
    params = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    names = [p.name for p in params]
    if names[:2] == ["args", "ctx"] and len(names) == 2:
        return ensure_async(fn), {"type": "object"}
    wants_ctx = "ctx" in names
    props: dict[str, Any] = {}
    required: list[str] = []
    json_types = {
        str: "string",
        int: "integer",
        float: "number",
        bool: "boolean",
        list: "array",
        dict: "object",
    }
    hints: dict[str, Any] = {}
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except Exception:  # noqa: BLE001 - unresolvable annotations: untyped schema
        hints = {}
    for p in params:
        if p.name == "ctx":
            continue
        t = json_types.get(hints[p.name]) if p.name in hints else None
        props[p.name] = {"type": t} if t else {}
        if p.default is p.empty:
            required.append(p.name)
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    is_async = inspect.iscoroutinefunction(fn)

    async def run(args: dict[str, Any], ctx: ToolContext) -> Any:
        kwargs = dict(args)
        if wants_ctx:
            kwargs["ctx"] = ctx
        if is_async:
            return await fn(**kwargs)
        return await run_in_daemon_thread(fn, **kwargs)

    return run, schema


def glob_to_names(catalog: Catalog, patterns: Iterable[str]) -> list[str]:
    """Union of ``catalog.match(p)`` over ``patterns``, order of first appearance (helper)."""
    seen: dict[str, None] = {}
    for pattern in patterns:
        for name in catalog.match(pattern):
            seen.setdefault(name, None)
    return list(seen)


__all__ = [
    "WRITE_TOOLS",
    "Catalog",
    "RunServices",
    "current_run",
    "run_services",
    "Tool",
    "ToolContext",
    "ToolFunc",
    "ensure_async",
    "glob_to_names",
    "match_pattern",
    "policy_allows",
    "effective_tools",
]


def policy_allows(
    name: str, allowed_tools: list[str] | None, *, write_granted: bool = False
) -> bool:
    """Host policy (docs/spec/RUNTIME.md §4): ``allowed_tools`` patterns, or by default every tool
    except the builtin write tools. ``write_granted`` (an agent with a ``write`` scope) admits the
    write tools."""
    if name in WRITE_TOOLS and write_granted:
        return True
    if allowed_tools is None:
        return name not in WRITE_TOOLS
    return any(match_pattern(p, name) for p in allowed_tools)


def effective_tools(
    catalog: Catalog,
    requested: list[str] | None,
    allowed_tools: list[str] | None,
    *,
    write_granted: bool = False,
) -> list[str]:
    """Effective tool names of an agent = request ∩ policy, minus ``plan_and_execute`` (§3–4).

    ``requested``: names/patterns (None = the whole catalog). A pattern matching no catalog tool raises
    ``RunError(code="validation")`` naming it (a typo must not shrink the set silently).
    """

    if requested is None:
        names = catalog.names()
    else:
        names = []
        for pattern in requested:
            matched = catalog.match(pattern)
            if not matched:
                raise RunError(
                    code=Code.VALIDATION,
                    message=f"`tools` pattern '{pattern}' matches no tool in the catalog",
                )
            names.extend(n for n in matched if n not in names)
    return [
        n
        for n in names
        if n != "plan_and_execute" and policy_allows(n, allowed_tools, write_granted=write_granted)
    ]
