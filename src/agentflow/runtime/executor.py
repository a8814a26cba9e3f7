"""The plan executor (RUNTIME.md §1, §2, §7, §8; PLAN_IR.md §2–8).

``validate → run steps sequentially → finish``.  The executor is asyncio-based: ``map`` with
``concurrency > 1`` and ``parallel`` run bodies concurrently under a semaphore; everything else is
sequential.  Control steps (PLAN_IR.md §5) are intercepted here and never dispatched; ordinary steps
go through the catalog, behind the execution gate (RUNTIME.md §7).

Public API::

    await run_plan(plan, input, *, catalog, router=None, config=None, workspace=Path.cwd(),
                   sinks=(), hooks=None, plans=None) -> RunResult
    run_plan_sync(...)  # same, from synchronous code

Step paths follow PLAN_IR.md §7: ``E3``, ``E3/then``, ``E3/do.2`` (map/reduce item 2, 0-based like
``index``), ``E3/<branch>`` (parallel), ``E3/do.2/E10`` (a step of a called plan),
``E1/agent.2/linear__list_issues`` (built by the agent loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow.errors import FlowError, InputError, ModelError, RunError, model_error_code
from agentflow.runtime.events import Event, EventBus, Sink
from agentflow.runtime.expressions import (
    _kind,
    evaluate_condition,
    render_value,
    to_json_value,
    to_text,
)
from agentflow.runtime.result import (
    RunResult,
    elapsed_ms,
    model_call_fields,
    usage_delta,
    usage_snapshot,
)

__all__ = [
    "NO_ANSWER",
    "AskRequest",
    "Decision",
    "ExitError",
    "default_interlocutor",
    "terminal_interlocutor",
    "GateCall",
    "Hooks",
    "RunAborted",
    "ToolFailure",
    "abort",
    "proceed",
    "propagate",
    "run_plan",
    "run_plan_sync",
    "skip",
    "substitute",
]

# ---------------------------------------------------------------------------------------------
# Hooks (RUNTIME.md §7)


@dataclass
class GateCall:
    """What the execution gate sees before a real tool dispatch.

    ``input``: the fully rendered input. ``scope``: the template scope it rendered against (the
    results map at top level; the layered body scope with item/index/accumulator inside bodies).
    """

    tool_name: str
    input: Any
    scope: Mapping[str, Any]
    step_path: str
    stack: list[str]


@dataclass
class ToolFailure:
    """What ``on_tool_error`` sees when a dispatched call failed (``error`` is the RunError)."""

    tool_name: str
    input: Any
    error: RunError
    step_path: str
    stack: list[str]


@dataclass
class Decision:
    """A hook's answer. ``action``: ``proceed`` | ``skip`` (gate; ``value`` = injected result) |
    ``abort`` (``message``) | ``propagate`` | ``substitute`` (on_tool_error; ``value``)."""

    action: str
    value: Any = None
    message: str = ""


def proceed() -> Decision:
    """Gate: run the call."""
    return Decision("proceed")


def skip(result: Any = None) -> Decision:
    """Gate: do not run the call; ``result`` is used as its result."""
    return Decision("skip", result)


def abort(message: str = "aborted by hook") -> Decision:
    """Gate / on_tool_error: hard-stop the run (status ``aborted``)."""
    return Decision("abort", message=message)


def propagate() -> Decision:
    """on_tool_error: let the error propagate (the default)."""
    return Decision("propagate")


def substitute(value: Any) -> Decision:
    """on_tool_error: continue the run with ``value`` as the call's result."""
    return Decision("substitute", value)


@dataclass
class AskRequest:
    """A question of an ``ask`` step for the interlocutor (``choices``/``schema`` may be None)."""

    question: str
    schema: dict[str, Any] | None
    choices: list[Any] | None
    step_path: str
    stack: list[str]


class _NoAnswer:
    def __repr__(self) -> str:
        return "NO_ANSWER"


#: Returned by an interlocutor that could not get an answer (then ``when_unanswered`` decides).
NO_ANSWER: Any = _NoAnswer()

HookResult = Decision | None | Awaitable[Decision | None]


@dataclass
class Hooks:
    """Host hooks (RUNTIME.md §7); each may be sync or async.

    - ``gate(GateCall) -> Decision | None`` before every real tool dispatch (None = proceed).
    - ``on_tool_error(ToolFailure) -> Decision | None`` when a dispatched call failed
      (None = propagate).
    - ``interlocutor(AskRequest) -> answer | NO_ANSWER`` for ``ask`` steps; questions are
      serialized by a lock, even under concurrent map items.
    """

    gate: Callable[[GateCall], HookResult] | None = None
    on_tool_error: Callable[[ToolFailure], HookResult] | None = None
    interlocutor: Callable[[AskRequest], Any] | None = None

    def install_gate(
        self, fn: Callable[[GateCall], HookResult]
    ) -> Callable[[GateCall], HookResult]:
        """Install the execution gate; returns ``fn`` (usable as a decorator)::

        hooks = Hooks()

        @hooks.install_gate
        def gate(call: GateCall):
            return skip({"stub": True}) if call.tool_name == "linear__delete" else None
        """
        self.gate = fn
        return fn

    def install_on_tool_error(
        self, fn: Callable[[ToolFailure], HookResult]
    ) -> Callable[[ToolFailure], HookResult]:
        """Install ``on_tool_error`` (return :func:`propagate`, :func:`substitute` or
        :func:`abort`); returns ``fn``."""
        self.on_tool_error = fn
        return fn

    def install_interlocutor(self, fn: Callable[[AskRequest], Any]) -> Callable[[AskRequest], Any]:
        """Install the interlocutor of ``ask`` steps (return the answer or :data:`NO_ANSWER`);
        returns ``fn``.  :func:`terminal_interlocutor` is the stderr/stdin one."""
        self.interlocutor = fn
        return fn


def _parse_answer(text: str, request: AskRequest) -> Any:
    """A typed line → the answer: a choice by number or text, JSON when the schema wants a
    non-string, else the text."""
    text = text.strip()
    choices = request.choices or []
    if choices and text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1]
    if choices and text in [str(c) for c in choices]:
        return next(c for c in choices if str(c) == text)
    wants_text = not request.schema or request.schema.get("type") == "string"
    if not wants_text or (choices and not all(isinstance(c, str) for c in choices)):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def terminal_interlocutor(
    stdin: Any = None, stderr: Any = None, *, pause: Callable[[], Any] | None = None
) -> Callable[[AskRequest], Awaitable[Any]]:
    """The terminal interlocutor (RUNTIME.md §7): writes the question (and numbered choices) to
    ``stderr`` and reads one line from ``stdin`` (defaults: the process's).  An empty line or
    end of input gives :data:`NO_ANSWER`, so the ask's ``when_unanswered`` decides.  ``pause``:
    a context-manager factory that hides a live view while asking (``ConsoleSink.paused``).

    The executor serializes questions, so concurrent map items never interleave prompts.
    """
    import sys

    from agentflow.runtime.tools.catalog import run_in_daemon_thread

    async def ask(request: AskRequest) -> Any:
        inp = stdin if stdin is not None else sys.stdin
        out = stderr if stderr is not None else sys.stderr
        ctx = pause() if pause is not None else contextlib.nullcontext()
        with ctx:
            lines = [f"? [{request.step_path}] {request.question}"]
            for i, choice in enumerate(request.choices or [], 1):
                lines.append(f"  {i}) {choice}")
            out.write("\n".join(lines) + "\n> ")
            out.flush()
            line = await run_in_daemon_thread(inp.readline)
        if not line or not line.strip():
            return NO_ANSWER
        return _parse_answer(line, request)

    return ask


def default_interlocutor(**kwargs: Any) -> Callable[[AskRequest], Awaitable[Any]] | None:
    """:func:`terminal_interlocutor` when stdin is a TTY, else None (CI: ``when_unanswered``
    decides)."""
    import sys

    stdin = kwargs.get("stdin") or sys.stdin
    isatty = getattr(stdin, "isatty", None)
    return terminal_interlocutor(**kwargs) if callable(isatty) and isatty() else None


class RunAborted(FlowError):
    """A hook aborted the run (a hard stop); ``error`` is the failing tool's error, if any."""

    def __init__(self, message: str, step_path: str, error: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.step_path = step_path
        self.error = error


class ExitError(RunError):
    """An ``exit`` with status error: ends the whole run, never skipped or substituted."""


class _ExitOk(Exception):
    """An ``exit`` with status ok: ends the current plan with ``output``."""

    def __init__(self, output: Any, path: str):
        super().__init__("exit")
        self.output = output
        self.path = path


async def _maybe_await(x: Any) -> Any:
    if inspect.isawaitable(x):
        return await x
    return x


# ---------------------------------------------------------------------------------------------
# Small helpers


_DURATIONS: dict[str, float] = {}


def _duration_s(value: Any) -> float | None:
    """A duration text (``30s``) or a number of seconds → seconds; None stays None."""
    if value is None:
        return None
    if type(value) is str:
        cached = _DURATIONS.get(value)
        if cached is not None:
            return cached
    if isinstance(value, bool):
        raise RunError("validation", f"invalid duration {value!r}")
    if isinstance(value, int | float):
        return float(value)
    from agentflow.ir.templates import duration_ms

    try:
        secs = duration_ms(str(value)) / 1000.0
        if type(value) is str:
            _DURATIONS[value] = secs
        return secs
    except ValueError as exc:
        raise RunError("validation", str(exc)) from None


@dataclass(slots=True)
class _StepInfo:
    """What the executor derives once per step and run (hot-path cache)."""

    step: Any
    tool: str
    handler: Callable[..., Awaitable[Any]] | None
    compiled: Any
    select: Any
    timeout_s: float | None
    attempts: int
    on: frozenset[str]
    initial: float
    factor: float
    cap: float
    source: str | None
    id: str | None
    stage: str | None = None  # meta.stage: the `.flow` stage the step belongs to


_NO_CODES: frozenset[str] = frozenset()


def _stage(meta: Any) -> str | None:
    """``meta.stage`` of a step (the `.flow` stage it was lowered from), or None."""
    stage = meta.get("stage") if type(meta) is dict else None
    return str(stage) if stage else None


def _backoff_delay(info: _StepInfo, attempt: int) -> float:
    """Exponential backoff with jitter (RUNTIME.md §2): ``min(cap, initial·factor^(n-1))``
    scaled by a uniform factor in [0.5, 1) — "equal jitter", so retries never synchronise."""
    try:
        delay = min(info.cap, info.initial * (info.factor ** (attempt - 1)))
    except OverflowError:  # a huge factor in a plan that skipped validation
        delay = info.cap
    return delay * (0.5 + random.random() / 2)


def _deadline_text(frame: _Frame) -> str:
    return str(getattr(frame.plan, "deadline", None) or "deadline")


_ToolContext: Any = None


def _tool_context(workspace: Path, write_scope: list[Path] | None, path: str) -> Any:
    global _ToolContext
    if _ToolContext is None:
        from agentflow.runtime.tools.catalog import ToolContext

        _ToolContext = ToolContext
    return _ToolContext(workspace=workspace, write_scope=write_scope, step_path=path)


def _meta(step: Any) -> dict[str, Any]:
    meta = getattr(step, "meta", None)
    return meta if isinstance(meta, dict) else {}


def _source(step: Any) -> str | None:
    src = _meta(step).get("source")
    return str(src) if src else None


def _compiled(step: Any) -> Any:
    c = getattr(step, "compiled", None)
    if c is None:
        from agentflow.ir.templates import compile_value

        c = compile_value(getattr(step, "input", None) or {})
        with contextlib.suppress(Exception):
            step.compiled = c
    return c


def _compiled_select(step: Any) -> Any:
    sel = getattr(step, "compiled_select", None)
    if sel is None and getattr(step, "select", None):
        from agentflow.ir.templates import compile_value

        sel = compile_value(step.select)
        with contextlib.suppress(Exception):
            step.compiled_select = sel
    return sel


def _err_dict(e: RunError) -> dict[str, Any]:
    return e.to_dict()


def _json_safe(value: Any) -> Any:
    return to_json_value(value)


def _as_error(exc: BaseException, tool_name: str) -> RunError:
    """Any exception raised by a tool/model call → RunError with a plan error code."""
    if isinstance(exc, RunError):
        return exc
    if isinstance(exc, ModelError):
        code = model_error_code(exc)
        return RunError(code, f"{tool_name}: {exc}")
    if isinstance(exc, TimeoutError):
        return RunError("timeout", f"{tool_name}: timed out")
    if isinstance(exc, ConnectionError):
        return RunError("transient", f"{tool_name}: {type(exc).__name__}: {exc}")
    return RunError("tool_error", f"{tool_name}: {type(exc).__name__}: {exc}")


_YES = re.compile(r"^\W*(yes|true)\b", re.I)
_NO = re.compile(r"^\W*(no|false)\b", re.I)


def _parse_yes_no(text: str | None) -> bool | None:
    if not text:
        return None
    t = text.strip()
    try:
        data = json.loads(t)
        if isinstance(data, bool):
            return data
        if isinstance(data, dict):
            for key in ("answer", "verdict", "result", "passed"):
                v = data.get(key)
                if isinstance(v, bool):
                    return v
                if isinstance(v, str):
                    return _parse_yes_no(v)
    except ValueError:
        pass
    if _YES.match(t):
        return True
    if _NO.match(t):
        return False
    return None


# ---------------------------------------------------------------------------------------------
# Run state


@dataclass
class _Frame:
    """One plan activation: the plan, its call stack and path prefix, its deadline."""

    plan: Any
    stack: list[str]
    prefix: str  # "" at top level, "E3/do.2" inside a called plan
    deadline_at: float | None  # loop.time() value, or None
    root_plans: dict[str, Any]

    def path(self, step_id: str) -> str:
        return f"{self.prefix}/{step_id}" if self.prefix else step_id


@dataclass(slots=True)
class _Call:
    """The tool call of a step's latest attempt, for ``on_tool_error`` after a timeout."""

    name: str | None = None
    args: Any = None
    retried: frozenset[str] = frozenset()


@dataclass
class _Run:
    catalog: Any
    router: Any
    config: Any
    workspace: Path
    bus: EventBus
    hooks: Hooks
    plans: dict[str, Any]
    ask_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    step_usage: Any = None  # result.StepUsage: per-step model usage (from model_call events)


DEFAULT_DENIED = frozenset({"builtin__write_file", "builtin__edit_file"})


class Executor:
    """Runs plans. Build one per run with :func:`run_plan`; exposed for hosts that need
    ``dispatch_tool`` (e.g. a chat loop reusing the gate and events)."""

    def __init__(self, run: _Run):
        self.run = run
        self.bus = run.bus
        self._info: dict[int, _StepInfo] = {}

    # ----------------------------------------------------------------- events

    def emit(self, kind: str, path: str, stack: list[str], **data: Any) -> Event | None:
        """Emit one event (RUNTIME.md §8); a no-op when no sink listens."""
        if not self.bus.listens(kind):
            return None
        return self.bus.emit(kind, path, stack, **data)

    def warn(self, path: str, stack: list[str], message: str) -> None:
        self.emit("warning", path, stack, message=message)

    # ----------------------------------------------------------------- plan level

    async def run_steps(self, frame: _Frame, scope: dict[str, Any], results: dict[str, Any]) -> Any:
        """Run a plan's steps in order; returns the last step's result."""
        last: Any = None
        for i, step in enumerate(frame.plan.steps):
            sid = step.id or f"steps[{i}]"
            last = await self.run_step(step, scope, frame.path(sid), frame)
            if step.id:
                scope[step.id] = last
                results[step.id] = last
        return last

    async def finish(self, frame: _Frame, scope: dict[str, Any], last: Any) -> Any:
        plan = frame.plan
        fin = getattr(plan, "finish", None)
        if fin is None:
            return last
        mode = getattr(fin, "mode", "output")
        if mode == "silent":
            return None
        if mode == "solver":
            prompt_c = getattr(fin, "compiled_prompt", None)
            if prompt_c is None and getattr(fin, "prompt", None):
                from agentflow.ir.templates import compile_value

                prompt_c = compile_value(fin.prompt)
            prompt = ""
            if prompt_c is not None:
                prompt = to_text(
                    render_value(
                        prompt_c,
                        scope,
                        lenient=True,
                        on_warning=lambda m: self.warn(frame.prefix, frame.stack, m),
                    )
                )
            results = {k: v for k, v in scope.items() if k != "input"}
            user = (
                f"{prompt or 'Write the final answer of this workflow.'}\n\n"
                f"Workflow input:\n{to_text(scope.get('input'))}\n\n"
                f"Results of every step (JSON):\n"
                f"{json.dumps(_json_safe(results), ensure_ascii=False, indent=1)}"
            )
            return await self.infer(
                "solver",
                user,
                system="You are the solver of a workflow: write its final answer from the "
                "collected step results. Do not invent data that is not in them.",
                path=frame.path("finish"),
                stack=frame.stack,
            )
        out_c = getattr(fin, "compiled_output", None)
        raw = getattr(fin, "output", None)
        if out_c is None and raw is not None:
            from agentflow.ir.templates import compile_value

            out_c = compile_value(raw)
        if out_c is None:
            return last
        try:
            return render_value(out_c, scope)
        except RunError as e:
            if e.step_path is None:
                e.step_path = frame.path("finish")
            raise

    # ----------------------------------------------------------------- one step

    def _step_info(self, step: Any) -> _StepInfo:
        """Per-step data derived once per run (the hot path reads only this)."""
        info = self._info.get(id(step))
        if info is not None and info.step is step:
            return info
        tool = step.tool_name
        priv = getattr(step, "__pydantic_private__", None) or {}
        compiled = priv.get("_compiled")
        if compiled is None:
            compiled = _compiled(step)
        select = priv.get("_compiled_select") if step.select is not None else None
        if select is None and step.select is not None:
            select = _compiled_select(step)
        retry = step.retry
        meta = step.meta
        source = meta.get("source") if type(meta) is dict else None
        timeout = step.timeout
        if retry is None:
            info = _StepInfo(
                step, tool, _CONTROL.get(tool), compiled, select,
                None if timeout is None else _duration_s(timeout),
                1, _NO_CODES, 0.5, 2.0, 30.0,
                str(source) if source else None, step.id,
                _stage(meta),
            )  # fmt: skip
        else:
            backoff = retry.backoff
            info = _StepInfo(
                step=step,
                tool=tool,
                handler=_CONTROL.get(tool),
                compiled=compiled,
                select=select,
                timeout_s=_duration_s(timeout),
                attempts=1 + int(retry.attempts or 0),
                on=frozenset(retry.on or ["transient"]),
                initial=_duration_s(getattr(backoff, "initial", None) or "500ms") or 0.5,
                factor=float(getattr(backoff, "factor", 2.0) or 2.0),
                cap=_duration_s(getattr(backoff, "max", None) or "30s") or 30.0,
                source=str(source) if source else None,
                id=step.id,
                stage=_stage(meta),
            )
        self._info[id(step)] = info
        return info

    async def run_step(self, step: Any, scope: Mapping[str, Any], path: str, frame: _Frame) -> Any:
        """Run one step (or body): events, timeout/deadline bound, retry, ``select``."""
        info = self._step_info(step)
        tool = info.tool
        quiet = not self.bus.listens("step_finished")
        started = time.monotonic()
        announced = [quiet]

        def announce(rendered: Any) -> None:
            if not announced[0]:
                announced[0] = True
                data: dict[str, Any] = {"tool_name": tool, "input": _json_safe(rendered)}
                if info.id:
                    data["id"] = info.id
                if info.source:
                    data["source"] = info.source
                if info.stage:
                    data["stage"] = info.stage
                self.emit("step_started", path, frame.stack, **data)

        try:
            attempt = 0
            call = _Call()
            while True:
                attempt += 1
                # codes the next attempt will absorb are not offered to on_tool_error: the hook
                # sees a tool's failure once, after the step's retries (RUNTIME.md §2, §7)
                call.retried = info.on if attempt < info.attempts else _NO_CODES
                try:
                    raw = await self._bounded(info, scope, path, frame, announce, call)
                    break
                except RunError as e:
                    if (
                        isinstance(e, ExitError)
                        or attempt >= info.attempts
                        or e.code not in info.on
                    ):
                        if e.details.get("bound") == "timeout" and call.name is not None:
                            raw = await self._timed_out(e, call, path, frame)
                            break
                        raise
                    delay = _backoff_delay(info, attempt)
                    if frame.deadline_at is not None:
                        remaining = frame.deadline_at - asyncio.get_running_loop().time()
                        delay = max(0.0, min(delay, remaining))
                    self.emit(
                        "retry",
                        path,
                        frame.stack,
                        attempt=attempt,
                        code=e.code,
                        message=e.message,
                        delay_ms=int(delay * 1000),
                    )
                    await asyncio.sleep(delay)
            result = raw
            if info.select is not None:
                sel_scope = dict(scope)
                sel_scope["result"] = raw
                result = render_value(info.select, sel_scope)
        except RunError as e:
            if e.code == "bad_path" and not e.details.get("step_named"):
                e.details["step_named"] = True
                e.message = f"step `{info.id or path}`: {e.message}"
                e.args = (e.message,)
            if e.step_path is None:
                e.step_path = path
            if e.source is None:
                e.source = info.source
            if not quiet:
                self._step_finished(
                    path,
                    frame,
                    announce,
                    tool_name=tool,
                    error=_err_dict(e),
                    elapsed_ms=elapsed_ms(started),
                )
            raise
        except (RunAborted, _ExitOk) as e:
            if not quiet:
                data: dict[str, Any] = {"tool_name": tool}
                if isinstance(e, RunAborted):
                    data["aborted"] = e.message
                    if e.error:
                        data["error"] = e.error
                else:
                    data["exit"] = True
                    data["result"] = _json_safe(e.output)
                self._step_finished(path, frame, announce, elapsed_ms=elapsed_ms(started), **data)
            raise
        except asyncio.CancelledError:
            if not quiet:
                self._step_finished(
                    path,
                    frame,
                    announce,
                    tool_name=tool,
                    error={"code": "aborted", "message": "cancelled", "step_path": path},
                    elapsed_ms=elapsed_ms(started),
                )
            raise
        if not quiet:
            usage = self.run.step_usage.total(path) if self.run.step_usage is not None else None
            self._step_finished(
                path,
                frame,
                announce,
                tool_name=tool,
                result=_json_safe(result),
                elapsed_ms=elapsed_ms(started),
                **({"usage": usage} if usage else {}),  # per-step model usage (issue #5)
            )
        return result

    def _step_finished(self, path: str, frame: _Frame, announce: Any, **data: Any) -> None:
        """Close a step: ``announce(None)`` (its ``step_started`` if still due), then the
        ``step_finished`` event with ``data`` (RUNTIME.md §8)."""
        announce(None)
        self.emit("step_finished", path, frame.stack, **data)

    async def _timed_out(self, e: RunError, call: _Call, path: str, frame: _Frame) -> Any:
        """A tool step's own ``timeout`` expired: offer it to ``on_tool_error`` like any failed
        call (substitute → the step's result; abort → hard stop; propagate → raise ``e``)."""
        if self.run.hooks.on_tool_error is None:
            raise e
        return await self._offer_error(call.name or "", call.args, e, path, frame.stack)

    async def _offer_error(
        self, name: str, args: Any, err: RunError, path: str, stack: list[str]
    ) -> Any:
        """Consult ``on_tool_error`` (RUNTIME.md §7) about ``err``: return the substituted value,
        raise RunAborted on abort, re-raise ``err`` on propagate."""
        hook = self.run.hooks.on_tool_error
        decision = await _maybe_await(hook(ToolFailure(name, args, err, path, list(stack))))
        if decision is not None and decision.action == "substitute":
            return decision.value
        if decision is not None and decision.action == "abort":
            raise RunAborted(
                decision.message or "aborted after a tool error", path, _err_dict(err)
            ) from None
        raise err from None

    async def _bounded(self, info: _StepInfo, scope, path, frame, announce, call=None) -> Any:
        """One invocation raced against min(step timeout, remaining deadline) (RUNTIME.md §2).

        Expiry cancels the invocation (the tool's task is cancelled; a thread-run sync tool's
        late result is discarded) and raises ``timeout`` or ``deadline_exceeded``.
        """
        timeout = info.timeout_s
        remaining = None
        if frame.deadline_at is not None:
            remaining = frame.deadline_at - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise RunError("deadline_exceeded", "the workflow deadline has passed", path)
        if timeout is None and remaining is None:
            return await self._invoke(info, scope, path, frame, announce, call)
        step = info.step
        if remaining is not None and (timeout is None or remaining < timeout):
            bound, code = remaining, "deadline_exceeded"
            message = (
                f"the workflow deadline ({_deadline_text(frame)}) expired during `{info.tool}`"
            )
        else:
            bound, code = timeout, "timeout"
            message = f"`{info.tool}` did not finish within its timeout ({step.timeout})"
        try:
            async with asyncio.timeout(bound) as cm:
                return await self._invoke(info, scope, path, frame, announce, call)
        except TimeoutError:
            if cm.expired():
                raise RunError(code, message, path, details={"bound": code}) from None
            raise

    async def _invoke(self, info: _StepInfo, scope, path, frame, announce, call=None) -> Any:
        handler = info.handler
        if handler is not None:
            try:
                return await handler(self, info.step, info.compiled, scope, path, frame, announce)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                # a malformed hand-written control step: report it, never a traceback
                raise RunError(
                    "validation", f"`{info.tool}` step: {type(exc).__name__}: {exc}", path
                ) from None
        args = render_value(info.compiled, scope)
        announce(args)
        if call is None:
            return await self.dispatch_tool(
                info.tool, args, scope=scope, path=path, frame=frame, write_scope=None
            )
        call.name, call.args = info.tool, args
        return await self.dispatch_tool(
            info.tool,
            args,
            scope=scope,
            path=path,
            frame=frame,
            write_scope=None,
            retried=call.retried,
        )

    # ----------------------------------------------------------------- tool dispatch

    async def dispatch_tool(
        self,
        name: str,
        args: Any,
        *,
        scope: Mapping[str, Any],
        path: str,
        frame: _Frame,
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
            raise RunError("tool_denied", f"tool '{name}' is not available to this agent", path)
        hooks = self.run.hooks
        if hooks.gate is not None:
            decision = await _maybe_await(
                hooks.gate(GateCall(name, args, scope, path, list(stack)))
            )
            if decision is not None and decision.action == "skip":
                # a skipped call still opens and closes in the trace (RUNTIME.md §8)
                self.emit("tool_started", path, stack, tool_name=name, input=_json_safe(args))
                self.emit(
                    "tool_finished",
                    path,
                    stack,
                    tool_name=name,
                    skipped=True,
                    result=_json_safe(decision.value),
                    elapsed_ms=0,
                )
                return decision.value
            if decision is not None and decision.action == "abort":
                raise RunAborted(decision.message or "aborted by the gate", path)
        quiet = not self.bus.listens("tool_finished")
        if not quiet:
            self.emit("tool_started", path, stack, tool_name=name, input=_json_safe(args))
        t0 = time.monotonic()
        try:
            if name.startswith("plan__") and self._find_plan(name, frame) is not None:
                result = await self.call_plan(name, args, path, frame)
            else:
                tool = self.run.catalog.get(name) if self.run.catalog is not None else None
                if tool is None and hasattr(self.run.catalog, "prepare"):
                    await self.run.catalog.prepare([name])  # lazy MCP servers (tools/mcp.py)
                    tool = self.run.catalog.get(name)
                if tool is None:
                    raise RunError("tool_error", f"unknown tool '{name}'", path)
                ctx = _tool_context(self.run.workspace, write_scope, path)
                result = await tool.func(args if isinstance(args, dict) else {"input": args}, ctx)
        except (RunAborted, _ExitOk, ExitError, asyncio.CancelledError) as stop:
            # hard stops pass through untouched, but the `tool_started` still gets its
            # `tool_finished` (RUNTIME.md §8): a trace never holds a call left open
            if not quiet:
                if isinstance(stop, _ExitOk):  # an `exit` with status ok ends the run here
                    ended: dict[str, Any] = {"exit": True, "result": _json_safe(stop.output)}
                elif isinstance(stop, ExitError):
                    ended = {"error": _err_dict(stop)}
                elif isinstance(stop, RunAborted):
                    ended = {
                        "error": {"code": "aborted", "message": stop.message, "step_path": path}
                    }
                else:
                    ended = {
                        "error": {"code": "aborted", "message": "cancelled", "step_path": path}
                    }
                self.emit(
                    "tool_finished", path, stack, tool_name=name, elapsed_ms=elapsed_ms(t0), **ended
                )
            raise
        except Exception as exc:
            err = _as_error(exc, name)
            if err.step_path is None:
                err.step_path = path
            self.emit(
                "tool_finished",
                path,
                stack,
                tool_name=name,
                error=_err_dict(err),
                elapsed_ms=elapsed_ms(t0),
            )
            if (
                hooks.on_tool_error is not None
                and err.code != "plan_cycle"
                and err.code not in retried
            ):
                return await self._offer_error(name, args, err, path, stack)
            raise err from None
        if not quiet:
            self.emit(
                "tool_finished",
                path,
                stack,
                tool_name=name,
                result=_json_safe(result),
                elapsed_ms=elapsed_ms(t0),
            )
        return result

    def _find_plan(self, name: str, frame: _Frame) -> Any:
        pname = name.removeprefix("plan__")
        for source in (getattr(frame.plan, "plans", None), frame.root_plans, self.run.plans):
            if source and pname in source:
                return source[pname]
        return None

    async def call_plan(self, name: str, args: Any, path: str, frame: _Frame) -> Any:
        """Run sub-plan ``plan__NAME`` with ``args`` as input; returns its finish output."""
        sub = self._find_plan(name, frame)
        pname = sub.name
        if pname in frame.stack:
            chain = " → ".join([*frame.stack, pname])
            raise RunError("plan_cycle", f"plan cycle: {chain}", path)
        _validate_input(sub, args, code="tool_error")
        deadline_at = frame.deadline_at
        sub_deadline = _duration_s(getattr(sub, "deadline", None))
        if sub_deadline is not None:
            mine = asyncio.get_running_loop().time() + sub_deadline
            deadline_at = mine if deadline_at is None else min(deadline_at, mine)
        child = _Frame(
            plan=sub,
            stack=[*frame.stack, pname],
            prefix=path,
            deadline_at=deadline_at,
            root_plans=frame.root_plans,
        )
        scope: dict[str, Any] = {"input": args}
        try:
            last = await self.run_steps(child, scope, {})
        except _ExitOk as e:
            return e.output
        return await self.finish(child, scope, last)

    # ----------------------------------------------------------------- models

    async def infer(
        self, role: str, prompt: str, *, system: str | None, path: str, stack: list[str]
    ) -> str:
        """One model call of ``role`` (judge, solver); emits ``model_call``; returns the text."""
        from agentflow.runtime.models.base import ChatRequest, Message

        router = self.run.router
        if router is None:
            raise RunError(
                "validation",
                f"this step needs a model ({role} role) but no model is configured "
                "(set [models] in flow.toml, or OPENAI_BASE_URL/OPENAI_API_KEY)",
                path,
            )
        try:
            client = router.client_for(role)
        except FlowError as exc:
            raise RunError("validation", str(exc), path) from None
        messages = []
        if system:
            messages.append(Message(role="system", content=system))
        messages.append(Message(role="user", content=prompt))
        t0 = time.monotonic()
        try:
            resp = await client.chat(ChatRequest(messages=messages))
        except ModelError as exc:
            raise _as_error(exc, f"{role} model") from None
        self.emit("model_call", path, stack, role=role, **model_call_fields(resp, t0))
        return resp.text or ""

    async def judge(self, question: str, *, path: str, stack: list[str]) -> bool:
        """A yes/no judge-role call (one inference). Raises ``output_validation`` when the reply
        is neither yes nor no."""
        text = await self.infer(
            "judge",
            question,
            system="You are a strict judge. Answer with exactly one word: yes or no.",
            path=path,
            stack=stack,
        )
        verdict = _parse_yes_no(text)
        if verdict is None:
            raise RunError(
                "output_validation", f"the judge did not answer yes or no: {text[:200]!r}", path
            )
        return verdict


# ---------------------------------------------------------------------------------------------
# Control steps (PLAN_IR.md §5)


def _body(x: Any, key: str, path: str) -> Any:
    if x is None or not hasattr(x, "tool_name"):
        if isinstance(x, dict) and "tool_name" in x:
            from agentflow.ir.models import Step

            step = Step.model_validate(x)
            return step
        raise RunError("validation", f"`{key}` must be a step", path)
    return x


def _warner(ex: Executor, path: str, stack: list[str]) -> Callable[[str], None]:
    return lambda m: ex.warn(path, stack, m)


async def _c_value(ex: Executor, step, c, scope, path, frame, announce) -> Any:
    value = render_value(c.get("value"), scope)
    announce({"value": value})
    return value


async def _c_exit(ex: Executor, step, c, scope, path, frame, announce) -> Any:
    when = c.get("when")
    if when is not None and not evaluate_condition(when, scope):
        announce({"when": False})
        return None
    status = render_value(c.get("status", "error"), scope)
    code = render_value(c.get("code"), scope) or "failed"
    message = render_value(
        c.get("message"), scope, lenient=True, on_warning=_warner(ex, path, frame.stack)
    )
    announce({"when": True, "status": status, "code": code, "message": message})
    if status == "ok":
        output = render_value(c.get("output"), scope) if "output" in c else None
        raise _ExitOk(output, path)
    raise ExitError(
        str(code), to_text(message) if message is not None else "exit", path, _source(step)
    )


async def _gate(ex: Executor, c, scope, path, frame, what: str) -> bool:
    if "when" in c and c["when"] is not None:
        return evaluate_condition(c["when"], scope)
    if "infer" in c and c["infer"] is not None:
        q = render_value(c["infer"], scope, lenient=True, on_warning=_warner(ex, path, frame.stack))
        return await ex.judge(to_text(q), path=path, stack=frame.stack)
    raise RunError("validation", f"`{what}` needs `when` or `infer`", path)


async def _c_decide(ex: Executor, step, c, scope, path, frame, announce) -> Any:
    taken = await _gate(ex, c, scope, path, frame, "decide")
    branch = "then" if taken else "else"
    announce({"branch": branch})
    body = c.get(branch)
    if body is None:
        return {"branch": branch, "output": None}
    out = await ex.run_step(_body(body, branch, path), scope, f"{path}/{branch}", frame)
    return {"branch": branch, "output": out}


def _over(c, scope, path) -> list:
    over = render_value(c.get("over"), scope)
    if over is None:  # a missing upstream value is not "no items"; `?? []` opts in to that
        raise RunError(
            "validation", "`over` must be a list, got null (write `?? []` to default it)", path
        )
    if isinstance(over, dict):
        return list(over.values())
    if hasattr(over, "to_list"):
        return over.to_list()
    if not isinstance(over, list | tuple):
        raise RunError("validation", f"`over` must be a list, got {_kind(over)}", path)
    return list(over)


def _layer(scope: Mapping[str, Any], **names: Any) -> dict[str, Any]:
    out = dict(scope)
    out.update(names)
    return out


async def _c_filter(ex: Executor, step, c, scope, path, frame, announce) -> Any:
    items = _over(c, scope, path)
    announce({"over": items})
    kept, dropped = [], []
    for i, item in enumerate(items):
        inner = _layer(scope, item=item, index=i)
        if await _gate(ex, c, inner, f"{path}/item.{i}", frame, "filter"):
            kept.append(item)
        else:
            dropped.append(item)
    return {"kept": kept, "dropped": dropped}


async def _c_map(ex: Executor, step, c, scope, path, frame, announce) -> Any:
    items = _over(c, scope, path)
    conc = render_value(c.get("concurrency"), scope)
    conc = 1 if conc is None else conc
    mode = render_value(c.get("on_item_error", "fail"), scope) or "fail"
    body = _body(c.get("do"), "do", path)
    announce({"over": items, "concurrency": conc, "on_item_error": mode})
    if mode not in ("fail", "skip"):
        raise RunError("validation", f"`on_item_error` must be fail or skip, got {mode!r}", path)
    if not isinstance(conc, int) or isinstance(conc, bool) or conc < 1:
        raise RunError(
            "validation", f"`concurrency` must be a positive integer, got {conc!r}", path
        )
    results: list[Any] = [None] * len(items)
    failed: set[int] = set()

    async def one(i: int) -> None:
        p = f"{path}/do.{i}"
        try:
            results[i] = await ex.run_step(body, _layer(scope, item=items[i], index=i), p, frame)
        except RunError as e:
            # a budget that would be exceeded ends the run: skipping the item would only make
            # the next one hit it too
            if mode == "skip" and not isinstance(e, ExitError) and e.code != "budget_exceeded":
                failed.add(i)
                ex.warn(p, frame.stack, f"item {i} skipped after {e.code}: {e.message}")
                return
            raise

    await _run_pool(len(items), conc, one)
    return [r for i, r in enumerate(results) if i not in failed]


async def _run_pool(n: int, concurrency: int, fn: Callable[[int], Awaitable[Any]]) -> None:
    """Run ``fn(0) … fn(n-1)`` with at most ``concurrency`` in flight (a pool of workers pulling
    indices in order, so starting order is input order).  The first failure cancels the calls in
    flight, waits for them to unwind, and is raised; nothing new starts after it.  Outer
    cancellation (deadline, abort) cancels every worker."""
    if n == 0:
        return
    if concurrency == 1:
        for i in range(n):
            await fn(i)
        return
    indices = iter(range(n))

    async def worker() -> None:
        for i in indices:
            await fn(i)

    await _run_all([worker() for _ in range(min(concurrency, n))])


async def _run_all(coros: list[Awaitable[Any]]) -> list[Any]:
    """Run coroutines concurrently; the first failure cancels the others and is raised."""
    tasks = [asyncio.ensure_future(co) for co in coros]
    if not tasks:
        return []
    try:
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            errors = [t for t in tasks if t in done and not t.cancelled() and t.exception()]
            if errors:
                for t in pending:
                    t.cancel()
                if pending:
                    await asyncio.wait(pending)
                raise errors[0].exception()
        return [t.result() for t in tasks]
    except BaseException:
        for t in tasks:
            if not t.done():
                t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _c_reduce(ex: Executor, step, c, scope, path, frame, announce) -> Any:
    items = _over(c, scope, path)
    acc = render_value(c.get("initial"), scope)
    body = _body(c.get("do"), "do", path)
    announce({"over": items, "initial": acc})
    for i, item in enumerate(items):
        acc = await ex.run_step(
            body, _layer(scope, item=item, index=i, accumulator=acc), f"{path}/do.{i}", frame
        )
    return acc


async def _c_parallel(ex: Executor, step, c, scope, path, frame, announce) -> Any:
    branches = c.get("branches") or {}
    if not isinstance(branches, dict):
        raise RunError("validation", "`branches` must map names to steps", path)
    conc = render_value(c.get("concurrency"), scope) or max(1, len(branches))
    announce({"branches": list(branches), "concurrency": conc})
    sem = asyncio.Semaphore(int(conc))

    async def one(name: str, body: Any) -> Any:
        async with sem:
            return await ex.run_step(_body(body, name, path), scope, f"{path}/{name}", frame)

    names = list(branches)
    values = await _run_all([one(n, branches[n]) for n in names])
    return dict(zip(names, values, strict=True))


async def _c_ask(ex: Executor, step, c, scope, path, frame, announce) -> Any:
    question = to_text(
        render_value(
            c.get("question"), scope, lenient=True, on_warning=_warner(ex, path, frame.stack)
        )
    )
    schema = render_value(c.get("schema"), scope)
    choices = render_value(c.get("choices"), scope)
    unanswered = render_value(c.get("when_unanswered", "skip"), scope)
    announce({"question": question, "choices": choices})
    answer: Any = NO_ANSWER
    interlocutor = ex.run.hooks.interlocutor
    if interlocutor is not None:
        async with ex.run.ask_lock:
            answer = await _maybe_await(
                interlocutor(AskRequest(question, schema, choices, path, list(frame.stack)))
            )
    if answer is not NO_ANSWER:
        problem = _check_answer(answer, schema, choices)
        if problem:
            raise RunError("output_validation", f"answer to `{question}`: {problem}", path)
        ex.emit(
            "ask", path, frame.stack, question=question, answer=_json_safe(answer), answered=True
        )
        return {"answer": answer, "answered": True}
    if isinstance(unanswered, dict) and "default" in unanswered:
        value = unanswered["default"]
        problem = _check_answer(value, schema, choices)
        if problem:  # a templated default outside the declared contract (literal: load error)
            raise RunError(
                "validation", f"`when_unanswered.default` of `{question}`: {problem}", path
            )
        ex.emit(
            "ask", path, frame.stack, question=question, answer=_json_safe(value), answered=False
        )
        return {"answer": value, "answered": False}
    if isinstance(unanswered, dict) and "fail" in unanswered:
        ex.emit("ask", path, frame.stack, question=question, answered=False)
        raise RunError("failed", to_text(unanswered["fail"]), path)
    ex.emit("ask", path, frame.stack, question=question, answer=None, answered=False)
    return {"answer": None, "answered": False}


def _check_answer(answer: Any, schema: Any, choices: Any) -> str | None:
    """Why ``answer`` breaks an ask's ``choices``/``schema`` (PLAN_IR.md §3), or None."""
    if choices is not None and not isinstance(choices, list | tuple):
        return f"`choices` must be a list, got {_kind(choices)}"
    if choices and answer not in choices:
        return f"{answer!r} is not one of {list(choices)!r}"
    if schema is not None and not isinstance(schema, dict):
        return f"`schema` must be a JSON Schema object, got {_kind(schema)}"
    if schema:
        import jsonschema

        try:
            jsonschema.validate(answer, schema)
        except jsonschema.ValidationError as e:
            return e.message
        except jsonschema.SchemaError as e:
            return f"`schema` is not valid JSON Schema: {e.message}"
    return None


async def _c_verify(ex: Executor, step, c, scope, path, frame, announce) -> Any:
    checks = c.get("checks") or []
    judges = c.get("judges") or []
    announce({"checks": len(checks), "judges": len(judges)})
    failures: list[str] = []
    for i, chk in enumerate(checks):
        ok = render_value(chk.get("ok"), scope) if isinstance(chk, dict) else chk
        if isinstance(ok, dict):  # a condition object
            ok = evaluate_condition(ok, scope)
        if not isinstance(ok, bool):  # like a non-bool `decide` condition: an error, not a failure
            raise RunError("validation", f"check {i}: `ok` must be a bool, got {_kind(ok)}", path)
        if not ok:
            msg = render_value(chk.get("message", "check failed"), scope, lenient=True)
            failures.append(to_text(msg))
    for i, j in enumerate(judges):
        prompt = to_text(
            render_value(
                j.get("prompt") if isinstance(j, dict) else j,
                scope,
                lenient=True,
                on_warning=_warner(ex, path, frame.stack),
            )
        )
        if not await ex.judge(prompt, path=f"{path}/judge.{i}", stack=frame.stack):
            failures.append(prompt)
    return {"passed": not failures, "failures": failures}


# ----------------------------------------------------------------- agent


#: How lowering describes the sub-plans it outlines (compiler/lowering.py): "…, outlined by flowc".
OUTLINED_MARK = ", outlined by flowc"


def is_outlined(plan: Any) -> bool:
    """True for a sub-plan the compiler outlined (its ``description`` ends with
    :data:`OUTLINED_MARK`), as opposed to one written by hand."""
    return str(getattr(plan, "description", None) or "").endswith(OUTLINED_MARK)


def _resolve_tools(
    ex: Executor,
    requested: Any,
    write: list[Path] | None,
    path: str,
    stack: list[str],
    frame: _Frame,
) -> list[str]:
    """Names the agent may call: request ∩ policy (RUNTIME.md §4); write tools granted by
    a ``write`` scope; ``plan_and_execute`` never offered."""
    from agentflow.runtime.tools.catalog import match_pattern

    catalog = ex.run.catalog
    names = list(catalog.names()) if catalog is not None else []
    # plans from the plans directory are tools too (outlined sub-plans only when named)
    for pname in ex.run.plans or {}:
        if f"plan__{pname}" not in names:
            names.append(f"plan__{pname}")
    sub_plans = [f"plan__{p}" for p in (getattr(frame.plan, "plans", None) or {})]
    sub_plans += [f"plan__{p}" for p in frame.root_plans or {}]
    if requested == "none":
        return []
    if requested is None:
        # LANGUAGE.md §10: sub-plans the compiler outlined are offered only when named, though
        # build_catalog registers them; hand-written sub-plans stay tools (RUNTIME.md §4)
        outlined = {
            f"plan__{n}"
            for source in (getattr(frame.plan, "plans", None), frame.root_plans)
            for n, sub in (source or {}).items()
            if is_outlined(sub)
        }
        chosen = [n for n in names if n not in outlined]
    else:
        if isinstance(requested, str):
            requested = [requested]
        chosen = []
        for r in requested:
            r = str(r)
            pool = names + [p for p in sub_plans if p not in names]
            if "*" in r:
                hits = [n for n in pool if match_pattern(r, n)]
            elif r in pool:
                hits = [r]
            elif f"builtin__{r}" in pool:
                hits = [f"builtin__{r}"]
            else:
                hits = []
            if not hits:
                raise RunError(
                    "validation", f"`tools` entry '{r}' matches no tool in the catalog", path
                )
            for h in hits:
                if h not in chosen:
                    chosen.append(h)
    policy = getattr(getattr(ex.run.config, "policy", None), "allowed_tools", None)
    out = []
    for n in chosen:
        if n == "plan_and_execute":
            continue
        if policy is None:
            allowed = n not in DEFAULT_DENIED
        else:
            allowed = any(match_pattern(p, n) for p in policy)
        if not allowed and write and n in DEFAULT_DENIED:
            allowed = True
        if allowed:
            out.append(n)
        elif requested is not None and "*" not in n:
            ex.warn(path, stack, f"tool '{n}' is outside the host policy and is not offered")
    return out


def _profile(ex: Executor, target: Any, scope, path: str, stack: list[str]) -> tuple[Any, str]:
    """(profile or None, label) for an agent step's ``agent`` field."""
    if not target:
        return None, "default"
    if not isinstance(target, dict):
        target = dict(target)
    kind = target.get("kind")
    cfg = ex.run.config
    if kind == "alias":
        name = target.get("name")
        prof = (getattr(cfg, "agents", None) or {}).get(name) if cfg is not None else None
        if prof is None:
            ex.warn(
                path,
                stack,
                f"agent '{name}' has no [agents.{name}] profile; running with the default profile",
            )
        return prof, str(name)
    if kind in ("team.main", "team.member"):
        team_name = target.get("team")
        team = (getattr(cfg, "teams", None) or {}).get(team_name) if cfg is not None else None
        if team is None:
            raise RunError(
                "validation",
                f"team '{team_name}' is not configured (add [teams.{team_name}] to flow.toml)",
                path,
            )
        if kind == "team.main":
            member = team.main
        else:
            member = render_value(target.get("member"), scope)
            if not isinstance(member, str) or member not in team.members:
                raise RunError(
                    "invalid_member",
                    f"team '{team_name}' has no member {to_text(member)!s}; members: "
                    + ", ".join(sorted(team.members)),
                    path,
                )
        return team.members.get(member), f"{team_name}.{member}"
    raise RunError("validation", f"unknown agent kind {kind!r}", path)


async def _c_agent(ex: Executor, step, c, scope, path, frame, announce) -> Any:
    stack = frame.stack
    warn = _warner(ex, path, stack)
    prompt = to_text(render_value(c.get("prompt"), scope, lenient=True, on_warning=warn))
    system = c.get("system_prompt")
    system = to_text(render_value(system, scope, lenient=True, on_warning=warn)) if system else None
    agent_input = render_value(c.get("input"), scope) if "input" in c else None
    model = render_value(c.get("model"), scope) if c.get("model") is not None else None
    write_raw = render_value(c.get("write"), scope) if c.get("write") is not None else None
    max_iter = render_value(c.get("max_iterations", 8), scope)
    if isinstance(max_iter, float) and max_iter.is_integer():
        max_iter = int(max_iter)
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        # a templated budget is checked like a literal one (PLAN_IR.md §6: an integer ≥ 1),
        # never coerced (2.5 → 2, true → 1) nor reported as a Python error
        raise RunError(
            "validation",
            f"`max_iterations` must be an integer ≥ 1, got {json.dumps(_json_safe(max_iter), ensure_ascii=False)}",
            path,
            _source(step),
        )
    profile, label = _profile(ex, c.get("agent"), scope, path, stack)
    write: list[Path] | None = None
    if write_raw is not None:
        items = write_raw if isinstance(write_raw, list) else [write_raw]
        ws = ex.run.workspace
        write = [(ws / str(p)) if not Path(str(p)).is_absolute() else Path(str(p)) for p in items]
    if hasattr(ex.run.catalog, "prepare"):  # connect the MCP servers the request may touch
        try:
            await ex.run.catalog.prepare(c.get("tools"))
        except RunError as e:
            e.step_path = e.step_path or path
            raise
    tool_names = _resolve_tools(ex, c.get("tools"), write, path, stack, frame)
    if profile is not None:
        if getattr(profile, "system_prompt", None):
            system = f"{profile.system_prompt}\n\n{system}" if system else profile.system_prompt
        if model is None and getattr(profile, "model", None):
            model = profile.model
    model = model or "chat"
    announce(
        {
            "prompt": prompt,
            "system_prompt": system,
            "input": agent_input,
            "model": model,
            "tools": tool_names,
            "write": [str(p) for p in write] if write is not None else None,
            "agent": label,
            "max_iterations": max_iter,
        }
    )
    allowed = set(tool_names)
    hard_stop: list[BaseException] = []

    async def call_tool(name: str, args: Any, tool_path: str) -> Any:
        try:
            return await ex.dispatch_tool(
                name,
                args,
                scope=scope,
                path=tool_path,
                frame=frame,
                write_scope=write,
                allowed=allowed,
            )
        except (RunAborted, ExitError) as e:
            # Hard stops must not return into the loop: the agent re-raises `aborted`.
            hard_stop.append(e)
            raise RunError("aborted", str(e), tool_path) from None

    def emit(kind: str, ev_path: str | None = None, **data: Any) -> None:
        ex.emit(kind, ev_path or path, stack, **data)

    try:
        result = await _run_agent(
            ex,
            prompt=prompt,
            output_schema=c.get("output_schema") or {"type": "object"},
            tools=[_tool_for(ex, n, frame).spec() for n in tool_names],
            max_iterations=int(max_iter),
            model=model,
            system_prompt=system,
            input=agent_input,
            repair_attempts=int(c.get("repair_attempts", 1)),
            **_result_cap(ex.run.config),
            budget=_agent_budget(ex.run.config, c.get("budget"), path),
            call_tool=call_tool,
            emit=emit,
            path=path,
        )
    except RunError:
        if hard_stop:
            raise hard_stop[0] from None
        raise
    except FlowError as e:  # ConfigError: no model for the role
        if hard_stop:
            raise hard_stop[0] from None
        if isinstance(e, RunAborted):
            raise
        raise RunError("validation", str(e), path) from None
    if c.get("require_final") and not result.get("final"):
        meta = _meta(step)
        where = []
        if meta.get("stage"):
            where.append(f"stage `{meta['stage']}`")
        else:
            where.append(f"step `{step.id or path}`")
        if meta.get("source"):
            where.append(f"({meta['source']})")
        from agentflow.runtime.agent import first_problem

        problems = [str(p) for p in result.get("errors") or []]
        why = f"; last problem: {first_problem(problems)}" if problems else ""
        raise RunError(
            "output_validation",
            " ".join(where) + ": agent could not produce output conforming to its contract "
            f"within {int(max_iter)} rounds{why}",
            path,
            _source(step),
            details={"errors": problems} if problems else None,
        )
    return result


def _tool_for(ex: Executor, name: str, frame: _Frame) -> Any:
    """The catalog Tool for ``name`` (a synthesized entry for plans not in the catalog)."""
    catalog = ex.run.catalog
    tool = catalog.get(name) if catalog is not None else None
    if tool is not None:
        return tool
    from agentflow.runtime.tools.catalog import Tool

    plan = ex._find_plan(name, frame)
    schema = getattr(plan, "input_schema", None) or {"type": "object"}

    async def unreachable(args, ctx):  # dispatch goes through Executor.dispatch_tool
        raise RunError("tool_error", f"{name} must be dispatched by the executor")

    return Tool(
        name=name,
        description=getattr(plan, "description", None) or f"Run plan {name}",
        input_schema=schema,
        func=unreachable,
        source="plan",
    )


def _agent_budget(config: Any, planned: Any, path: str) -> Any:
    """The model budget of one agent step run: the plan's ``budget`` of the step, else
    ``[budget.per_agent]`` of flow.toml, else None (docs/models.md "Budgets")."""
    from agentflow.runtime.models.budget import budget_from

    name = f"agent step {path}"
    if isinstance(planned, dict):
        return budget_from(planned, name=name, source="its `budget` in the plan")
    per_agent = getattr(getattr(config, "budget", None), "per_agent", None)
    return budget_from(per_agent, name=name, source="flow.toml [budget.per_agent]")


def run_budgets(plan: Any, config: Any) -> list[Any]:
    """The run-level model budgets of ``plan``: its ``budget`` and flow.toml's ``[budget]``
    (both apply when both are set)."""
    from agentflow.runtime.models.budget import budget_from

    found = [
        budget_from(getattr(plan, "budget", None), name="run", source="the plan's `budget`"),
        budget_from(getattr(config, "budget", None), name="run", source="flow.toml [budget]"),
    ]
    return [b for b in found if b is not None]


def _result_cap(config: Any) -> dict[str, int]:
    """``{max_result_chars}`` from ``[tools] max_result_chars`` when a configuration is given."""
    tools = getattr(config, "tools", None)
    cap = getattr(tools, "max_result_chars", None)
    return {"max_result_chars": int(cap)} if isinstance(cap, int) else {}


async def _run_agent(ex: Executor, *, call_tool, emit, path, **fields) -> dict[str, Any]:
    """Build the agent module's AgentSpec from ``fields`` (only the fields it declares) and run
    the loop.  ``call_tool(name, args, path)`` is the executor's gated dispatch."""
    from agentflow.runtime import agent as agent_mod

    spec_cls = agent_mod.AgentSpec
    known = _field_names(spec_cls)
    spec = spec_cls(**{k: v for k, v in fields.items() if not known or k in known})
    if ex.run.router is None:
        raise RunError(
            "validation",
            "an agent step needs a model but none is configured "
            "(set [models] in flow.toml, or OPENAI_BASE_URL/OPENAI_API_KEY)",
            path,
        )
    result = await agent_mod.run_agent(
        spec, router=ex.run.router, call_tool=call_tool, emit=emit, step_path=path
    )
    return dict(result)


def _field_names(cls: Any) -> set[str]:
    fields_ = getattr(cls, "__dataclass_fields__", None)
    if fields_:
        return set(fields_)
    mf = getattr(cls, "model_fields", None)
    if mf:
        return set(mf)
    try:
        return set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return set()


_CONTROL: dict[str, Callable[..., Awaitable[Any]]] = {
    "value": _c_value,
    "exit": _c_exit,
    "decide": _c_decide,
    "filter": _c_filter,
    "map": _c_map,
    "reduce": _c_reduce,
    "parallel": _c_parallel,
    "ask": _c_ask,
    "verify": _c_verify,
    "agent": _c_agent,
}

# ---------------------------------------------------------------------------------------------
# Entry points


def _validate_input(plan: Any, data: Any, *, code: str | None = None) -> None:
    schema = getattr(plan, "input_schema", None)
    if not schema:
        return
    import jsonschema

    validator_cls = jsonschema.validators.validator_for(schema)
    errors = sorted(validator_cls(schema).iter_errors(data), key=lambda e: list(e.path))
    if not errors:
        return
    lines = []
    for e in errors[:5]:
        where = "input" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in e.path)
        lines.append(f"{where}: {e.message}")
    message = f"input of plan '{plan.name}' does not match its input_schema: " + "; ".join(lines)
    if code is not None:
        raise RunError(code, message)
    raise InputError(message)


async def run_plan(
    plan: Any,
    input: Any = None,
    *,
    catalog: Any = None,
    router: Any = None,
    config: Any = None,
    workspace: Path | str | None = None,
    sinks: Iterable[Sink] = (),
    hooks: Hooks | None = None,
    plans: dict[str, Any] | None = None,
) -> RunResult:
    """Run ``plan`` (an :class:`agentflow.ir.models.Plan`) with ``input`` (default ``{}``).

    - ``catalog``: :class:`agentflow.runtime.tools.catalog.Catalog` for ordinary steps and agents.
    - ``router``: :class:`agentflow.runtime.models.router.ModelRouter` (agent, infer, solver,
      verify judges); None is fine for plans that make no model call.
    - ``config``: :class:`agentflow.runtime.config.Config` (agents, teams, policy).
    - ``workspace``: root for file tools (default: the current directory).
    - ``sinks``: event sinks (``JsonlSink``, ``CallbackSink``, ``ConsoleSink`` …), closed at the end.
    - ``hooks``: gate / on_tool_error / interlocutor (RUNTIME.md §7).
    - ``plans``: other plans callable as ``plan__NAME`` (the plans directory).

    Raises :class:`InputError` when ``input`` does not match ``plan.input_schema`` (before any
    step).  Every run-time failure comes back as ``RunResult(status="error", error={code,
    message, step_path, source?})``; hook aborts as ``status="aborted"``.
    """
    if input is None:
        input = {}
    _validate_input(plan, input)
    from agentflow.runtime.result import StepUsage

    step_usage = StepUsage()
    bus = EventBus([step_usage, *sinks])
    run = _Run(
        catalog=catalog,
        router=router,
        config=config,
        workspace=Path(workspace) if workspace is not None else Path.cwd(),
        bus=bus,
        hooks=hooks or Hooks(),
        plans=dict(plans or {}),
        step_usage=step_usage,
    )
    ex = Executor(run)
    loop = asyncio.get_running_loop()
    deadline_s = _duration_s(getattr(plan, "deadline", None))
    frame = _Frame(
        plan=plan,
        stack=[plan.name],
        prefix="",
        deadline_at=loop.time() + deadline_s if deadline_s is not None else None,
        root_plans=dict(getattr(plan, "plans", None) or {}),
    )
    before = usage_snapshot(router)
    forwarding = router is not None and getattr(router, "on_event", False) is None
    if forwarding:  # retries / failovers of the model layer become trace events
        from agentflow.runtime.models.router import forward_model_events

        router.on_event = forward_model_events(bus)
    t0 = time.monotonic()
    scope: dict[str, Any] = {"input": input}
    results: dict[str, Any] = {}
    status, output, error = "ok", None, None
    from agentflow.runtime.models.budget import pop_budget, push_budget

    budget_tokens = [push_budget(b) for b in run_budgets(plan, config)]
    started: dict[str, Any] = {"plan": plan.name, "input": _json_safe(input)}
    source_file = getattr(plan, "source_file", None)
    if source_file and not source_file.startswith("<"):
        started["file"] = source_file  # the `.flow` or plan file, as given (for reports)
    ex.emit("run_started", "", frame.stack, **started)
    cancelled: BaseException | None = None

    async def body() -> Any:
        last = await ex.run_steps(frame, scope, results)
        return await ex.finish(frame, scope, last)

    try:
        try:
            output = await _until_stopped(body())
        except _ExitOk as e:
            status, output = "exited", e.output
    except RunAborted as e:
        status = "aborted"
        error = e.error or {"code": "aborted", "message": e.message, "step_path": e.step_path}
    except RunError as e:
        status, error = "error", _err_dict(e)
    except asyncio.CancelledError as e:
        # cancelled from outside (a second Ctrl-C, the host's own timeout): the trace still
        # gets its run_finished and the sinks are closed, then the cancellation goes on
        cancelled = e
        status = "aborted"
        error = {"code": "aborted", "message": "the run was cancelled", "step_path": None}
    for token in reversed(budget_tokens):
        pop_budget(token)
    result = RunResult(
        status=status,  # type: ignore[arg-type]
        output=output,
        error=error,
        results=results,
        usage={**usage_delta(router, before), "by_step": step_usage.by_step},
        duration_ms=elapsed_ms(t0),
    )
    ex.emit(
        "run_finished",
        "",
        frame.stack,
        status=status,
        error=error,
        output=_json_safe(output),
        duration_ms=result.duration_ms,
        usage=result.usage,
    )
    if forwarding:
        router.on_event = None
    bus.close()
    if cancelled is not None:
        raise cancelled
    return result


class _Stopped(RunAborted):
    """The run was asked to stop by a signal (runtime/loop.py ``StopRequest``)."""


async def _until_stopped(work: Awaitable[Any]) -> Any:
    """Await ``work``; when the owning loop's stop request fires first (SIGINT / SIGTERM under
    :func:`agentflow.runtime.loop.run`), cancel it, let it unwind (its steps emit their
    ``step_finished``) and raise :class:`_Stopped` (→ an ``aborted`` RunResult)."""
    from agentflow.runtime.loop import stop_request

    stop = stop_request()
    if stop is None:
        return await work
    stop.listeners += 1
    task: asyncio.Future[Any] | None = None
    try:
        # A signal that came while the run was loading (tool modules, config: synchronous code)
        # still sits in the loop's wake-up pipe: let the loop hand it to ``stop.request`` before
        # the first step starts (a few passes; none when no signal came).
        for _ in range(16):
            if stop.handled >= stop.received:
                break
            await asyncio.sleep(0)
        if not stop.event.is_set():
            task = asyncio.ensure_future(work)
            waiter = asyncio.ensure_future(stop.event.wait())
            try:
                await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                if not task.done():
                    task.cancel()
                    await asyncio.wait({task})  # unwinds even if we are cancelled meanwhile
    finally:
        stop.listeners -= 1
        if task is None:
            _close_awaitable(work)  # never started
    if task is None or (task.cancelled() and stop.event.is_set()):
        raise _Stopped(f"interrupted by {stop.signal}", None)
    return task.result()


def _close_awaitable(work: Awaitable[Any]) -> None:
    """Close a coroutine that will never run (no "was never awaited" warning)."""
    close = getattr(work, "close", None)
    if inspect.iscoroutine(work) and callable(close):
        close()


def run_plan_sync(plan: Any, input: Any = None, **kwargs: Any) -> RunResult:
    """:func:`run_plan` from synchronous code (runs its own event loop)."""
    from agentflow.runtime.loop import run as _run_loop

    return _run_loop(run_plan(plan, input, **kwargs))
