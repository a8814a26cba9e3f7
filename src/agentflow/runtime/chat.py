"""The ``flowc ask`` loop (seed 002 "The agent loop"; docs/spec/RUNTIME.md §3, §7, §9).

The chat-role model gets the question and the tool catalog — direct tools, ``plan__*`` tools (every
plan of the plans directory) and ``plan_and_execute`` — and loops::

    message + tool catalog → model
      ├─ tool calls? → execute (parallel within a round) → results → model again
      └─ text answer → done

bounded by ``max_agent_iterations`` (``[chat]`` in flow.toml, default 10).  Tool failures return into
the loop as error results (``{"error": {code, message}}``) so the model explains or works around them.
Every real dispatch — registry tools, ``plan__*`` (through the executor, one single-step run per
call) and ``plan_and_execute`` — passes the host's execution gate; a hook abort is a hard stop.
Human-authored plans run as they are (their own finish, never replanned); ``plan_and_execute`` goes
through :mod:`agentflow.runtime.planner`.

Inference cost (seed 002 cost table): direct tools = 1 + one per tool round; a plan tool with a solver
finish = 3 (chat, solver, chat); ``plan_and_execute`` = 4 + 1 per replan (chat, planner, solver, chat).

Public API::

    await ask(question, context=None, *, max_iterations=None, max_result_chars=None,
              on_progress=None, **options) -> AskResult
    await ask_with_config(question, *, config=None, workspace=None, trace=None, record=None,
                          replay=None, max_iterations=None, hooks=None, on_progress=None,
                          load_plan=None)

``context`` / ``options``: a :class:`~agentflow.runtime.context.RunContext` and its fields as
keywords (``catalog=``, ``router=``, ``config=``, ``workspace=``, ``sinks=``, ``hooks=``,
``plans=``, ``shape_cache=``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentflow.errors import ConfigError, ErrorInfo, ModelError, RunError, model_error_code
from agentflow.ir.models import Plan, Step
from agentflow.runtime.agent import assign_ids, gather_tool_results, parse_arguments
from agentflow.runtime.config import Config, load_config, missing_key_message, no_model_message
from agentflow.runtime.context import RunContext
from agentflow.runtime.events import EventBus, JsonlSink
from agentflow.runtime.executor import run_plan
from agentflow.runtime.hooks import GateCall, Hooks
from agentflow.runtime.models.base import ChatRequest, Message, ToolSpec
from agentflow.runtime.models.cassette import ReplayRouter, recording_router
from agentflow.runtime.models.router import ModelRouter
from agentflow.runtime.planner import (
    PLAN_AND_EXECUTE,
    PLAN_AND_EXECUTE_DESCRIPTION,
    PLAN_AND_EXECUTE_SCHEMA,
    _KeepOpen,
    plan_and_execute,
    planner_tools,
)
from agentflow.runtime.result import elapsed_ms, model_call_fields, usage_delta, usage_snapshot
from agentflow.runtime.shape_cache import ShapeCache, ShapeRecorder
from agentflow.runtime.tools.build import build_catalog

if TYPE_CHECKING:
    from typing import Unpack

    from agentflow.runtime.context import RunOptions
    from agentflow.runtime.tools.catalog import Catalog
    from agentflow.runtime.tools.plans import PlanLoader

__all__ = ["CHAT_SYSTEM", "AskResult", "ask", "ask_with_config", "chat_tools"]

DEFAULT_MAX_ITERATIONS = 10
DEFAULT_RESULT_CHARS = 20_000
WRAPPER_PLAN = "_ask"

CHAT_SYSTEM = """\
You are a helpful assistant that answers the user's question, calling the available tools when they \
help; call several tools at once when the calls are independent. A plan__* tool runs a prepared \
workflow and returns its result or report; plan_and_execute plans and runs a multi-step workflow for \
a goal that needs several dependent tool calls. When you have what you need, reply with the answer \
in plain text. Report only what the tool results support; if a tool failed, say so."""

#: ``on_progress(kind, text)``: kinds ``tool`` (a call starts), ``tool_done``, ``tool_error``,
#: ``report`` (a solver report of a plan), ``replan``, ``model`` (a chat round).
Progress = Callable[[str, str], Any]


@dataclass
class AskResult:
    """What :func:`ask` returns.

    - ``status``: ``ok`` (``answer`` holds the model's text), ``budget`` (``max_iterations`` rounds
      spent without a text answer), ``error`` (the chat model failed), ``aborted`` (a hook hard stop).
    - ``answer``: the final text or None. ``rounds``: chat-model inferences made.
    - ``tools_called``: ``[{tool, round, ok}]`` in call order. ``reports``: solver reports produced
      by plan tools and ``plan_and_execute`` (shown dimmed on stderr by the CLI).
    - ``error``: ``{code, message, step_path}`` or None. ``usage``: inferences and tokens of the
      whole question (chat, planner, solver, … by role). ``duration_ms``: wall time.
    """

    status: str
    answer: str | None = None
    rounds: int = 0
    tools_called: list[dict[str, Any]] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    error: ErrorInfo | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    duration_ms: int = 0

    @property
    def ok(self) -> bool:
        """True when there is an answer."""
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return {
            "status": self.status,
            "answer": self.answer,
            "rounds": self.rounds,
            "tools_called": self.tools_called,
            "reports": self.reports,
            "error": self.error.to_dict() if self.error is not None else None,
            "usage": self.usage,
            "duration_ms": self.duration_ms,
        }


class _HardStop(Exception):
    def __init__(self, error: ErrorInfo):
        super().__init__(error.message)
        self.error = error


def chat_tools(
    catalog: Catalog | None, plans: Mapping[str, Plan] | None, config: Config | None = None
) -> list[ToolSpec]:
    """The ToolSpecs offered to the chat model: catalog tools and ``plan__*`` plans under the host
    policy, then ``plan_and_execute``."""

    specs = [
        ToolSpec(name=t["name"], description=t["description"], input_schema=t["input_schema"])
        for t in planner_tools(catalog, plans, config)
    ]
    specs.append(
        ToolSpec(
            name=PLAN_AND_EXECUTE,
            description=PLAN_AND_EXECUTE_DESCRIPTION,
            input_schema=PLAN_AND_EXECUTE_SCHEMA,
        )
    )
    return specs


def _content(value: Any, cap: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if cap and len(text) > cap:
        text = text[:cap] + f"\n[truncated: result has {len(text)} characters; showing {cap}]"
    return text


def _error_content(code: str, message: str) -> str:
    return json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False)


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def ask(
    question: str,
    context: RunContext | None = None,
    *,
    max_iterations: int | None = None,
    max_result_chars: int | None = None,
    on_progress: Progress | None = None,
    **options: Unpack[RunOptions],
) -> AskResult:
    """Answer ``question`` with the chat-role tool-calling loop (see the module docstring).

    ``context`` / ``options`` (:class:`~agentflow.runtime.context.RunContext` and its fields):

    - ``catalog``/``plans``: the tools and plans offered (under ``config.policy``); ``plans``
      defaults to ``catalog.plans`` (:func:`agentflow.runtime.tools.build.build_catalog`).
    - ``router``: a ModelRouter (chat; planner/solver/repair for plans).
    - ``sinks``: event sinks (``model_call`` events of the chat model plus every event of the tool
      runs); not closed here.  ``hooks``: the host's gate / on_tool_error / interlocutor.
    - ``shape_cache``: see :func:`~agentflow.runtime.planner.plan_and_execute` (``False`` disables).

    ``max_iterations``: chat rounds (default ``config.chat.max_agent_iterations``, else 10);
    ``max_result_chars``: cap of one tool result shown to the model (default
    ``config.chat.max_result_chars``); ``on_progress(kind, text)``: progress callback (the CLI
    prints it dimmed on stderr).

    Raises ConfigError when no chat model is configured; every other failure is in the result.
    """

    ctx = RunContext.of(context, options)
    catalog, router, config = ctx.catalog, ctx.router, ctx.config
    if max_iterations is None:
        max_iterations = (
            config.chat.max_agent_iterations if config is not None else DEFAULT_MAX_ITERATIONS
        )
    if max_result_chars is None:
        max_result_chars = (
            config.chat.max_result_chars if config is not None else DEFAULT_RESULT_CHARS
        )
    if router is None:
        raise ConfigError(no_model_message(config, "chat"))
    client = router.client_for("chat")
    cache = (ShapeCache() if ctx.shape_cache is None else ctx.shape_cache) or None
    kept = [_KeepOpen(s) for s in ctx.sinks]
    bus = EventBus(kept)
    host = ctx.hooks
    plans = ctx.callable_plans
    if catalog is not None:
        try:
            await catalog.prepare(None)  # list the MCP servers' tools too
        except RunError as exc:
            if on_progress is not None:
                on_progress("warning", f"some MCP tools are unavailable: {exc.message}")
    tools = chat_tools(catalog, plans, config)
    offered = {t.name for t in tools}
    before = usage_snapshot(router)
    t0 = time.monotonic()
    out = AskResult(status="ok")

    def progress(kind: str, text: str) -> None:
        if on_progress is not None:
            on_progress(kind, text)

    def finish(status: str, answer: str | None = None, error: ErrorInfo | None = None) -> AskResult:
        out.status, out.answer, out.error = status, answer, error
        out.usage = usage_delta(router, before)
        out.duration_ms = elapsed_ms(t0)
        return out

    run_sinks: list[Any] = list(kept)
    if cache is not None:
        run_sinks.append(ShapeRecorder(cache))
    tool_runs = ctx.replace(sinks=run_sinks, plans=plans)  # one single-step run per tool call

    async def gate(name: str, args: Any, path: str) -> tuple[bool, Any]:
        """(skipped, injected result) for plan_and_execute; raises _HardStop on abort."""
        if host.gate is None:
            return False, None
        decision = host.gate(GateCall(name, args, {}, path, ["ask"]))
        if inspect.isawaitable(decision):
            decision = await decision
        if decision is not None and decision.action == "skip":
            return True, decision.value
        if decision is not None and decision.action == "abort":
            raise _HardStop(ErrorInfo("aborted", decision.message, path))
        return False, None

    async def run_tool(name: str, args: dict[str, Any], path: str) -> tuple[bool, str]:
        """One dispatch through the executor (gate, events, plan__ tools, on_tool_error)."""

        sid = re.sub(r"\W", "_", name) or "call"
        if not re.match(r"[A-Za-z_]", sid):
            sid = "_" + sid
        step = Step.model_validate({"id": sid, "tool_name": name, "input": args})
        step.compiled = args  # the model's arguments are data, never templates
        wrapper = Plan.model_validate({"name": WRAPPER_PLAN, "steps": [step]})
        result = await run_plan(wrapper, {}, tool_runs)
        if result.status == "aborted":
            raise _HardStop(result.error or ErrorInfo("aborted", "aborted"))
        if result.status == "error":
            err = result.error or ErrorInfo("tool_error", "")
            return False, _error_content(err.code, err.message)
        output = result.output
        if name.startswith("plan__"):
            plan = plans.get(name.removeprefix("plan__"))
            fin = plan.finish if plan is not None else None
            if fin is not None and fin.mode == "solver" and output:
                out.reports.append(str(output))
                progress("report", str(output))
        return True, _content(output, max_result_chars)

    async def run_plan_and_execute(args: dict[str, Any], path: str) -> tuple[bool, str]:
        goal = args.get("goal")
        if not isinstance(goal, str) or not goal.strip():
            return False, _error_content("tool_error", "plan_and_execute needs a `goal` string")
        skipped, injected = await gate(PLAN_AND_EXECUTE, args, path)
        if skipped:
            return True, _content(injected, max_result_chars)

        def relay(event: Any) -> None:
            if event.kind == "warning" and event.data.get("replan"):
                progress("replan", str(event.data.get("message", "")))

        class _Relay:
            handle = staticmethod(relay)

        ex = await plan_and_execute(
            goal,
            ctx.replace(
                sinks=[*kept, _Relay()],
                plans=plans,
                shape_cache=cache if cache is not None else False,
            ),
            path=path,
        )
        if ex.status == "aborted":
            raise _HardStop(ex.error or ErrorInfo("aborted", "aborted"))
        if not ex.ok:
            err = ex.error or ErrorInfo("tool_error", "")
            return False, _error_content(err.code, err.message)
        out.reports.append(str(ex.output))
        progress("report", str(ex.output))
        return True, _content(
            {"status": ex.status, "replans": ex.replans, "report": ex.output}, max_result_chars
        )

    async def run_call(call: Any, round_: int) -> tuple[str, str, bool]:
        """``(call id, result content, is_error)`` of one tool call."""
        name = call.name
        path = f"ask/chat.{round_}/{name}"
        if name not in offered:
            available = ", ".join(sorted(offered))
            return (
                call.id,
                _error_content(
                    "tool_denied", f"tool '{name}' is not available (available: {available})"
                ),
                True,
            )
        try:
            args = parse_arguments(call.arguments)
        except ValueError as exc:
            return (
                call.id,
                _error_content(
                    "tool_error", f"{exc}. The call was not run; send valid JSON arguments."
                ),
                True,
            )
        progress("tool", f"{name} {_short(args)}")
        if name == PLAN_AND_EXECUTE:
            ok, content = await run_plan_and_execute(args, path)
        else:
            ok, content = await run_tool(name, args, path)
        out.tools_called.append({"tool": name, "round": round_, "ok": ok})
        progress("tool_done" if ok else "tool_error", f"{name} {_short(content)}")
        return call.id, content, not ok

    messages: list[Message] = [
        Message(role="system", content=CHAT_SYSTEM),
        Message(role="user", content=question),
    ]
    for round_ in range(1, max_iterations + 1):
        started = time.monotonic()
        try:
            resp = await client.chat(ChatRequest(messages=list(messages), tools=tools))
        except ModelError as exc:
            code = model_error_code(exc)
            return finish("error", error=ErrorInfo(code, f"chat model call failed: {exc}", "ask"))
        out.rounds = round_
        bus.emit(
            "model_call",
            f"ask/chat.{round_}",
            ["ask"],
            role="chat",
            round=round_,
            **model_call_fields(resp, started),
        )
        if resp.tool_calls:
            calls = assign_ids(resp.tool_calls, round_)
            messages.append(
                Message(role="assistant", content=resp.text, tool_calls=calls, raw=resp.raw)
            )
            jobs = [asyncio.ensure_future(run_call(c, round_)) for c in calls]
            try:
                messages.extend(await gather_tool_results(calls, jobs))
            except _HardStop as stop:
                return finish("aborted", error=stop.error)
            continue
        text = (resp.text or "").strip()
        if not text:
            messages.append(
                Message(
                    role="user",
                    content="You replied with neither a tool call nor an answer. Call a tool, "
                    "or answer the question in plain text.",
                )
            )
            continue
        return finish("ok", answer=text)
    return finish(
        "budget",
        error=ErrorInfo(
            "output_validation",
            f"no answer within max_agent_iterations = {max_iterations} rounds",
            "ask",
        ),
    )


async def ask_with_config(
    question: str,
    *,
    config: Config | Path | str | None = None,
    workspace: Path | str | None = None,
    trace: Path | str | None = None,
    record: Path | str | None = None,
    replay: Path | str | None = None,
    max_iterations: int | None = None,
    hooks: Hooks | None = None,
    on_progress: Progress | None = None,
    load_plan: PlanLoader | None = None,
) -> AskResult:
    """:func:`ask` as ``flowc ask`` runs it: the configuration (a Config, a path, or None to find
    ``flow.toml``), the full catalog (:func:`~agentflow.runtime.tools.build.build_catalog`: builtin,
    user, plans directory read with ``load_plan``, MCP), a model router (``record``/``replay`` cassettes as for ``flowc
    run``), a JSON Lines ``trace``; closes the catalog's MCP connections and the trace at the end.
    With ``record``/``replay`` the planner reads a shape cache that starts empty, so a cassette
    never depends on the user's cache.

    Raises ConfigError (no model, broken configuration) and the plans directory's load errors.
    """

    if not isinstance(config, Config):
        config = load_config(config)
    router: ModelRouter
    if replay is not None:
        router = ReplayRouter(replay, config)
    elif not config.has_model():
        raise ConfigError(no_model_message(config, "chat"))
    elif (missing := missing_key_message(config, ("chat", "planner", "solver"))) is not None:
        raise ConfigError(missing)
    elif record is not None:
        router = recording_router(config, record)
    else:
        router = ModelRouter(config)
    catalog = build_catalog(config, load_plan=load_plan)
    sinks = [JsonlSink(trace)] if trace is not None else []
    scratch = None
    shape_cache: ShapeCache | None = None
    if record is not None or replay is not None:
        # a cassette must not depend on the user's cache: the planner of a recorded or replayed
        # question reads a cache that starts empty (and still learns within the question)
        import tempfile

        scratch = tempfile.TemporaryDirectory(prefix="agentflow-shapes-")
        shape_cache = ShapeCache(Path(scratch.name) / "shapes.sqlite")
    context = RunContext(
        catalog=catalog,
        router=router,
        config=config,
        workspace=Path(workspace) if workspace is not None else Path.cwd(),
        sinks=tuple(sinks),
        hooks=hooks or Hooks(),
        shape_cache=shape_cache,
    )
    try:
        return await ask(question, context, max_iterations=max_iterations, on_progress=on_progress)
    finally:
        if scratch is not None:
            scratch.cleanup()
        for sink in sinks:
            sink.close()
        await catalog.aclose()
        await router.aclose()
