"""How an ordinary step runs (docs/spec/RUNTIME.md §2, §7, §8): one invocation bounded by
the step's ``timeout`` and the plan's deadline, and the tool call itself behind the execution
gate, with its ``tool_started``/``tool_finished`` events and the ``on_tool_error`` hook.

These are the :class:`~agentflow.runtime.executor.Executor`'s methods, written as functions of
the executor ``ex`` (the class binds :func:`bounded`, :func:`timed_out` and
:func:`dispatch_tool` as methods, so a step costs no extra call):

- :func:`bounded` — race one invocation against min(step timeout, remaining deadline); MCP
  servers the step needs are connected first (:func:`connect_first`);
- :func:`invoke` — a control step goes to its handler (:mod:`agentflow.runtime.control`), any
  other step renders its arguments and calls :func:`dispatch_tool`;
- :func:`dispatch_tool` — gate → ``tool_started`` → the tool (or ``plan__NAME``) →
  ``tool_finished`` → ``on_tool_error``;
- :func:`check_tool_result` — the result against the step's ``result_schema``;
- :func:`as_error` — any exception of a tool or model call as a :class:`RunError`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentflow.core.vocabulary import Code
from agentflow.errors import ErrorInfo, RunError, run_error_of
from agentflow.ir.mismatch import mismatch_lines
from agentflow.ir.schemas import whole_numbers
from agentflow.runtime.control import (
    Announce,
    ControlCall,
    ExitError,
    ExitOk,
    cancelled_message,
)
from agentflow.runtime.effects import UnitSpec, VirtualBound, enter_bound, leave_bound
from agentflow.runtime.expressions import render_value, to_json_value
from agentflow.runtime.extract import validate
from agentflow.runtime.hooks import GateCall, RunAborted, ToolFailure, maybe_await
from agentflow.runtime.interrupt import (
    EvalWatch,
    cancel_within,
    end_offload_watch,
    end_watch,
    offload_watch,
    use_offload_watch,
    use_watch,
    watching,
)
from agentflow.runtime.result import elapsed_ms
from agentflow.runtime.tools.catalog import ToolContext
from agentflow.runtime.where import tool_label

if TYPE_CHECKING:
    from agentflow.runtime.executor import Executor, Frame, _Call, _StepInfo


def _literal_names(value: Any) -> bool:
    """True for a list of plain tool names/patterns (no ``{{ }}`` template)."""
    return isinstance(value, list) and all(isinstance(v, str) and "{{" not in v for v in value)


def as_error(exc: BaseException, tool_name: str) -> RunError:
    """Any exception raised by a tool/model call → RunError with a plan error code
    (:func:`agentflow.errors.run_error_of`, which ``flowc runs show`` classifies a recorded
    attempt's exception with too)."""
    return run_error_of(exc, tool_name)


_ToolContext: type[ToolContext] | None = None


def _tool_context(workspace: Path, write_scope: list[Path] | None, path: str) -> ToolContext:
    global _ToolContext
    if _ToolContext is None:
        _ToolContext = ToolContext
    return _ToolContext(workspace=workspace, write_scope=write_scope, step_path=path)


def _stopped_fields(stop: BaseException, path: str) -> dict[str, Any]:
    """The ``tool_finished`` fields of a call ended by a hard stop (docs/spec/RUNTIME.md §8)."""
    if isinstance(stop, ExitOk):  # an `exit` with status ok ends the run here
        return {"exit": True, "result": to_json_value(stop.output)}
    if isinstance(stop, ExitError):
        return {"error": stop.to_dict()}
    message = stop.message if isinstance(stop, RunAborted) else cancelled_message(stop)
    return {"error": ErrorInfo(Code.ABORTED, message, path).to_dict()}


def check_tool_result(tool: str, result: Any, schema: dict[str, Any]) -> Any:
    """``result`` checked against the step's ``result_schema`` (the declared result type of an
    ``extern tool``), with every integral float typed ``int`` made an ``int`` (``3.0`` → ``3``:
    :func:`~agentflow.ir.schemas.whole_numbers`). Raises RunError(output_validation) naming
    ``tool`` when it breaks the schema: the run never goes on with a value its program's types
    do not describe."""

    value = to_json_value(result)
    errors = validate(schema, value)
    if errors:  # said in the `.flow`'s terms (agentflow.ir.mismatch), else in JSON Schema's
        try:
            found = mismatch_lines(schema, value, root="result", what="its declared type", limit=3)
        except (ValueError, RecursionError):  # no usable schema, too deep: `validate` said how
            found = []
        shown = "; ".join(found or errors[:3])
        if not found and len(errors) > 3:
            shown += f" (and {len(errors) - 3} more)"
        raise RunError(
            Code.OUTPUT_VALIDATION,
            f"tool {tool} returned a result that does not match its declared type: {shown}",
        )
    converted = whole_numbers(schema, value)
    return result if converted is value else converted


async def bounded(
    ex: Executor,
    info: _StepInfo,
    scope: Mapping[str, Any],
    path: str,
    frame: Frame,
    announce: Announce,
    call: _Call | None = None,
) -> Any:
    """One invocation raced against min(step timeout, remaining deadline)
    (docs/spec/RUNTIME.md §2).

    Expiry cancels the invocation (the tool's task is cancelled; a thread-run sync tool's
    late result is discarded) and raises ``timeout`` or ``deadline_exceeded``.
    """
    timeout = info.timeout_s
    if timeout is not None and info.tool == "ask" and ex.effects.durable:
        timeout = None  # a durable question's timeout is the engine's (it survives restarts)
    remaining = None
    if frame.deadline_at is not None:
        remaining = frame.deadline_at - ex.effects.now()
        if remaining <= 0:
            raise RunError(Code.DEADLINE_EXCEEDED, "the workflow deadline has passed", path)
    if timeout is None and remaining is None:
        return await invoke(ex, info, scope, path, frame, announce, call)
    if timeout is not None and await connect_first(ex, info, path, remaining):
        if frame.deadline_at is not None:  # connecting took part of the deadline
            remaining = frame.deadline_at - ex.effects.now()
            if remaining <= 0:
                raise RunError(Code.DEADLINE_EXCEEDED, "the workflow deadline has passed", path)
    bound: float
    if remaining is not None and (timeout is None or remaining < timeout):
        bound, code = remaining, Code.DEADLINE_EXCEEDED
        message = f"the workflow deadline ({frame.deadline_text}) expired during `{_written(info)}`"
        if info.tool == "value":  # a `let`, a round's value: its place names it (runtime/where.py)
            message = f"the workflow deadline ({frame.deadline_text}) expired computing a value"
    else:
        assert timeout is not None
        bound, code = timeout, Code.TIMEOUT
        message = f"`{info.tool}` did not finish within its timeout ({info.step.timeout})"
    # The invocation runs as its own task, so that expiry does not depend on it: it is
    # cancelled, given CANCEL_GRACE_S to unwind, and abandoned when it ignores the
    # cancellation (a tool catching CancelledError) — the step ends on time regardless.
    # an evaluation that keeps the loop busy checks the same bound (interrupt.EvalWatch)
    watched = offloaded = None
    if ex.effects.evaluation_clock():
        watched = use_watch((watching() or EvalWatch()).bounded(bound, code, message))
    else:  # (Temporal) an evaluation it runs in an operation watches the bound there
        offloaded = use_offload_watch(
            (offload_watch() or EvalWatch()).bounded(bound, code, message)
        )
    # where the host stands in for sleeps (flowc test's virtual time), the step's own timeout
    # counts them as the deadline does: a sleep inside that would outlast it ends it there
    virtual = None
    if code == Code.TIMEOUT and ex.ctx.hooks.sleeper is not None and not ex.effects.durable:
        virtual = VirtualBound(ex.effects.now() + bound)
        entered = enter_bound(virtual)
    try:
        task = asyncio.ensure_future(invoke(ex, info, scope, path, frame, announce, call))
    finally:
        if watched is not None:
            end_watch(watched)
        if offloaded is not None:
            end_offload_watch(offloaded)
        if virtual is not None:
            leave_bound(entered)
    expired = asyncio.ensure_future(virtual.expired.wait()) if virtual is not None else None
    try:
        done, _ = await asyncio.wait(
            {task} if expired is None else {task, expired},
            timeout=bound,
            return_when=asyncio.FIRST_COMPLETED,
        )
    except asyncio.CancelledError:
        await cancel_within(task)  # the run is stopping: bounded, then it goes on
        if code == Code.DEADLINE_EXCEEDED and _deadline_passed(ex, frame):
            # the enclosing step (an `if`, a `loop`) cancelled this one because the same
            # deadline expired there: the error names this step, the innermost one running
            ended = _ended_with(task) or RunError(
                code, message, path, details={"bound": code.value}
            )
            raise ended from None
        raise
    finally:
        if expired is not None:
            expired.cancel()
    if task in done:
        return task.result()
    await cancel_within(task)
    # a body step's own bound (the same deadline) may have ended it first: its error, which
    # names the call that was running, is the one to report (and is retrieved, never left)
    raise _ended_with(task) or RunError(code, message, path, details={"bound": code.value})


def _written(info: _StepInfo) -> str:
    """The step's construct as the `.flow` writes it: ``if``/``match`` for a ``decide``, a
    tool's written name (``read_file``), other control steps by their keyword (``loop``)."""
    if info.tool == "decide":
        return "match" if isinstance(info.step.meta.get("match"), dict) else "if"
    return tool_label(info.tool)


def _deadline_passed(ex: Executor, frame: Frame) -> bool:
    return frame.deadline_at is not None and frame.deadline_at - ex.effects.now() <= 0


def _ended_with(task: asyncio.Future[Any]) -> RunError | None:
    """The RunError ``task`` ended with, if it ended with one (retrieving it, so asyncio never
    reports it as never retrieved); None when it is still running, was cancelled, returned, or
    failed otherwise."""
    if not task.done() or task.cancelled():
        return None
    exc = task.exception()
    return exc if isinstance(exc, RunError) else None


async def connect_first(ex: Executor, info: _StepInfo, path: str, remaining: float | None) -> bool:
    """Start the MCP servers a timed step will use before its ``timeout`` starts counting
    (a server's start-up is bounded by its own ``connect_timeout``, and by the deadline):
    the step named a server's tool, or is an agent whose literal ``tools`` may reach one.
    True when something was connected."""
    catalog = ex.ctx.catalog
    if catalog is None:
        return False
    requests: Any
    if info.handler is None:
        requests = info.tool
    elif info.tool == "agent" and isinstance(info.step.input, dict):
        requests = info.step.input.get("tools")
        if not (requests is None or requests == "none" or _literal_names(requests)):
            return False  # templated: the agent step connects what it renders
    else:
        return False
    try:
        if not catalog.pending(requests):
            return False
    except Exception:  # noqa: BLE001 - a malformed request is reported by the step itself
        return False
    try:
        if remaining is None:
            await catalog.prepare(requests)
        else:
            async with asyncio.timeout(remaining):
                await catalog.prepare(requests)
    except TimeoutError:
        raise RunError(
            Code.DEADLINE_EXCEEDED,
            "the workflow deadline expired while starting MCP servers",
            path,
        ) from None
    except RunError as e:
        e.step_path = e.step_path or path
        raise
    return True


async def invoke(
    ex: Executor,
    info: _StepInfo,
    scope: Mapping[str, Any],
    path: str,
    frame: Frame,
    announce: Announce,
    call: _Call | None = None,
) -> Any:
    handler = info.handler
    if handler is not None:
        try:
            return await handler(
                ControlCall(ex, info.step, info.compiled, scope, path, frame, announce)
            )
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # a malformed hand-written control step: report it, never a traceback
            raise RunError(
                Code.VALIDATION, f"`{info.tool}` step: {type(exc).__name__}: {exc}", path
            ) from None
    args = await ex.effects.evaluation(path, lambda: render_value(info.compiled, scope))
    announce(args)
    if call is None:
        return await dispatch_tool(
            ex, info.tool, args, scope=scope, path=path, frame=frame, write_scope=None
        )
    call.name, call.args = info.tool, args
    return await dispatch_tool(
        ex,
        info.tool,
        args,
        scope=scope,
        path=path,
        frame=frame,
        write_scope=None,
        retried=call.retried,
    )


async def dispatch_tool(
    ex: Executor,
    name: str,
    args: Any,
    *,
    scope: Mapping[str, Any],
    path: str,
    frame: Frame,
    write_scope: list[Path] | None,
    allowed: set[str] | None = None,
    retried: frozenset[str] = frozenset(),
) -> Any:
    """A real tool dispatch: gate → tool_started → call → tool_finished → on_tool_error.

    ``plan__NAME`` runs the sub-plan (nested paths, cycle check).  ``allowed`` (agent calls)
    restricts the names (``tool_denied`` otherwise).  ``retried``: error codes the calling
    step will retry, which are raised without consulting ``on_tool_error`` (the hook sees the
    last attempt's failure only).  Raises RunError / RunAborted.
    """
    stack = frame.stack
    if allowed is not None and name not in allowed:
        raise RunError(Code.TOOL_DENIED, f"tool '{name}' is not available to this agent", path)
    hooks = ex.ctx.hooks
    if hooks.gate is not None:
        decision = await maybe_await(hooks.gate(GateCall(name, args, scope, path, list(stack))))
        if decision is not None and decision.action == "skip":
            # a skipped call still opens and closes in the trace (docs/spec/RUNTIME.md §8)
            ex.emit("tool_started", path, stack, tool_name=name, input=to_json_value(args))
            ex.emit(
                "tool_finished",
                path,
                stack,
                tool_name=name,
                skipped=True,
                result=to_json_value(decision.value),
                elapsed_ms=0,
            )
            return decision.value
        if decision is not None and decision.action == "abort":
            raise RunAborted(decision.message or "aborted by the gate", path)
    quiet = not ex.bus.listens("tool_finished")
    if not quiet:
        ex.emit("tool_started", path, stack, tool_name=name, input=to_json_value(args))
    t0 = time.monotonic()
    try:
        if name.startswith("plan__") and ex.find_plan(name, frame) is not None:
            spec = UnitSpec("plan", frame, name=name, args=args)
            result = await ex.effects.unit(
                path, partial(ex.call_plan, name, args, path, frame), spec
            )
        else:
            catalog = ex.ctx.catalog
            tool = catalog.get(name) if catalog is not None else None
            if tool is None and catalog is not None:
                await catalog.prepare([name])  # lazy MCP servers (tools/mcp.py)
                tool = catalog.get(name)
            if tool is None:
                raise RunError(Code.TOOL_ERROR, f"unknown tool '{name}'", path)
            ctx = _tool_context(ex.ctx.workspace, write_scope, path)
            call_args = args if isinstance(args, dict) else {"input": args}
            result = await ex.effects.call_tool(tool, call_args, ctx)
    except (RunAborted, ExitOk, ExitError, asyncio.CancelledError) as stop:
        # hard stops pass through untouched, but the `tool_started` still gets its
        # `tool_finished` (docs/spec/RUNTIME.md §8): a trace never holds a call left open
        if not quiet:
            ex.emit(
                "tool_finished",
                path,
                stack,
                tool_name=name,
                elapsed_ms=elapsed_ms(t0),
                **_stopped_fields(stop, path),
            )
        raise
    except Exception as exc:  # noqa: BLE001 - every failure of a step becomes a RunError
        err = as_error(exc, name)
        if err.step_path is None:
            err.step_path = path
        ex.emit(
            "tool_finished",
            path,
            stack,
            tool_name=name,
            error=err.to_dict(),
            elapsed_ms=elapsed_ms(t0),
        )
        if (
            hooks.on_tool_error is not None
            and err.code != Code.PLAN_CYCLE
            and err.code not in retried
        ):
            return await offer_error(ex, name, args, err, path, stack)
        raise err from None
    if not quiet:
        ex.emit(
            "tool_finished",
            path,
            stack,
            tool_name=name,
            result=to_json_value(result),
            elapsed_ms=elapsed_ms(t0),
        )
    return result


async def timed_out(ex: Executor, e: RunError, call: _Call, path: str, frame: Frame) -> Any:
    """A tool step's own ``timeout`` expired: offer it to ``on_tool_error`` like any failed
    call (substitute → the step's result; abort → hard stop; propagate → raise ``e``)."""
    if ex.ctx.hooks.on_tool_error is None:
        raise e
    return await offer_error(ex, call.name or "", call.args, e, path, frame.stack)


async def offer_error(
    ex: Executor, name: str, args: Any, err: RunError, path: str, stack: list[str]
) -> Any:
    """Consult ``on_tool_error`` (docs/spec/RUNTIME.md §7) about ``err``: return the substituted
    value, raise RunAborted on abort, re-raise ``err`` on propagate."""
    hook = ex.ctx.hooks.on_tool_error
    assert hook is not None
    decision = await maybe_await(hook(ToolFailure(name, args, err, path, list(stack))))
    if decision is not None and decision.action == "substitute":
        return decision.value
    if decision is not None and decision.action == "abort":
        raise RunAborted(
            decision.message or "aborted after a tool error", path, err.info()
        ) from None
    raise err from None
