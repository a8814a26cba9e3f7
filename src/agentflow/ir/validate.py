"""Structural validation of plans and tool-name resolution (docs/spec/PLAN_IR.md §1–6,
docs/spec/RUNTIME.md §4).

- :func:`validate_plan` needs no configuration: names, ids, durations, retry codes, control-step
  inputs, body restrictions, agent inputs, templates (parsed here, stored on the steps) and their
  references, sub-plan cycles.  ``flowc compile`` and the loader run it.
- tool names are resolved against a catalog by :mod:`agentflow.ir.resolve`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from agentflow.core.diagnostics import (
    PLAN_CYCLE,
    PLAN_DUPLICATE_ID,
    PLAN_FUNCTION_CALL,
    PLAN_INVALID_BODY,
    PLAN_MISSING_FIELD,
    PLAN_UNKNOWN_ERROR_CODE,
    PLAN_UNKNOWN_FIELD,
    PLAN_UNKNOWN_NAME,
    Diagnostic,
    Note,
    did_you_mean,
)
from agentflow.core.functions import FUNCTIONS
from agentflow.core.vocabulary import (
    BODY_CONTROL_STEPS,
    BODY_SCOPE,
    MAX_BACKOFF_FACTOR,
    MAX_BACKOFF_MS,
    MAX_RETRY_ATTEMPTS,
    RETRYABLE_CODES,
)
from agentflow.core.vocabulary import (
    CONTROL_STEPS as CONTROL_STEPS,  # re-exported: runtime/tools/build.py
)
from agentflow.grammar import ast
from agentflow.ir.functions import (
    Function,
    bind_calls,
    body_problems,
    call_problem,
    calls_in,
    function_cycles,
)
from agentflow.ir.models import Plan, Step
from agentflow.ir.templates import (
    Path,
    compile_expression,
    compile_value,
    iter_compiled_paths,
    iter_names,
    path_str,
)
from agentflow.ir.validate_steps import STEP_ID_RE, _broken, _StepRules

PLAN_NAME_RE = re.compile(r"[a-z_][a-z0-9_]*")

#: Servers whose tools resolve exactly (not at the server level).
EXACT_SERVERS = frozenset({"builtin", "user", "plan"})


class _Ordered:
    """The ids of the steps before (``before=True``) or at/after index ``i`` of a plan, plus
    ``extra`` names, as a set-like view (``in``, ``|``, iteration) built in O(1)."""

    __slots__ = ("first", "i", "before", "extra")

    def __init__(
        self, first: dict[str, int], i: int, *, before: bool, extra: frozenset[str] = frozenset()
    ):
        self.first, self.i, self.before, self.extra = first, i, before, extra

    def __contains__(self, name: object) -> bool:
        if name in self.extra:
            return True
        idx = self.first.get(name) if isinstance(name, str) else None
        if idx is None:
            return False
        return idx < self.i if self.before else idx >= self.i

    def __or__(self, other: Any) -> _Ordered:
        return _Ordered(self.first, self.i, before=self.before, extra=self.extra | frozenset(other))

    def __iter__(self) -> Iterator[str]:
        yield from self.extra
        for name, idx in self.first.items():
            if (idx < self.i) == self.before:
                yield name


def call_cycles(edges: dict[str, list[tuple[str, Any]]]) -> list[tuple[list[str], Any]]:
    """The cycles of a plan call graph (docs/spec/PLAN_IR.md §2 ``plan_cycle``), each reported once.

    ``edges``: ``{plan: [(callee, call), …]}`` (``call``: anything that places the call, e.g. its
    value path). Depth-first from each plan in ``edges`` order; returns ``[(cycle, call), …]``
    with ``cycle`` = ``[a, b, …, a]`` and ``call`` the edge that closes it.
    """
    found: list[tuple[list[str], Any]] = []
    seen: set[frozenset[str]] = set()
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for callee, call in edges[node]:
            if state.get(callee) == 1:
                cycle = stack[stack.index(callee) :] + [callee]
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    found.append((cycle, call))
            elif callee not in state:
                dfs(callee)
        stack.pop()
        state[node] = 2

    for name in edges:
        if name not in state:
            dfs(name)
    return found


def walk_steps(plan: Plan, path: Path = ()) -> Iterator[tuple[Path, str, Step]]:
    """Every step of one plan (bodies included, sub-plans not): ``(data_path, label, step)``.

    ``data_path`` is the value path in the plan data (``("steps", 2, "input", "do")``);
    ``label`` is the step path of docs/spec/PLAN_IR.md §7 (``E2/do``).
    """

    def visit(step: Step, p: Path, label: str) -> Iterator[tuple[Path, str, Step]]:
        yield p, label, step
        if isinstance(step.input, dict):
            for key, body in step.bodies():
                if step.tool_name == "parallel":
                    bp = (*p, "input", "branches", key)
                else:
                    bp = (*p, "input", key)
                yield from visit(body, body._path or bp, f"{label}/{key}")

    for i, step in enumerate(plan.steps):
        yield from visit(step, step._path or (*path, "steps", i), step.id or f"steps[{i}]")


class _Validator(_StepRules):
    """The plan validator: plans (their names, functions, steps in order, sub-plans, ``plan__``
    cycles, finish), steps (ids, fields, templates and their references, bodies); the value
    checks and the control steps' rules are :class:`_StepRules`'."""

    # -- plans -----------------------------------------------------------------------------

    def plan(self, plan: Plan, path: Path, *, top: bool) -> None:
        broken = _broken(plan)
        if "version" not in broken and plan.version != 1:
            self.problem(
                (*path, "version"),
                f"unsupported plan version {plan.version!r} (this runtime reads version 1)",
            )
        if "name" not in broken and (
            not isinstance(plan.name, str) or not PLAN_NAME_RE.fullmatch(plan.name)
        ):
            suggestion = re.sub(r"[^a-z0-9_]", "_", str(plan.name).lower()) or "plan"
            if suggestion[0].isdigit():
                suggestion = "_" + suggestion
            self.problem(
                (*path, "name"),
                f"plan name {plan.name!r} must match [a-z_][a-z0-9_]*",
                hint=f"try `{suggestion}`",
            )
        if plan.input_schema is not None:
            key = "input_schema"
            if self.smap is not None and (*path, "inputSchema") in self.smap.nodes:
                key = "inputSchema"
            self.json_schema(plan.input_schema, (*path, key), "input_schema")
        if "deadline" not in broken:
            self.duration(plan.deadline, (*path, "deadline"), "`deadline`")
        if not plan.steps and "steps" not in broken and "*" not in broken:
            self.problem((*path, "steps"), "`steps` must not be empty")
        if not top and plan.plans:
            self.problem(
                (*path, "plans"),
                "a sub-plan cannot have its own `plans`",
                key=True,
                code=PLAN_UNKNOWN_FIELD,
            )
        if not top and plan.functions:
            self.problem(
                (*path, "functions"),
                "a sub-plan cannot have its own `functions`: it calls its plan's",
                key=True,
                code=PLAN_UNKNOWN_FIELD,
            )
        if top:
            #: functions whose entry is invalid (reported there): their calls are not
            self.fn_refused = {b.split(":", 1)[1] for b in broken if b.startswith("function:")}
            self.fn_table = self.functions(plan, path)
            plan.function_table = self.fn_table

        self.ids: dict[str, Path] = {}
        top_ids = [s.id for s in plan.steps]
        first: dict[str, int] = {}
        for i, sid in enumerate(top_ids):
            if isinstance(sid, str):
                first.setdefault(sid, i)
        for i, step in enumerate(plan.steps):
            # O(1) views instead of per-step sets: a 10,000-step plan must not load in O(n²)
            scope = _Ordered(first, i, before=True, extra=frozenset({"input"}))
            later = _Ordered(first, i, before=False)
            spath = step._path or (*path, "steps", i)
            self.step(step, spath, scope, later, body=False)

        if plan.finish is not None:
            self.finish(plan, path, frozenset({"input"} | {s for s in top_ids if s}))

        if top:
            for name, sub in plan.plans.items():
                spath = (*path, "plans", name)
                if not isinstance(name, str) or not PLAN_NAME_RE.fullmatch(name):
                    self.problem(
                        spath, f"sub-plan name {name!r} must match [a-z_][a-z0-9_]*", key=True
                    )
                elif isinstance(sub.name, str) and sub.name != name and "name" not in _broken(sub):
                    self.problem(
                        (*spath, "name"),
                        f"sub-plan `{name}` has name `{sub.name}`; they must be the same",
                    )
                self.plan(sub, spath, top=False)
            self.cycles(plan, path)

    def finish(self, plan: Plan, path: Path, scope: frozenset[str]) -> None:
        fin = plan.finish
        assert fin is not None
        fpath = (*path, "finish")
        if fin.mode == "solver" and not fin.prompt:
            self.problem(
                fpath, "`finish` with mode `solver` needs a `prompt`", code=PLAN_MISSING_FIELD
            )
        if fin.output is not None:
            fin.compiled_output = self.compile(fin.output, (*fpath, "output"), conditions=False)
            self.refs(fin.compiled_output, scope, frozenset(), (*fpath, "output"))
        if fin.prompt is not None:
            fin.compiled_prompt = self.compile(fin.prompt, (*fpath, "prompt"), conditions=False)
            self.refs(fin.compiled_prompt, scope, frozenset(), (*fpath, "prompt"))

    def cycles(self, plan: Plan, path: Path) -> None:
        """``plan_cycle``: a plan of this file calling itself through ``plan__*``."""
        plans: dict[str, tuple[Plan, Path]] = {plan.name: (plan, path)}
        for name, sub in plan.plans.items():
            plans[name] = (sub, (*path, "plans", name))
        edges: dict[str, list[tuple[str, Path]]] = {n: [] for n in plans}
        for name, (p, ppath) in plans.items():
            for spath, _, step in walk_steps(p, ppath):
                if isinstance(step.tool_name, str) and step.tool_name.startswith("plan__"):
                    callee = step.tool_name[len("plan__") :]
                    if callee in plans:
                        edges[name].append((callee, spath))
        for cycle, spath in call_cycles(edges):
            self.problem(
                (*spath, "tool_name"),
                "plan calls itself through plan__*: " + " → ".join(cycle),
                code=PLAN_CYCLE,
            )

    # -- steps -----------------------------------------------------------------------------

    def compile(self, value: Any, path: Path, *, conditions: bool) -> Any:
        compiled = compile_value(
            value,
            file=self.file,
            path=path,
            source_map=self.smap,
            problems=self.problems,
            conditions=conditions,
        )
        if not _calls_something(value):
            return compiled  # no `(`: no call to look for (most templates)
        calls = calls_in(compiled)
        if not calls:
            return compiled
        known = {n: len(f.params) for n, f in self.fn_table.items()}
        for call in calls:
            if call.name in self.fn_refused and call.name not in known:
                continue
            problem = call_problem(call, known)
            if problem is not None:
                self.problem(
                    path, problem[0], hint=problem[1], span=call.span, code=PLAN_FUNCTION_CALL
                )
        return bind_calls(compiled, self.fn_table)

    def functions(self, plan: Plan, path: Path) -> dict[str, Function]:
        """The plan's ``functions`` parsed, checked and bound to one another
        (docs/spec/PLAN_IR.md "functions"): names, parameters, bodies (pure, reading only
        their parameters, calling known functions), no function reaching itself."""
        known = {n: len(f.params) for n, f in plan.functions.items()}
        table: dict[str, Function] = {}
        calls: dict[str, list[str]] = {}
        for name, fn in plan.functions.items():
            fpath = (*path, "functions", name)
            if not STEP_ID_RE.fullmatch(name) or name in FUNCTIONS:
                self.problem(
                    fpath,
                    f"function name `{name}` must be an identifier that is no library function",
                    key=True,
                )
                continue
            params = list(fn.params)
            for i, p in enumerate(params):
                if not isinstance(p, str) or not STEP_ID_RE.fullmatch(p) or p in params[:i]:
                    self.problem((*fpath, "params", i), f"parameter {p!r} must be a new identifier")
            epath = (*fpath, "expr")
            body = compile_expression(
                fn.expr, file=self.file, path=epath, source_map=self.smap, problems=self.problems
            )
            if body is None:
                self.fn_refused.add(name)
                continue
            for message, node, hint in body_problems(name, params, body, known):
                if isinstance(node, ast.UserCall) and node.name in self.fn_refused:
                    continue
                code = PLAN_FUNCTION_CALL if isinstance(node, ast.UserCall) else PLAN_UNKNOWN_NAME
                self.problem(epath, message, hint=hint, span=node.span, code=code)
            calls[name] = [c.name for c in calls_in(body) if c.name in known]
            source = fn.meta.get("source") if isinstance(fn.meta, dict) else None
            table[name] = Function(
                name, tuple(params), body, source if isinstance(source, str) else None
            )
        for cycle in function_cycles(calls):  # a plan with one never loads: every call ends
            self.problem(
                (*path, "functions", cycle[0]),
                "function calls itself: " + " → ".join(cycle),
                key=True,
                code=PLAN_CYCLE,
            )
        for ready in table.values():
            ready.body = bind_calls(ready.body, table)
        return table

    def step(
        self,
        step: Step,
        path: Path,
        scope: Any,
        later: Any,
        *,
        body: bool,
    ) -> None:
        broken = _broken(step)
        tool = step.tool_name if isinstance(step.tool_name, str) else ""
        # ids
        if step.id is not None:
            if not isinstance(step.id, str) or not STEP_ID_RE.fullmatch(step.id):
                self.problem(
                    (*path, "id"), f"step id {step.id!r} must match [A-Za-z_][A-Za-z0-9_]*"
                )
            elif step.id in self.ids:
                first = self.ids[step.id]
                if self.smap is not None:
                    note = Note("first used here", self.smap.location(first))
                else:
                    note = Note(f"first used at {path_str(first)}")
                self.problem(
                    (*path, "id"),
                    f"duplicate step id `{step.id}`",
                    code=PLAN_DUPLICATE_ID,
                    notes=[note],
                )
            else:
                self.ids[step.id] = (*path, "id")
        elif not body and "*" not in broken:
            self.problem(path, "a top-level step needs an `id`", code=PLAN_MISSING_FIELD)
        if not tool:
            if "*" not in broken:
                self.problem((*path, "tool_name"), "`tool_name` must not be empty")
        # timeout / retry
        if "timeout" not in broken:
            self.duration(step.timeout, (*path, "timeout"), "`timeout`")
        if step.retry is not None:
            rpath = (*path, "retry")
            for i, code in enumerate(step.retry.on):
                if code not in RETRYABLE_CODES:
                    self.problem(
                        (*rpath, "on", i),
                        f"`{code}` is not a retryable error code "
                        f"(retry on: {', '.join(sorted(RETRYABLE_CODES))})",
                        hint=did_you_mean(code, sorted(RETRYABLE_CODES)),
                        code=PLAN_UNKNOWN_ERROR_CODE,
                    )
            if step.retry.attempts > MAX_RETRY_ATTEMPTS:
                self.problem(
                    (*rpath, "attempts"),
                    f"`attempts` is {step.retry.attempts}; at most {MAX_RETRY_ATTEMPTS} extra tries",
                )
            if step.retry.backoff is not None:
                bpath = (*rpath, "backoff")
                backoff = step.retry.backoff
                for key in ("initial", "max"):
                    value = getattr(backoff, key)
                    ms = self.duration(value, (*bpath, key), f"`backoff.{key}`")
                    if ms is not None and ms > MAX_BACKOFF_MS:
                        self.problem(
                            (*bpath, key),
                            f"`backoff.{key}` is {value}; a retry waits at most 1h",
                        )
                if backoff.factor > MAX_BACKOFF_FACTOR:
                    self.problem(
                        (*bpath, "factor"),
                        f"`backoff.factor` is {backoff.factor:g}; at most {MAX_BACKOFF_FACTOR:g}",
                    )
        # body restrictions
        if body and tool in CONTROL_STEPS and tool not in BODY_CONTROL_STEPS:
            self.problem(
                (*path, "tool_name"),
                f"`{tool}` cannot be a body: a body is a single step (a tool call, plan__*, "
                f"{_or_list(sorted(BODY_CONTROL_STEPS))})",
                hint="move it into a sub-plan under `plans:` and call it as plan__<name>",
                code=PLAN_INVALID_BODY,
            )
        if tool in CONTROL_STEPS:
            self.control(step, path)
        # bodies first (their own scope), then this step's templates
        extra = BODY_SCOPE.get(tool, frozenset())
        for label, b in step.bodies():
            bpath = b._path or (
                (*path, "input", "branches", label)
                if tool == "parallel"
                else (*path, "input", label)
            )
            self.step(b, bpath, scope | extra, later, body=True)
        ipath = (*path, "input")
        step.compiled = self.compile(step.input, ipath, conditions=tool in CONTROL_STEPS)
        if tool in _GATE_SCOPE and isinstance(step.compiled, dict):
            gate_keys, gate_names = _GATE_SCOPE[tool]
            for key, value in step.compiled.items():
                sc = (scope | gate_names) if key in gate_keys else scope
                self.refs(value, sc, later, (*ipath, key), step.id)
        else:
            self.refs(step.compiled, scope, later, ipath, step.id)
        if step.result_schema is not None:
            rpath = (*path, "result_schema")
            if tool in CONTROL_STEPS:
                self.problem(rpath, f"`result_schema` applies to tool calls, not `{tool}` steps")
            else:
                self.json_schema(step.result_schema, rpath, "result_schema")
        if step.select is not None:
            spath = (*path, "select")
            compiled = self.compile(step.select, spath, conditions=False)
            if isinstance(compiled, ast.Template):
                step.compiled_select = compiled
                self.refs(compiled, scope | {"result"}, later, spath, step.id)
            elif isinstance(compiled, str) and "{{" not in compiled:
                self.problem(
                    spath, "`select` must hold a `{{ … }}` template (e.g. `{{ result.output }}`)"
                )

    def refs(
        self,
        compiled: Any,
        scope: Any,
        later: Any,
        path: Path,
        own: str | None = None,
    ) -> None:
        for sub, tpl in iter_compiled_paths(compiled, path):
            for name in iter_names(tpl):
                if name.name in scope:
                    continue
                if own is not None and name.name == own:
                    msg = f"`{own}` refers to the step's own result, which does not exist yet"
                    self.problem(sub, msg, span=name.span, code=PLAN_UNKNOWN_NAME)
                elif name.name in later:
                    msg = f"`{name.name}` refers to a later step (only earlier steps are in scope)"
                    self.problem(sub, msg, span=name.span, code=PLAN_UNKNOWN_NAME)
                else:
                    self.problem(
                        sub,
                        f"unknown name `{name.name}` in template",
                        hint=did_you_mean(name.name, scope)
                        or f"in scope: {', '.join(sorted(scope))}",
                        span=name.span,
                        code=PLAN_UNKNOWN_NAME,
                    )


#: Control steps whose fields besides bodies see more names than the step's scope: the fields and
#: the names (a ``filter`` gate sees the item; a ``loop``'s ``until`` and ``on_exhausted`` the
#: round and the state).
_GATE_SCOPE: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "filter": (frozenset({"when", "infer"}), frozenset({"item", "index"})),
    "loop": (frozenset({"until", "on_exhausted"}), frozenset({"round", "accumulator"})),
}


def validate_plan(plan: Plan, file: str | None = None) -> list[Diagnostic]:
    """Structural validation of a plan (docs/spec/PLAN_IR.md §1–6); needs no configuration.

    Parses every template (setting ``step.compiled``, ``step.compiled_select`` and the finish's
    compiled output) and checks names, ids (unique across the plan, bodies included), durations,
    retry codes, control-step inputs, body restrictions, agent inputs, template references
    (forward or unknown), sub-plans and ``plan__`` cycles.  Returns every problem found (empty when
    the plan is valid); positions come from the loader's source map when there is one.
    """
    file = file or plan.source_file or "<plan>"
    v = _Validator(file, getattr(plan, "_source_map", None))
    v.plan(plan, getattr(plan, "_path", ()) or (), top=True)
    return v.problems


def _calls_something(value: Any) -> bool:
    """True when a raw plan value has a string with ``(`` (a call may be in it)."""
    if isinstance(value, str):
        return "(" in value
    if isinstance(value, dict):
        return any(_calls_something(v) for v in value.values())
    if isinstance(value, list):
        return any(_calls_something(v) for v in value)
    return False


def _or_list(words: list[str]) -> str:
    """``a, b or c``."""
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else "".join(words)
