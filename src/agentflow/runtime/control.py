"""The control steps (docs/spec/PLAN_IR.md §5): ``value``, ``exit``, ``decide``, ``filter``,
``map``, ``reduce``, ``loop``, ``parallel``, ``ask``, ``verify``, ``try``, ``sleep`` (``agent`` lives in
:mod:`agentflow.runtime.agent_step`).

The executor never dispatches a control step to a tool: it calls the step's handler from
:data:`HANDLERS` with one :class:`ControlCall`, which bundles what the handler may use — the
executor, the step, its compiled input, the template scope, the step path, the plan frame and
``announce`` (which emits the step's ``step_started`` with the rendered input, once).  Bodies run
through the executor's ``run_step`` (:meth:`ControlCall.run_body`), so they get their own events,
retries and timeouts; each ``map``/``reduce`` item and ``parallel`` branch is a unit of the run's
``Effects``; model calls go through the executor's ``judge``, questions through its ``ask``.

Adding a control step: a handler here (``async def _name(call: ControlCall) -> Any``) and its
entry in :data:`HANDLERS`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    ERROR_CODES,
    HARD_STOP_CODES,
    MAX_CONCURRENCY,
    MAX_LOOP_ROUNDS,
    MAX_SLEEP_MS,
    UNANSWERED_FAIL,
    Code,
    duration_ms,
)
from agentflow.errors import Cancelled, ExitError, RunAborted, RunError, Stopped
from agentflow.ir.models import Step
from agentflow.ir.outcomes import tolerance
from agentflow.ir.schemas import whole_numbers
from agentflow.runtime.effects import (
    UnitSpec,
    advance_virtual,
    fork_virtual,
    join_virtual,
    nearest_bound,
    virtual_elapsed,
)
from agentflow.runtime.expressions import (
    FlowRange,
    _kind,
    evaluate_condition,
    refuse_too_deep,
    render_value,
    to_json_value,
    to_text,
)
from agentflow.runtime.hooks import (
    NO_ANSWER,
    AskRequest,
    SleepRequest,
    check_answer,
    maybe_await,
    secret_in_answer,
    unanswered_message,
)

if TYPE_CHECKING:
    from agentflow.runtime.executor import Executor, Frame

__all__ = [
    "HANDLERS",
    "Announce",
    "ControlCall",
    "ControlHandler",
    "ExitError",
    "ExitOk",
    "as_body",
    "check_answer",
    "outcome_error",
    "run_all",
    "run_pool",
]

#: ``announce(rendered_input)``: emit the step's ``step_started`` (once; later calls do nothing).
Announce = Callable[[Any], None]


class ExitOk(Exception):
    """An ``exit`` with status ok: ends the current plan with ``output``."""

    def __init__(self, output: Any, path: str):
        super().__init__("exit")
        self.output = output
        self.path = path

    def __reduce__(self) -> tuple[type[ExitOk], tuple[Any, str]]:
        # round-trips a durable engine's serializer (runtime/durable)
        return (type(self), (self.output, self.path))


@dataclass(slots=True)
class ControlCall:
    """One invocation of a control step: everything its handler may use.

    ``input``: the step's compiled input (docs/spec/PLAN_IR.md §5 fields; templates parsed, bodies
    kept as :class:`~agentflow.ir.models.Step`).  ``scope``: the template scope (``input``, earlier
    step results, and ``item``/``index``/``accumulator`` inside bodies).  ``path``: the step path
    (docs/spec/PLAN_IR.md §7).  ``frame``: the plan activation (call stack, deadline, sub-plans).
    """

    ex: Executor
    step: Step
    input: dict[str, Any]
    scope: Mapping[str, Any]
    path: str
    frame: Frame
    announce: Announce

    @property
    def stack(self) -> list[str]:
        """The plan call stack (plan names, outermost first)."""
        return self.frame.stack

    @property
    def source(self) -> str | None:
        """The step's ``.flow`` position (``meta.source``), or None."""
        src = self.step.meta.get("source")
        return str(src) if src else None

    def render(self, key: str, default: Any = None) -> Any:
        """The field ``key`` (``default`` when absent) rendered against the scope."""
        return render_value(self.input.get(key, default), self.scope)

    def render_text(self, value: Any) -> Any:
        """``value`` rendered leniently (a missing path renders as text and warns here) — for
        the prose fields: questions, prompts, messages."""
        return render_value(value, self.scope, lenient=True, on_warning=self.warn)

    def warn(self, message: str) -> None:
        """Emit a ``warning`` event at this step."""
        self.ex.warn(self.path, self.frame.stack, message)

    def body(self, key: str) -> Step:
        """The body step held by field ``key``; RunError when it is not a step."""
        return as_body(self.input.get(key), key, self.path)

    async def run_body(self, body: Step, path: str, scope: Mapping[str, Any] | None = None) -> Any:
        """Run a body step at ``path`` (events, retries, timeout) in ``scope`` (default: this
        step's)."""
        return await self.ex.run_step(
            body, self.scope if scope is None else scope, path, self.frame
        )


ControlHandler = Callable[[ControlCall], Awaitable[Any]]


def as_body(value: Any, label: str, path: str) -> Step:
    """``value`` when it is a body step (the loader makes every body a Step), else RunError."""

    if not isinstance(value, Step):
        raise RunError(Code.VALIDATION, f"`{label}` must be a step", path)
    return value


def _layer(scope: Mapping[str, Any], **names: Any) -> dict[str, Any]:
    out = dict(scope)
    out.update(names)
    return out


async def _condition(call: ControlCall, scope: Mapping[str, Any], path: str, what: str) -> bool:
    """A ``when`` condition, or an ``infer`` question put to the judge role."""
    c = call.input
    if "when" in c and c["when"] is not None:
        held: bool = await call.ex.effects.evaluation(
            path, lambda: evaluate_condition(c["when"], scope)
        )
        return held
    if "infer" in c and c["infer"] is not None:
        stack = call.stack
        question = render_value(
            c["infer"], scope, lenient=True, on_warning=lambda m: call.ex.warn(path, stack, m)
        )
        return await call.ex.judge(to_text(question), path=path, stack=stack)
    raise RunError(Code.VALIDATION, f"`{what}` needs `when` or `infer`", path)


async def _over(call: ControlCall) -> list[Any]:
    over = await call.ex.effects.evaluation(call.path, lambda: call.render("over"))
    if over is None:  # a missing upstream value is not "no items"; `?? []` opts in to that
        raise RunError(
            Code.VALIDATION,
            "`over` must be a list, got null (write `?? []` to default it)",
            call.path,
        )
    if isinstance(over, dict):
        return list(over.values())
    if isinstance(over, FlowRange):
        return over.to_list()
    if not isinstance(over, list | tuple):
        raise RunError(Code.VALIDATION, f"`over` must be a list, got {_kind(over)}", call.path)
    return list(over)


# ---------------------------------------------------------------------------------------------
# The handlers


async def _value(call: ControlCall) -> Any:
    value = await call.ex.effects.evaluation(call.path, lambda: call.render("value"))
    refuse_too_deep(value, call.input.get("value"))  # `[s]` in a loop: before events see it
    call.announce({"value": value})
    return value


async def _exit(call: ControlCall) -> Any:
    when = call.input.get("when")
    if when is not None and not evaluate_condition(when, call.scope):
        call.announce({"when": False})
        return None
    status = call.render("status", "error")
    code = call.render("code") or Code.FAILED
    message = call.render_text(call.input.get("message"))
    call.announce({"when": True, "status": status, "code": code, "message": message})
    if status == "ok":
        output = call.render("output") if "output" in call.input else None
        raise ExitOk(output, call.path)
    text = to_text(message) if message is not None else "exit"
    raise ExitError(str(code), text, call.path, call.source)


async def _decide(call: ControlCall) -> Any:
    taken = await _condition(call, call.scope, call.path, "decide")
    branch = "then" if taken else "else"
    call.announce({"branch": branch})
    body = call.input.get(branch)
    if body is None:
        return {"branch": branch, "output": None}
    out = await call.run_body(as_body(body, branch, call.path), f"{call.path}/{branch}")
    return {"branch": branch, "output": out}


async def _filter(call: ControlCall) -> Any:
    items = await _over(call)
    call.announce({"over": items})
    kept, dropped = [], []
    for i, item in enumerate(items):
        inner = _layer(call.scope, item=item, index=i)
        if await _condition(call, inner, f"{call.path}/item.{i}", "filter"):
            kept.append(item)
        else:
            dropped.append(item)
    return {"kept": kept, "dropped": dropped}


async def _map(call: ControlCall) -> Any:
    items = await _over(call)
    conc = call.render("concurrency")
    conc = 1 if conc is None else conc
    mode = call.render("on_item_error", "fail") or "fail"
    body = call.body("do")
    call.announce({"over": items, "concurrency": conc, "on_item_error": mode})
    tolerated = tolerance(mode, len(items))
    if tolerated is None:
        raise RunError(
            Code.VALIDATION,
            '`on_item_error` must be fail, skip or { tolerate: N | "P%" }, '
            f"got {to_json_value(mode)!r}",
            call.path,
        )
    if isinstance(conc, float) and conc.is_integer():
        conc = int(conc)
    if not isinstance(conc, int) or isinstance(conc, bool) or not 1 <= conc <= MAX_CONCURRENCY:
        # a computed `limit` is checked here as the compiler checks a constant one
        raise _written_bound(
            f"{_limit_field(call, 'parallel map')} must be an integer from 1 to "
            f"{MAX_CONCURRENCY}, got " + json.dumps(to_json_value(conc), ensure_ascii=False),
            call,
        )
    results: list[Any] = [None] * len(items)
    failed: set[int] = set()
    errors: dict[int, RunError] = {}
    ex, frame = call.ex, call.frame
    units = ex.effects
    concurrent = conc > 1 and len(items) > 1

    def finished(i: int) -> None:
        # the items finished so far, kept where the run's result finds them if the run is
        # stopped while this map runs (RunResult.partial; dropped when the map ends)
        _partial_entry(call, {"of": len(items), "items": {}})["items"][i] = results[i]

    def item_failed(i: int, e: RunError) -> None:
        p = f"{call.path}/do.{i}"
        if mode == "fail":
            raise e
        if mode == "skip":
            # a budget that would be exceeded ends the run: skipping the item would only make
            # the next one hit it too
            if isinstance(e, ExitError) or e.code == Code.BUDGET_EXCEEDED:
                raise e
            failed.add(i)
            call.ex.warn(p, call.stack, f"item {i} skipped after {e.code}: {e.message}")
            return
        if e.code in HARD_STOP_CODES:  # a `fail` (ExitError) is an item's failure like any
            raise e
        errors[i] = e
        results[i] = {"ok": False, "error": outcome_error(e, p)}
        if len(errors) > tolerated:
            raise _over_tolerance(call, errors, len(items), mode) from e
        finished(i)
        call.ex.warn(p, call.stack, f"item {i} failed (tolerated) with {e.code}: {e.message}")

    def item_done(i: int, value: Any) -> None:
        results[i] = {"ok": True, "value": value} if isinstance(mode, dict) else value
        finished(i)

    async def one(i: int) -> None:
        p = f"{call.path}/do.{i}"
        scope = _layer(call.scope, item=items[i], index=i)
        spec = UnitSpec(
            "body", frame, concurrent, conc, body=body, scope=scope,
            finished=partial(item_done, i),
        )  # fmt: skip
        try:
            value = await units.unit(p, partial(ex.run_step, body, scope, p, frame), spec)
        except RunError as e:
            item_failed(i, e)
            return
        item_done(i, value)

    async with _keeps_partial(call):
        await _map_items(call, items, conc, mode, one, item_failed, item_done)
    return [r for i, r in enumerate(results) if i not in failed]


def _partial_entry(call: ControlCall, fresh: dict[str, Any]) -> dict[str, Any]:
    """The ``RunResult.partial`` entry of the construct ``call`` runs (``fresh``, with its
    place in the `.flow` — ``stage``, ``label``, ``source`` — when it has none yet): what it
    finished so far, kept on the executor where a stopped run's result finds it."""
    ex = call.ex
    entry = ex.partial.get(call.path)
    if entry is None:
        entry = ex.partial[call.path] = fresh
        place = ex.places.get(call.path)
        if place is not None:
            names = place.names()
            for key, value in (("stage", names.stage), ("label", names.label)):
                if value is not None:
                    entry[key] = value
            if place.source is not None:
                entry["source"] = place.source
    return entry


@asynccontextmanager
async def _keeps_partial(call: ControlCall) -> AsyncIterator[None]:
    """Around a construct's bodies: its ``RunResult.partial`` entry is dropped when it ends
    (normally or by an error) and kept when the run is stopped (a cancellation, a
    ``RunAborted``, or a durable unit's ``aborted`` error).  Ending, it drops its bodies'
    entries too: a construct in a body cancelled because a sibling failed (a ``parallel``'s
    branch, a map's item) kept its entry as if the run were stopped."""
    stopped = False
    try:
        yield
    except (asyncio.CancelledError, RunAborted):
        stopped = True  # the run was stopped: its result reports what was finished
        raise
    except RunError as e:
        stopped = e.code == Code.ABORTED  # … a durable unit says so as an error
        raise
    finally:
        if not stopped:
            kept, under = call.ex.partial, call.path + "/"
            for path in [p for p in kept if p == call.path or p.startswith(under)]:
                del kept[path]


async def _map_items(
    call: ControlCall,
    items: list[Any],
    conc: int,
    mode: Any,
    one: Callable[[int], Awaitable[None]],
    item_failed: Callable[[int, RunError], None],
    item_done: Callable[[int, Any], None],
) -> None:
    """Run a map's items: in one pool, or (a map too wide for one durable unit) in batches."""
    units = call.ex.effects
    size = units.map_batch(call.path, len(items))
    if not size:
        await run_pool(len(items), conc, one)
        return
    # a map too wide for one durable unit's record (Temporal: one workflow history) runs as
    # batches of `size` items, each a child unit (docs/durable.md "Temporal"); at most `conc`
    # items run at once across the batches, which run in index order, each running about
    # BATCH_CONCURRENCY of them at once (a batch that runs few at a time spends its worker's
    # time on workflow activations, not items)
    slices = [(lo, min(lo + size, len(items))) for lo in range(0, len(items), size)]
    at_once = min(len(slices), -(-conc // BATCH_CONCURRENCY))
    per_batch = -(-conc // at_once)
    body = call.body("do")

    async def batch(k: int) -> None:
        lo, hi = slices[k]
        spec = UnitSpec("body", call.frame, True, per_batch, body=body, scope=call.scope)
        outcomes = await units.map_slice(call.path, k, items[lo:hi], lo, spec, mode == "fail")
        for j, out in enumerate(outcomes):
            if isinstance(out, RunError):
                item_failed(lo + j, out)
            else:
                item_done(lo + j, out)

    await run_pool(len(slices), at_once, batch)


#: How many items of a batched map each of its batches runs at once, about (at most the map's
#: ``concurrency`` across its batches: ``ceil(concurrency / this)`` batches at a time).
BATCH_CONCURRENCY = 32

#: How many failed items a map tolerates, at most, when it lists them in a message.
_LISTED_FAILURES = 3


def outcome_error(e: RunError, path: str) -> dict[str, Any]:
    """The ``error`` of a failed item's outcome or of a caught failure (docs/spec/PLAN_IR.md §5):
    ``{code, message, step, source?, where}`` — ``step``: the step path that failed, ``source``:
    its ``.flow`` position (``file:line:col``) when known, ``where``: the same place as a run
    error's (:class:`~agentflow.errors.ErrorInfo`): ``file``, ``line``, ``col`` of ``source``
    and the failed step's ``stage``, ``item``, ``agent``, ``label`` (those known; an empty object
    for a hand-written plan's step without a source)."""
    err: dict[str, Any] = {"code": e.code, "message": e.message, "step": e.step_path or path}
    where: dict[str, Any] = {}
    if e.source:
        err["source"] = e.source
        at = Span.parse(e.source)
        if at is not None:
            where.update(file=at.file, line=at.line, col=at.column)
    where.update(e.where)
    err["where"] = where
    return err


def _over_tolerance(call: ControlCall, errors: dict[int, RunError], n: int, mode: Any) -> RunError:
    """The map's error once more items failed than ``mode`` tolerates: how many, and the first
    few (index, code, source, message), in input order.  Its code is the first failure's."""
    order = sorted(errors)
    listed = []
    for i in order[:_LISTED_FAILURES]:
        e = errors[i]
        where = f" at {e.source}" if e.source else ""
        listed.append(f"item {i}: {e.code}{where}: {e.message}")
    more = len(order) - _LISTED_FAILURES
    if more > 0:
        listed.append(f"and {more} more")
    t = mode["tolerate"]
    allowed = tolerance(mode, n)
    limit = f"{t} ({allowed} of {n})" if isinstance(t, str) else str(t)
    first = errors[order[0]]
    # an `exit`'s own code is no registered code: the map's error keeps it as an exit would
    cls = RunError if first.code in ERROR_CODES else ExitError
    return cls(
        first.code,
        f"{len(order)} of {n} items failed, more than the {limit} tolerated; " + "; ".join(listed),
        call.path,
        call.source,
        details={"failed": [outcome_error(errors[i], f"{call.path}/do.{i}") for i in order]},
    )


async def _try(call: ControlCall) -> Any:
    """``do``'s value; when ``do`` fails (after its own retries) with one of ``on`` (any code when
    absent), a ``step_caught`` event and ``catch``'s value, with ``error`` — ``{code, message,
    step, source?}`` — in its scope.  A `fail`/`exit` with status error is caught like any
    failure; ``aborted``, ``deadline_exceeded`` and ``budget_exceeded`` never are, nor a
    cancellation (not a RunError)."""
    codes = call.render("on")
    call.announce({"on": codes} if codes is not None else {})
    body = call.body("do")
    p = f"{call.path}/do"
    try:
        return await call.run_body(body, p)
    except RunError as e:
        if e.code in HARD_STOP_CODES or (codes is not None and e.code not in codes):
            raise
        error = outcome_error(e, p)
    # named as the step's own lines name it (`s › v = try`, its `let` included), not as an
    # event below it is (`s › try`)
    place = call.ex.place_of(call.path)
    own = place.step_fields() if place is not None else {}
    names = {k: own[k] for k in ("stage", "item", "agent", "label") if k in own}
    call.ex.emit("step_caught", call.path, call.stack, error=error, **names)
    fallback = call.body("catch")
    return await call.run_body(fallback, f"{call.path}/catch", _layer(call.scope, error=error))


async def _reduce(call: ControlCall) -> Any:
    items = await _over(call)
    acc = call.render("initial")
    body = call.body("do")
    call.announce({"over": items, "initial": acc})
    units = call.ex.effects
    async with _keeps_partial(call):
        for i, item in enumerate(items):
            p = f"{call.path}/do.{i}"
            scope = _layer(call.scope, item=item, index=i, accumulator=acc)
            spec = UnitSpec("body", call.frame, body=body, scope=scope)
            acc = await units.unit(p, partial(call.run_body, body, p, scope), spec)
            # items 0 … i folded, into `acc` (RunResult.partial if the run is stopped)
            fresh = {"kind": "reduce", "of": len(items), "folded": 0, "accumulator": None}
            entry = _partial_entry(call, fresh)
            entry["folded"], entry["accumulator"] = i + 1, acc
    return acc


#: a template that is one expression, ``{{ input.max_rounds }}``
_WHOLE_TEMPLATE = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")


def _written_bound(message: str, call: ControlCall) -> RunError:
    """The ``validation`` error of a computed `limit` or loop bound out of range: its message
    quotes the expression as compiled (``input.env.input.k`` inside an `if` branch), which the
    executor says in the `.flow`'s terms (``input.k``: runtime/where.py ``in_source_terms``)."""
    error = RunError(Code.VALIDATION, message, call.path, call.source)
    error.quotes_source = bool(call.source)
    return error


def _limit_field(call: ControlCall, construct: str) -> str:
    """A computed ``concurrency`` that is out of range, named for its message: in the
    `.flow`'s terms when it was compiled from one — the `limit` as written, quoted first so the
    caret points at it (runtime/where.py ``written_place``), as the `loop` bound is — else the
    plan's field."""
    raw = call.step.input.get("concurrency") if isinstance(call.step.input, dict) else None
    written = _WHOLE_TEMPLATE.fullmatch(raw.strip()) if isinstance(raw, str) else None
    if call.source and written is not None:
        return f"the limit `{written.group(1)}` of the `{construct}`"
    if call.source:
        return f"the `{construct}` limit"
    return f"`concurrency` (a `{construct}`'s `limit`)"


async def _loop(call: ControlCall) -> Any:
    """Rounds ``1 … up_to`` of ``do``, one at a time, each a unit at ``<path>/round.<r>`` with
    ``round`` (1-based) and ``accumulator`` (the state: ``initial``, then each round's value) in
    its scope.  With ``until``, the loop ends after the first round whose new state meets it;
    when none does, ``on_exhausted`` decides: ``{ fail: m }`` fails with ``loop_exhausted``,
    ``{ value: v }`` gives ``v`` (the last state and round in scope).  Without ``until`` every
    round runs and the value is the last state (``initial`` for 0 rounds).  A bound that is not
    an integer from 0 to MAX_LOOP_ROUNDS fails with ``validation``."""
    bound = call.render("up_to")
    if isinstance(bound, float) and bound.is_integer():
        bound = int(bound)
    if not isinstance(bound, int) or isinstance(bound, bool) or not 0 <= bound <= MAX_LOOP_ROUNDS:
        # in the `.flow`'s terms when it was compiled from one (the bound as written, so the
        # caret points at it: runtime/where.py renames it back), else the plan's field
        field = "`up to`" if call.source else "`up_to`"
        raw = call.step.input.get("up_to") if isinstance(call.step.input, dict) else None
        written = _WHOLE_TEMPLATE.fullmatch(raw.strip()) if isinstance(raw, str) else None
        if call.source and written is not None:
            field = f"the loop bound `{written.group(1)}`"
        raise _written_bound(
            f"{field} must be an integer from 0 to {MAX_LOOP_ROUNDS}, got "
            + json.dumps(to_json_value(bound), ensure_ascii=False),
            call,
        )
    state = call.render("initial")
    body = call.body("do")
    until = call.input.get("until")
    call.announce({"up_to": bound, "initial": state})
    units = call.ex.effects
    r = 0
    async with _keeps_partial(call):
        for r in range(1, bound + 1):
            p = f"{call.path}/round.{r}"
            scope = _layer(call.scope, round=r, accumulator=state)
            spec = UnitSpec("body", call.frame, body=body, scope=scope)
            state = await units.unit(p, partial(call.run_body, body, p, scope), spec)
            # rounds 1 … r finished, `state` the last (RunResult.partial if the run is stopped)
            fresh = {"kind": "loop", "of": bound, "rounds": 0, "state": None}
            entry = _partial_entry(call, fresh)
            entry["rounds"], entry["state"] = r, state
            if until is not None:
                after = _layer(call.scope, round=r, accumulator=state)
                if await units.evaluation(p, partial(evaluate_condition, until, after)):
                    return state
    if until is None:
        return state
    done = _layer(call.scope, round=r, accumulator=state)
    exhausted = call.input.get("on_exhausted")
    if isinstance(exhausted, dict) and "value" in exhausted:
        return render_value(exhausted["value"], done)
    fail = exhausted.get("fail") if isinstance(exhausted, dict) else None
    message = render_value(fail, done, lenient=True, on_warning=call.warn)
    text = to_text(message) if message is not None else f"no round of {bound} met `until`"
    raise RunError(Code.LOOP_EXHAUSTED, text, call.path, call.source)


async def _parallel(call: ControlCall) -> Any:
    branches = call.input.get("branches") or {}
    if not isinstance(branches, dict):
        raise RunError(Code.VALIDATION, "`branches` must map names to steps", call.path)
    conc = call.render("concurrency")
    if conc is None:
        conc = max(1, len(branches))  # no `limit`: every branch at once
    elif isinstance(conc, float) and conc.is_integer():
        conc = int(conc)
    if not isinstance(conc, int) or isinstance(conc, bool) or not 1 <= conc <= MAX_CONCURRENCY:
        if "concurrency" in call.input:  # a computed `limit`, checked as the compiler checks one
            raise _written_bound(
                f"{_limit_field(call, 'parallel')} must be an integer from 1 to "
                f"{MAX_CONCURRENCY}, got " + json.dumps(to_json_value(conc), ensure_ascii=False),
                call,
            )
    call.announce({"branches": list(branches), "concurrency": conc})
    sem = asyncio.Semaphore(int(conc))
    units = call.ex.effects
    concurrent = int(conc) > 1 and len(branches) > 1

    def finished(name: str, value: Any) -> None:
        # the branches finished so far, by name (RunResult.partial if the run is stopped)
        fresh = {"kind": "parallel", "of": len(branches), "branches": {}}
        _partial_entry(call, fresh)["branches"][name] = value

    async def one(name: str, raw: Any) -> Any:
        body = as_body(raw, name, call.path)
        p = f"{call.path}/{name}"
        spec = UnitSpec(
            "body", call.frame, concurrent, int(conc), body=body, scope=call.scope,
            finished=partial(finished, name),
        )  # fmt: skip
        async with sem:
            value = await units.unit(p, partial(call.run_body, body, p), spec)
        finished(name, value)
        return value

    names = list(branches)
    async with _keeps_partial(call):
        values = await run_all([one(n, branches[n]) for n in names])
    return dict(zip(names, values, strict=True))


async def _ask(call: ControlCall) -> Any:
    question = to_text(call.render_text(call.input.get("question")))
    schema = call.render("schema")
    choices = call.render("choices")
    unanswered = call.render("when_unanswered", "skip")
    path, stack, ex = call.path, call.stack, call.ex
    timeout = call.step.timeout
    timeout_s = _seconds(timeout) if timeout is not None else None
    place = ex.place_of(path)
    # the question in the .flow's terms, with the let its answer is bound to (`review › item 0
    # › decision = ask`): what `flowc runs` lists and `flowc answer RUN decision` finds
    label = place.step_fields().get("label") if place is not None else None
    default = (
        unanswered["default"]
        if isinstance(unanswered, dict) and "default" in unanswered
        else NO_ANSWER
    )
    request = AskRequest(question, schema, choices, path, list(stack), timeout_s, default, label)
    # an answer known before asking (a durable --reuse, or given while the run was stopped):
    # the step says so, and nobody is told to answer it (flowc's notice skips it)
    known = await ex.effects.known_answer(request)
    announced: dict[str, Any] = {"question": question, "choices": choices}
    if known is not None:
        announced["known"] = known
    call.announce(announced)
    answer = await ex.ask(request)
    if answer is not NO_ANSWER:
        # an answer holding a secret the answering process did not know (flowc answer
        # refuses one it knows): never taken, as it could only be recorded as `***`
        problem = secret_in_answer(answer) or check_answer(answer, schema, choices)
        if problem:
            raise RunError(Code.OUTPUT_VALIDATION, f"answer to `{question}`: {problem}", path)
        answer = whole_numbers(schema, answer)  # an `int` answered `3.0` is 3
        extra = {"reused": True} if known == "reused" else {}
        ex.emit(
            "ask", path, stack, question=question, answer=to_json_value(answer), answered=True,
            **extra,
        )  # fmt: skip
        return {"answer": answer, "answered": True}
    if isinstance(unanswered, dict) and "default" in unanswered:
        value = unanswered["default"]
        problem = check_answer(value, schema, choices)
        if problem:  # a templated default outside the declared contract (literal: load error)
            raise RunError(
                Code.VALIDATION, f"`when_unanswered.default` of `{question}`: {problem}", path
            )
        value = whole_numbers(schema, value)
        ex.emit("ask", path, stack, question=question, answer=to_json_value(value), answered=False)
        return {"answer": value, "answered": False}
    if isinstance(unanswered, dict) and "fail" in unanswered:
        ex.emit("ask", path, stack, question=question, answered=False)
        message = to_text(unanswered["fail"])
        if message == UNANSWERED_FAIL:  # no `else fail` of its own: what to do about it
            meta = call.step.meta if isinstance(call.step.meta, dict) else {}
            written = meta.get("expect")
            # an MCP client's interlocutor (serve_asks._Elicitor) says how its client stood
            client = getattr(ex.ctx.hooks.interlocutor, "unanswered_by", None)
            message = unanswered_message(
                request,
                durable=ex.effects.durable,
                expect=written if isinstance(written, str) else None,
                client=client() if callable(client) else None,
            )
        raise RunError(Code.FAILED, message, path)
    ex.emit("ask", path, stack, question=question, answer=None, answered=False)
    return {"answer": None, "answered": False}


async def _sleep(call: ControlCall) -> Any:
    """``sleep``: wait ``for`` (a duration from 1ms to 8760h; another value fails with
    ``validation``).  The wake-up time is the run's effect (:meth:`Effects.timer`: recorded
    by a durable engine, whose timer the wait then is), announced in ``step_started`` as
    ``until`` (epoch seconds); a plain run's host may stand in for the wait (the ``sleeper``
    hook: ``flowc test``'s virtual time).  The deadline, ``flowc cancel`` and Ctrl-C end it
    as any step.  Its value is null (docs/reference/statements.md "sleep")."""
    wait = call.render("for")
    try:
        ms: int | None = duration_ms(wait)
    except ValueError:
        ms = None
    if ms is None or not 0 < ms <= MAX_SLEEP_MS:
        field = "`sleep`" if call.source else "`for`"
        raise RunError(
            Code.VALIDATION,
            f"{field} needs a duration from 1ms to 8760h (365 days), got "
            + json.dumps(to_json_value(wait), ensure_ascii=False),
            call.path,
            call.source,
        )
    ex, seconds = call.ex, ms / 1000.0
    wakes_at = await ex.effects.timer(seconds, call.path)
    call.announce({"for": str(wait).strip(), "until": wakes_at})
    sleeper = ex.ctx.hooks.sleeper
    if sleeper is not None and not ex.effects.durable:
        deadline = call.frame.deadline_at
        limit = nearest_bound()  # the timed steps around it (dispatch.bounded)
        if limit is not None and (deadline is None or limit.at < deadline):
            left = limit.at - ex.effects.now()
            if seconds > left:
                # a timed step around it would end first: its clock moves to the bound, the
                # step ends `timeout` there (this task is cancelled, as a real sleep would be)
                advance_virtual(max(0.0, left))
                limit.expired.set()
                await asyncio.get_running_loop().create_future()
        if deadline is not None and seconds > deadline - ex.effects.now():
            # virtual time still keeps the deadline (now() counts the virtual time slept
            # before): the wait would have outlasted it
            raise RunError(
                Code.DEADLINE_EXCEEDED,
                f"the workflow deadline ({call.frame.deadline_text}) expired during `sleep`",
                call.path,
            )
        place = ex.place_of(call.path)
        label = place.step_fields().get("label") if place is not None else None
        request = SleepRequest(seconds, wakes_at, call.path, list(call.stack), label)
        await maybe_await(sleeper(request))
        advance_virtual(seconds)
    else:
        await ex.effects.sleep_until(wakes_at, call.path)
    return None


def _seconds(duration: Any) -> float | None:

    if isinstance(duration, int | float) and not isinstance(duration, bool):
        return float(duration)
    try:
        return duration_ms(str(duration)) / 1000.0
    except ValueError:
        return None


async def _verify(call: ControlCall) -> Any:
    checks = call.input.get("checks") or []
    judges = call.input.get("judges") or []
    call.announce({"checks": len(checks), "judges": len(judges)})
    scope, path = call.scope, call.path
    failures: list[str] = []
    for i, chk in enumerate(checks):
        ok = render_value(chk.get("ok"), scope) if isinstance(chk, dict) else chk
        if isinstance(ok, dict):  # a condition object
            ok = evaluate_condition(ok, scope)
        if not isinstance(ok, bool):  # like a non-bool `decide` condition: an error, not a failure
            raise RunError(
                Code.VALIDATION, f"check {i}: `ok` must be a bool, got {_kind(ok)}", path
            )
        if not ok:
            msg = render_value(chk.get("message", "check failed"), scope, lenient=True)
            failures.append(to_text(msg))
    for i, j in enumerate(judges):
        prompt = to_text(call.render_text(j.get("prompt") if isinstance(j, dict) else j))
        if not await call.ex.judge(prompt, path=f"{path}/judge.{i}", stack=call.stack):
            failures.append(prompt)
    return {"passed": not failures, "failures": failures}


# ---------------------------------------------------------------------------------------------
# Concurrency


#: The message a sibling is cancelled with when an item of a map or a branch of a `parallel`
#: fails: the cancelled steps are reported ``aborted: <this>`` rather than a bare "cancelled",
#: which read as if someone had run ``flowc cancel``.
SIBLING_FAILED = "another item or branch failed first"


def cancelled_message(e: BaseException) -> str:
    """Why a step was cancelled, for its ``aborted`` error: the message its task was cancelled
    with (:data:`SIBLING_FAILED`), else "cancelled" (a deadline, a stop, ``flowc cancel``)."""
    if isinstance(e, asyncio.CancelledError) and e.args and isinstance(e.args[0], str):
        return e.args[0]
    return "cancelled"


async def run_pool(n: int, concurrency: int, fn: Callable[[int], Awaitable[Any]]) -> None:
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

    await run_all([worker() for _ in range(min(concurrency, n))])


async def run_all(coros: list[Awaitable[Any]]) -> list[Any]:
    """Run coroutines concurrently; the first failure cancels the others (with
    :data:`SIBLING_FAILED`, or the run's cancel or stop message when that is what ended the
    first) and is raised."""
    ends: list[float] = []  # each task's virtual time when it ended (flowc test's sleeps)

    start = virtual_elapsed()

    async def timed(co: Awaitable[Any]) -> Any:
        fork_virtual(start)
        try:
            return await co
        finally:
            ends.append(virtual_elapsed())

    tasks = [asyncio.ensure_future(timed(co)) for co in coros]
    if not tasks:
        return []
    try:
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            for t in tasks:
                if t in done and not t.cancelled():
                    error = t.exception()
                    if error is not None:
                        # a run cancelled or stopped is no sibling's failure: the others stop
                        # for the same reason, and say it
                        why = error.message if isinstance(error, Cancelled | Stopped) else None
                        for p in pending:
                            p.cancel(why or SIBLING_FAILED)
                        if pending:
                            await asyncio.wait(pending)
                        raise error
        join_virtual(ends)  # concurrent sleeps overlap: the longest is the time taken
        return [t.result() for t in tasks]
    except BaseException:
        for t in tasks:
            if not t.done():
                t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


#: Control-step name → handler (``agent`` is added by the executor from ``agent_step``).
HANDLERS: dict[str, ControlHandler] = {
    "value": _value,
    "exit": _exit,
    "decide": _decide,
    "filter": _filter,
    "map": _map,
    "reduce": _reduce,
    "loop": _loop,
    "parallel": _parallel,
    "ask": _ask,
    "verify": _verify,
    "try": _try,
    "sleep": _sleep,
}
