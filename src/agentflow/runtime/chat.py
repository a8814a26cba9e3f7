"""The ``flowc ask`` question (seed 002 "The agent loop"; docs/spec/RUNTIME.md §3, §7, §9).

A question is an agent run: :func:`ask` hands it to :func:`agentflow.runtime.agent.run_agent`, the
loop every ``.flow`` agent uses, in plain-text mode (``AgentSpec.text_answer``), at step path
``ask``.  The chat-role model gets the question and the tool catalog — direct tools, ``plan__*``
tools (every plan of the plans directory) and ``plan_and_execute`` — and loops::

    message + tool catalog → model
      ├─ tool calls? → execute (parallel within a round) → results → model again
      └─ text answer → done

bounded by ``max_agent_iterations`` (``[chat]`` in flow.toml, default 10).  Denied tools, malformed
arguments, repeated calls and replies cut off by the token limit are the agent loop's; tool
failures return into the loop as error results (``{"error": {code, message}}``) so the model
explains or works around them.  Every real dispatch — registry tools, ``plan__*`` (through the
executor, one single-step run per call) and ``plan_and_execute`` — passes the host's execution
gate; a hook abort is a hard stop.  Human-authored plans run as they are (their own finish, never
replanned); ``plan_and_execute`` goes through :mod:`agentflow.runtime.planner`.  Every model call
(chat rounds, planner, repair, solver) goes through :meth:`agentflow.runtime.effects.Effects.chat`.

Inference cost (seed 002 cost table): direct tools = 1 + one per tool round; a plan tool with a solver
finish = 3 (chat, solver, chat); ``plan_and_execute`` = 4 + 1 per replan (chat, planner, solver, chat).

Public API::

    await ask(question, context=None, *, max_iterations=None, max_result_chars=None,
              on_progress=None, effects=None, **options) -> AskResult
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
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, ErrorInfo, RunAborted, RunError
from agentflow.ir.models import Plan, Step
from agentflow.runtime.agent import (
    REFUSED,
    AgentSpec,
    ErrorResult,
    run_agent,
)
from agentflow.runtime.config import Config, load_config, missing_key_message, no_model_message
from agentflow.runtime.context import RunContext
from agentflow.runtime.effects import EffectRouter, Effects
from agentflow.runtime.events import EventBus, JsonlSink
from agentflow.runtime.executor import run_plan
from agentflow.runtime.hooks import GateCall, Hooks
from agentflow.runtime.interrupt import stopping
from agentflow.runtime.models.base import ToolSpec
from agentflow.runtime.models.cassette import ReplayRouter, recording_router
from agentflow.runtime.models.router import ModelRouter, test_router
from agentflow.runtime.models.test_model import parse_model_option
from agentflow.runtime.planner import (
    PLAN_AND_EXECUTE,
    PLAN_AND_EXECUTE_DESCRIPTION,
    PLAN_AND_EXECUTE_SCHEMA,
    _KeepOpen,
    plan_and_execute,
    planner_tools,
)
from agentflow.runtime.result import elapsed_ms, usage_delta, usage_snapshot
from agentflow.runtime.shape_cache import ShapeCache, ShapeRecorder
from agentflow.runtime.tools.build import build_catalog

if TYPE_CHECKING:
    from typing import Unpack

    from agentflow.runtime.context import RunOptions
    from agentflow.runtime.tools.catalog import Catalog
    from agentflow.runtime.tools.plans import PlanLoader

__all__ = [
    "CHAT_SYSTEM",
    "AskProgress",
    "AskResult",
    "ask",
    "ask_with_config",
    "chat_tools",
    "test_model_router",
]

DEFAULT_MAX_ITERATIONS = 10
DEFAULT_RESULT_CHARS = 20_000
WRAPPER_PLAN = "_ask"
#: The step path of the question: its rounds' events are at ``ask``, its tool calls at
#: ``ask/agent.ROUND/TOOL`` (the agent loop's paths).
ASK_PATH = "ask"

CHAT_SYSTEM = """\
You are a helpful assistant that answers the user's question, calling the available tools when they \
help; call several tools at once when the calls are independent. A plan__* tool runs a prepared \
workflow and returns its result or report; plan_and_execute plans and runs a multi-step workflow for \
a goal that needs several dependent tool calls. When you have what you need, reply with the answer \
in plain text. Report only what the tool results support; if a tool failed, say so."""

#: ``on_progress(kind, text)``: kinds ``tool`` (a call starts), ``tool_done``, ``tool_error``,
#: ``report`` (a solver report of a plan), ``replan``, ``model`` (a chat round).
Progress = Callable[[str, str], Any]


class AskProgress:
    """A sink that carries ``on_progress`` to a question that runs where no argument reaches it
    (the root of a durable question, ``flowc ask --durable``: it finds the callback among its
    context's sinks).  It takes no event."""

    kinds: frozenset[str] = frozenset()

    def __init__(self, on_progress: Progress):
        self.on_progress = on_progress

    def handle(self, event: Any) -> None:
        """Never called (``kinds`` is empty)."""


@dataclass
class AskResult:
    """What :func:`ask` returns.

    - ``status``: ``ok`` (``answer`` holds the model's text), ``budget`` (``max_iterations`` rounds
      spent without a text answer), ``error`` (the chat model failed), ``aborted`` (a hook hard stop).
    - ``answer``: the final text or None. ``rounds``: chat-model inferences made.
    - ``tools_called``: ``[{tool, round, ok}]`` in call order; a call the question was stopped
      in (Ctrl-C, SIGTERM) also has ``interrupted: true``, its step ``path``,
      ``started_at`` and ``finished_at`` (epoch seconds). ``reports``: solver reports produced
      by plan tools and ``plan_and_execute`` (shown dimmed on stderr by the CLI).
    - ``error``: ``{code, message, step_path}`` or None. ``usage``: inferences and tokens of the
      whole question (chat, planner, solver, … by role). ``duration_ms``: wall time.
    - ``run_id``: the durable run of ``flowc ask --durable`` (docs/durable.md), else None (then
      left out of :meth:`to_dict`).
    """

    status: str
    answer: str | None = None
    rounds: int = 0
    tools_called: list[dict[str, Any]] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    error: ErrorInfo | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    duration_ms: int = 0
    run_id: str | None = None

    @property
    def ok(self) -> bool:
        """True when there is an answer."""
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        out = {
            "status": self.status,
            "answer": self.answer,
            "rounds": self.rounds,
            "tools_called": self.tools_called,
            "reports": self.reports,
            "error": self.error.to_dict() if self.error is not None else None,
            "usage": self.usage,
            "duration_ms": self.duration_ms,
        }
        if self.run_id is not None:
            out["run_id"] = self.run_id
        return out


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
    effects: Effects | None = None,
    **options: Unpack[RunOptions],
) -> AskResult:
    """Answer ``question`` with the agent loop (:func:`~agentflow.runtime.agent.run_agent`, the
    one every ``.flow`` agent uses) in plain-text mode, at step path ``ask``: see the module
    docstring.

    ``context`` / ``options`` (:class:`~agentflow.runtime.context.RunContext` and its fields):

    - ``catalog``/``plans``: the tools and plans offered (under ``config.policy``); ``plans``
      defaults to ``catalog.plans`` (:func:`agentflow.runtime.tools.build.build_catalog`).
    - ``router``: a ModelRouter (chat; planner/solver/repair for plans).
    - ``sinks``: event sinks (the loop's ``model_call`` and ``warning`` events at ``ask``, plus
      every event of the tool runs); not closed here.  ``hooks``: the host's gate /
      on_tool_error / interlocutor.
    - ``shape_cache``: see :func:`~agentflow.runtime.planner.plan_and_execute` (``False`` disables).

    ``max_iterations``: chat rounds (default ``config.chat.max_agent_iterations``, else 10);
    ``max_result_chars``: cap of one tool result shown to the model (default
    ``config.chat.max_result_chars``); ``on_progress(kind, text)``: progress callback (the CLI
    prints it dimmed on stderr).  ``effects``: what every model call (the chat rounds, and the
    planner's and solver's of ``plan_and_execute``) goes through
    (:meth:`~agentflow.runtime.effects.Effects.chat`), and every tool call (each a one-step run
    at ``ask/agent.N``, :func:`~agentflow.runtime.executor.run_plan` with these effects); default:
    performed directly.  With a durable engine's effects (``effects.durable``) the calls of one
    round run one after another, in the order the model gave them, so each is the same recorded
    operation when a resumed process replays the question; the events of replayed rounds are
    not emitted again.  Without ``on_progress``, an :class:`AskProgress` among the sinks gives it.

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
    if effects is None:
        effects = Effects()
    if on_progress is None:
        on_progress = next((s.on_progress for s in ctx.sinks if isinstance(s, AskProgress)), None)
    # a durable question's calls of one round, one after another (see the docstring)
    serial = asyncio.Lock() if effects.durable else None
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
    before = usage_snapshot(router)
    t0 = time.monotonic()
    out = AskResult(status="ok")
    hard_stop: list[ErrorInfo] = []  # the error of a hook's abort, as the run reported it

    def progress(kind: str, text: str) -> None:
        if on_progress is not None:
            on_progress(kind, text)

    def finish(status: str, answer: str | None = None, error: ErrorInfo | None = None) -> AskResult:
        out.status, out.answer, out.error = status, answer, error
        out.usage = usage_delta(router, before)
        out.duration_ms = elapsed_ms(t0)
        return out

    def stop(error: ErrorInfo, path: str) -> RunError:
        """A hard stop: ends the loop (``aborted`` is one of the loop's hard-stop codes)."""
        hard_stop.append(error)
        return RunError(Code.ABORTED, error.message, path)

    run_sinks: list[Any] = list(kept)
    if cache is not None:
        run_sinks.append(ShapeRecorder(cache))
    tool_runs = ctx.replace(sinks=run_sinks, plans=plans)  # one single-step run per tool call

    async def run_tool(name: str, args: dict[str, Any], path: str) -> Any:
        """One dispatch through the executor (gate, events, plan__ tools, on_tool_error)."""
        sid = re.sub(r"\W", "_", name) or "call"
        if not re.match(r"[A-Za-z_]", sid):
            sid = "_" + sid
        step = Step.model_validate({"id": sid, "tool_name": name, "input": args})
        step.compiled = args  # the model's arguments are data, never templates
        wrapper = Plan.model_validate({"name": WRAPPER_PLAN, "steps": [step]})
        prefix = path.rsplit("/", 1)[0]  # ask/agent.N: the call's events and operations there
        result = await run_plan(wrapper, {}, tool_runs, effects=effects, prefix=prefix)
        signal_name = stopping()
        if signal_name is not None and result.status not in ("aborted", "cancelled"):
            # the call ended as the run was asked to stop (a Ctrl-C reaches a tool's child
            # process too, whose failure can come back first): it was interrupted, and its
            # result goes to no model (docs/decisions.md "ask edges (round 41)")
            interrupted = ErrorInfo(Code.ABORTED, f"interrupted by {signal_name}", path)
            result.status, result.error = "aborted", interrupted
        if result.status in ("aborted", "cancelled"):
            err = result.error or ErrorInfo(Code.ABORTED, "aborted")
            if err.step_path is None:  # a stop request's: at the call it stopped
                err = ErrorInfo(err.code, err.message, path)
            raise stop(err, path)
        if result.status == "error":
            err = result.error or ErrorInfo(Code.TOOL_ERROR, "")
            return ErrorResult(err.code, err.message)
        output = result.output
        if name.startswith("plan__"):
            plan = plans.get(name.removeprefix("plan__"))
            fin = plan.finish if plan is not None else None
            if fin is not None and fin.mode == "solver" and output:
                out.reports.append(str(output))
                if not replayed(path):
                    progress("report", str(output))
        return output

    async def run_plan_and_execute(args: dict[str, Any], path: str) -> Any:
        goal = args.get("goal")
        if not isinstance(goal, str) or not goal.strip():
            return ErrorResult(Code.TOOL_ERROR, "plan_and_execute needs a `goal` string")
        if host.gate is not None:  # the host's gate covers plan_and_execute as a whole
            decision = host.gate(GateCall(PLAN_AND_EXECUTE, args, {}, path, ["ask"]))
            if inspect.isawaitable(decision):
                decision = await decision
            if decision is not None and decision.action == "skip":
                return decision.value
            if decision is not None and decision.action == "abort":
                raise stop(ErrorInfo(Code.ABORTED, decision.message, path), path)

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
            effects=effects,
        )
        if ex.status in ("aborted", "cancelled"):
            raise stop(ex.error or ErrorInfo(Code.ABORTED, "aborted"), path)
        if not ex.ok:
            err = ex.error or ErrorInfo(Code.TOOL_ERROR, "")
            return ErrorResult(err.code, err.message)
        out.reports.append(str(ex.output))
        if not replayed(f"{path}/solver"):
            progress("report", str(ex.output))
        return {"status": ex.status, "replans": ex.replans, "report": ex.output}

    async def call_tool(name: str, args: dict[str, Any], path: str) -> Any:
        """One call the loop runs (offered, arguments parsed); reported to ``on_progress``."""
        if serial is not None:
            async with serial:  # FIFO: the calls of a round reach here in the model's order
                return await one_call(name, args, path)
        return await one_call(name, args, path)

    def replayed(path: str) -> bool:
        """A durable question's call replayed from its record (a resumed process): its
        progress was shown when it first ran, and is not again."""
        return effects.durable and (effects.replaying() or effects.replayed(path))

    async def one_call(name: str, args: dict[str, Any], path: str) -> Any:
        quiet = replayed(path)
        if not quiet:
            progress("tool", f"{name} {_short(args)}")
        called = {"tool": name, "round": out.rounds, "ok": False}
        out.tools_called.append(called)
        started = time.time()
        try:
            if name == PLAN_AND_EXECUTE:
                result = await run_plan_and_execute(args, path)
            else:
                result = await run_tool(name, args, path)
        except (RunError, RunAborted):
            if stopping() is not None:
                # stopped while it ran (Ctrl-C, SIGTERM): `flowc runs show` lists it
                called.update(
                    interrupted=True, path=path, started_at=started, finished_at=time.time()
                )
            raise
        called["ok"] = not isinstance(result, ErrorResult)
        shown = (
            _error_content(result.code, result.message)
            if isinstance(result, ErrorResult)
            else result
        )
        if not (quiet or replayed(path)):
            progress("tool_done" if called["ok"] else "tool_error", f"{name} {_short(shown)}")
        return result

    def emit(kind: str, path: str, **data: Any) -> None:
        if kind == "model_call" and data.get("role") == "chat":
            out.rounds = int(data.get("round") or out.rounds)
        if effects.durable and (effects.replaying() or effects.replayed(path)):
            return  # a replayed round's events went out when it first ran
        bus.emit(kind, path, ["ask"], **data)

    spec = AgentSpec(
        prompt=question,
        output_schema={"type": "string"},
        tools=tools,
        max_iterations=max_iterations,
        model="chat",
        system_prompt=CHAT_SYSTEM,
        max_result_chars=max_result_chars,
        text_answer=True,
        forbidden=frozenset(),
    )
    try:
        result = await run_agent(
            spec,
            router=EffectRouter(effects, router, ASK_PATH),
            call_tool=call_tool,
            emit=emit,
            step_path=ASK_PATH,
        )
    except RunAborted as exc:  # the stop request of a signal (Stopped), before a model call
        return finish(
            "aborted",
            error=hard_stop[0] if hard_stop else ErrorInfo(Code.ABORTED, exc.message, ASK_PATH),
        )
    except RunError as exc:
        if hard_stop:
            return finish("aborted", error=hard_stop[0])
        return finish("error", error=ErrorInfo(exc.code, exc.message, ASK_PATH))
    if result["final"]:
        return finish("ok", answer=str(result["output"]))
    problems = [str(p) for p in result.get("errors") or []]
    if problems and problems[0].startswith(REFUSED):
        return finish("error", error=ErrorInfo(Code.OUTPUT_VALIDATION, problems[0], ASK_PATH))
    return finish(
        "budget",
        error=ErrorInfo(
            Code.OUTPUT_VALIDATION,
            f"no answer within max_agent_iterations = {max_iterations} rounds",
            ASK_PATH,
        ),
    )


def test_model_router(config: Config, model: str) -> ModelRouter:
    """The router of ``flowc ask --model MODEL``: the built-in test model
    (:func:`agentflow.runtime.models.router.test_router`) for ``test``, ``test:SEED``,
    ``test+tools`` or ``test+tools:SEED``; ConfigError for any other value (as ``flowc run``)."""
    try:
        seed, call_tools = parse_model_option(model, "model")
    except ValueError as e:
        raise ConfigError(str(e)) from None
    router: ModelRouter = test_router(config, seed, call_tools=call_tools)
    return router


test_model_router.__test__ = False  # type: ignore[attr-defined]  # not a pytest test function


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
    model: str | None = None,
) -> AskResult:
    """:func:`ask` as ``flowc ask`` runs it: the configuration (a Config, a path, or None to find
    ``flow.toml``), the full catalog (:func:`~agentflow.runtime.tools.build.build_catalog`: builtin,
    user, plans directory read with ``load_plan``, MCP), a model router (``record``/``replay`` cassettes as for ``flowc
    run``), a JSON Lines ``trace``; closes the catalog's MCP connections and the trace at the end.
    With ``record``/``replay`` the planner reads a shape cache that starts empty, so a cassette
    never depends on the user's cache.

    ``model``: ``"test"`` (or ``"test:SEED"``, ``"test+tools"``, ``"test+tools:SEED"``): the
    built-in test model answers instead of the configured ones (:func:`test_model_router`).

    Raises ConfigError (no model, broken configuration, a ``model`` other than the test model)
    and the plans directory's load errors.
    """
    if not isinstance(config, Config):
        config = load_config(config)
    router: ModelRouter
    if model is not None:
        router = test_model_router(config, model)
    elif replay is not None:
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
