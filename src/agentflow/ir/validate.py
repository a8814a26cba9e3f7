"""Structural validation of plans and tool-name resolution (docs/spec/PLAN_IR.md §1–6,
docs/spec/RUNTIME.md §4).

- :func:`validate_plan` needs no configuration: names, ids, durations, retry codes, control-step
  inputs, body restrictions, agent inputs, templates (parsed here, stored on the steps) and their
  references, sub-plan cycles.  ``flowc compile`` and the loader run it.
- tool names are resolved against a catalog by :mod:`agentflow.ir.resolve`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Iterator
from typing import Any

import regex

from agentflow.core.diagnostics import (
    PLAN_CYCLE,
    PLAN_DUPLICATE_ID,
    PLAN_FUNCTION_CALL,
    PLAN_INVALID_BODY,
    PLAN_INVALID_SCHEMA,
    PLAN_INVALID_VALUE,
    PLAN_MISSING_FIELD,
    PLAN_UNKNOWN_ERROR_CODE,
    PLAN_UNKNOWN_FIELD,
    PLAN_UNKNOWN_NAME,
    Diagnostic,
    Note,
    did_you_mean,
    suggested,
)
from agentflow.core.functions import FUNCTIONS
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    BODY_CONTROL_STEPS,
    BODY_SCOPE,
    CONDITION_OPS,
    CONTROL_FIELDS,
    ERROR_CODES,
    HARD_STOP_CODES,
    MAX_BACKOFF_FACTOR,
    MAX_BACKOFF_MS,
    MAX_CONCURRENCY,
    MAX_ITERATIONS,
    MAX_LOOP_ROUNDS,
    MAX_RETRY_ATTEMPTS,
    MAX_SLEEP_MS,
    RETRYABLE_CODES,
    UNARY_CONDITION_OPS,
    duration_ms,
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
from agentflow.ir.outcomes import tolerance
from agentflow.ir.schemas import plainly_valid_schema, ref_problems, validation_errors
from agentflow.ir.templates import (
    Path,
    SourceMap,
    compile_expression,
    compile_value,
    iter_compiled_paths,
    iter_names,
    path_str,
)

STEP_ID_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PLAN_NAME_RE = re.compile(r"[a-z_][a-z0-9_]*")

#: The hint for ``infer`` in an ``exit`` step (an unknown field there).
_EXIT_INFER = "`exit` takes `when`, not `infer`: a judge cannot end a run"

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


def _broken(model: object) -> set[str]:
    broken: set[str] = getattr(model, "_broken", None) or set()
    return broken


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


class _Validator:
    def __init__(self, file: str, smap: SourceMap | None):
        self.file = file
        self.smap = smap
        self.problems: list[Diagnostic] = []
        #: the plan's functions by name (docs/spec/PLAN_IR.md "functions"), its sub-plans' too
        self.fn_table: dict[str, Function] = {}
        #: names of the plan's functions whose entry or body is invalid (reported there once:
        #: their calls are not reported again as unknown)
        self.fn_refused: set[str] = set()

    # -- reporting -------------------------------------------------------------------------

    def problem(
        self,
        path: Path,
        message: str,
        *,
        hint: str | None = None,
        key: bool = False,
        span: Span | None = None,
        code: str = PLAN_INVALID_VALUE,
        notes: list[Note] | None = None,
    ) -> None:
        """A problem at the value at ``path`` (its key when ``key``; ``span``: a template's
        position in the file), its message prefixed with the value path."""
        if span is not None and self.smap is not None:
            loc = dataclasses.replace(span, file=self.file)
        elif self.smap is not None:
            loc = self.smap.location(path, key=key)
        else:
            loc = Span.at(self.file)
        prefix = path_str(path)
        self.problems.append(
            Diagnostic(
                code,
                f"{prefix}: {message}" if prefix else message,
                loc,
                notes=notes or [],
                hint=hint,
            )
        )

    def duration(self, value: Any, path: Path, what: str) -> int | None:
        """Check a positive duration; its milliseconds, or None (absent or reported)."""
        if value is None:
            return None
        try:
            ms = duration_ms(value)
        except ValueError as exc:
            self.problem(path, str(exc))
            return None
        if ms <= 0:
            self.problem(path, f"{what} must be a positive duration, not {value!r}")
            return None
        return ms

    def json_schema(self, schema: Any, path: Path, what: str) -> bool:
        if not isinstance(schema, dict):
            self.problem(
                path, f"`{what}` must be a JSON Schema object (a mapping)", code=PLAN_INVALID_SCHEMA
            )
            return False
        error = _schema_error(schema)
        if error is not None:
            message, at = error
            where = "/".join(str(p) for p in at)
            self.problem(
                (*path, *at),
                f"`{what}` is not valid JSON Schema: {message}"
                + (f" (at {where})" if where else ""),
                code=PLAN_INVALID_SCHEMA,
            )
            return False
        # only references to itself: nothing is fetched, every one resolves, no endless loop
        problems = ref_problems(schema)
        for sub, message in problems:
            self.problem((*path, *sub), f"`{what}`: {message}", code=PLAN_INVALID_SCHEMA)
        return not problems

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

    # -- control steps ---------------------------------------------------------------------

    def control(self, step: Step, path: Path) -> None:
        tool = step.tool_name
        ipath = (*path, "input")
        inp = step.input
        if not isinstance(inp, dict):
            self.problem(ipath, f"the input of `{tool}` must be a mapping")
            return
        allowed, required = CONTROL_FIELDS[tool]
        misspelt = self.unknown_fields(inp, ipath, allowed, f"`{tool}` input", tool)
        for key in sorted(required):
            if key not in inp and key not in misspelt:
                self.problem(ipath, f"`{tool}` needs `{key}`", code=PLAN_MISSING_FIELD)
        _STEP_RULES[tool](self, inp, ipath, _broken(step))

    def gate(self, inp: dict[str, Any], ipath: Path, tool: str, *, required: bool) -> None:
        has_when, has_infer = "when" in inp, "infer" in inp
        if has_when and has_infer:
            self.problem(ipath, f"`{tool}` takes `when` or `infer`, not both")
        elif required and not has_when and not has_infer:
            self.problem(ipath, f"`{tool}` needs `when` or `infer`", code=PLAN_MISSING_FIELD)
        if has_when:
            self.condition(inp["when"], (*ipath, "when"))
        if has_infer and not isinstance(inp["infer"], str):
            self.problem((*ipath, "infer"), "`infer` must be a text (the judge's question)")

    def condition(self, cond: Any, path: Path) -> None:
        forms = "{value, op, to}, {expr}, {all: [...]}, {any: [...]} or {not: {...}}"
        if not isinstance(cond, dict):
            self.problem(path, f"a condition must be a mapping: {forms}")
            return
        keys = set(cond)
        if "expr" in keys:
            allowed = {"expr"}
            if not isinstance(cond["expr"], str) or not cond["expr"].strip():
                self.problem((*path, "expr"), "`expr` must be a non-empty expression text")
        elif keys & {"all", "any"}:
            allowed = {"all"} if "all" in keys else {"any"}
            k = next(iter(allowed))
            items = cond[k]
            if not isinstance(items, list) or not items:
                self.problem((*path, k), f"`{k}` must be a non-empty list of conditions")
            else:
                for i, item in enumerate(items):
                    self.condition(item, (*path, k, i))
        elif "not" in keys:
            allowed = {"not"}
            self.condition(cond["not"], (*path, "not"))
        elif keys & {"value", "op", "to"}:
            allowed = {"value", "op", "to"}
            op = cond.get("op")
            if "value" not in keys:
                self.problem(path, "a comparison needs `value`", code=PLAN_MISSING_FIELD)
            if op is None:
                self.problem(path, "a comparison needs `op`", code=PLAN_MISSING_FIELD)
            elif not isinstance(op, str) or op not in CONDITION_OPS:
                self.problem(
                    (*path, "op"),
                    f"unknown operator {op!r}",
                    hint=did_you_mean(str(op), sorted(CONDITION_OPS))
                    or f"operators: {', '.join(sorted(CONDITION_OPS))}",
                )
            elif op not in UNARY_CONDITION_OPS and "to" not in keys:
                self.problem(path, f"operator `{op}` needs `to`", code=PLAN_MISSING_FIELD)
            elif op == "matches":
                self.pattern(cond["to"], (*path, "to"))
        else:
            self.problem(path, f"a condition must be one of {forms}")
            return
        for key in keys - allowed:
            self.problem(
                (*path, key),
                f"unknown field `{key}` in condition",
                hint=did_you_mean(str(key), allowed),
                key=True,
                code=PLAN_UNKNOWN_FIELD,
            )

    def pattern(self, to: Any, path: Path) -> None:
        """A literal ``matches`` pattern must compile (the runtime's ``regex`` engine, ``re``
        syntax); a templated one is checked when it is rendered (a ``validation`` step error)."""
        if not isinstance(to, str) or "{{" in to:
            return
        try:
            regex.compile(to)
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            self.problem(path, f"invalid regular expression {to!r}: {exc}")

    def body_field(self, inp: dict[str, Any], ipath: Path, key: str, broken: set[str]) -> None:
        if key in inp and not isinstance(inp[key], Step) and f"body:{key}" not in broken:
            self.problem((*ipath, key), f"`{key}` must be a single step", code=PLAN_INVALID_BODY)

    def budget(self, value: Any, path: Path) -> None:
        """``budget: {inferences?, tokens?, cost?}`` of an agent step (docs/models.md)."""
        if not isinstance(value, dict):
            self.problem(path, "`budget` must be a mapping of inferences, tokens and cost")
            return
        for key, limit in value.items():
            if key not in ("inferences", "tokens", "cost"):
                self.problem(
                    (*path, key),
                    f"unknown budget `{key}` (a budget has inferences, tokens and cost)",
                    key=True,
                    code=PLAN_UNKNOWN_FIELD,
                )
            elif key == "cost":
                if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit < 0:
                    self.problem((*path, key), "`cost` must be a number of dollars ≥ 0")
            else:
                self.positive_int(value, path, key, 0)

    def positive_int(
        self, inp: dict[str, Any], ipath: Path, key: str, minimum: int, maximum: int | None = None
    ) -> None:
        """``inp[key]``, when given, is an integer from ``minimum`` to ``maximum`` — or a
        template, which the run evaluates and checks the same way."""
        if key not in inp:
            return
        v = inp[key]
        if isinstance(v, str) and "{{" in v:
            return
        if isinstance(v, bool) or not isinstance(v, int):
            self.problem((*ipath, key), f"`{key}` must be an integer ≥ {minimum}")
        elif v < minimum:
            self.problem((*ipath, key), f"`{key}` must be ≥ {minimum}, not {v}")
        elif maximum is not None and v > maximum:
            self.problem((*ipath, key), f"`{key}` must be at most {maximum}, not {v}")

    def visit_exit(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        if "when" in inp:
            self.condition(inp["when"], (*ipath, "when"))
        status = inp.get("status")
        if "status" in inp and status not in ("ok", "error"):
            self.problem(
                (*ipath, "status"),
                f"`status` must be `ok` or `error`, not {status!r}",
                hint=did_you_mean(str(status), {"ok", "error"}),
            )
        if status == "error" and "message" not in inp:
            self.problem(
                ipath, "`exit` with status `error` needs a `message`", code=PLAN_MISSING_FIELD
            )
        if "message" in inp and not isinstance(inp["message"], str):
            self.problem((*ipath, "message"), "`message` must be a text")
        code = inp.get("code")
        if "code" in inp and (not isinstance(code, str) or not STEP_ID_RE.fullmatch(code)):
            self.problem((*ipath, "code"), f"`code` must be an error-code name, not {code!r}")

    def visit_decide(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        self.gate(inp, ipath, "decide", required=True)
        self.body_field(inp, ipath, "then", broken)
        self.body_field(inp, ipath, "else", broken)

    def visit_try(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        self.body_field(inp, ipath, "do", broken)
        self.body_field(inp, ipath, "catch", broken)
        if "on" not in inp:
            return
        codes = inp["on"]
        if not isinstance(codes, list) or not codes:
            self.problem((*ipath, "on"), "`on` must be a non-empty list of error codes")
            return
        for i, code in enumerate(codes):
            if not isinstance(code, str):
                self.problem((*ipath, "on", i), f"`on` lists {code!r}, which is not an error code")
            elif code in HARD_STOP_CODES:
                self.problem((*ipath, "on", i), f"`{code}` stops the run and cannot be caught")
            elif code not in ERROR_CODES:
                self.problem(
                    (*ipath, "on", i),
                    f"`on` lists {code!r}, which is not an error code",
                    hint=did_you_mean(str(code), ERROR_CODES),
                )

    def visit_filter(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        self.gate(inp, ipath, "filter", required=True)
        self.over(inp, ipath)

    def over(self, inp: dict[str, Any], ipath: Path) -> None:
        if "over" in inp and not isinstance(inp["over"], list | str):
            self.problem((*ipath, "over"), "`over` must be a list or a `{{ … }}` template")

    def visit_map(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        self.over(inp, ipath)
        self.body_field(inp, ipath, "do", broken)
        self.positive_int(inp, ipath, "concurrency", 1, MAX_CONCURRENCY)
        if "on_item_error" in inp:
            self.on_item_error(inp["on_item_error"], (*ipath, "on_item_error"))

    def on_item_error(self, v: Any, path: Path) -> None:
        """``fail``, ``skip``, ``{ tolerate: N }`` (N ≥ 0) or ``{ tolerate: "P%" }`` (0–100), or a
        template (checked when it renders)."""
        if v in ("fail", "skip") or (isinstance(v, str) and "{{" in v):
            return
        if isinstance(v, dict):
            extra = sorted(str(k) for k in v if k != "tolerate")
            if extra:
                self.problem(
                    (*path, extra[0]),
                    f"`on_item_error` takes only `tolerate`, not `{extra[0]}`",
                    hint=did_you_mean(extra[0], {"tolerate"}),
                )
                return
            t = v.get("tolerate")
            if isinstance(t, str) and "{{" in t:
                return
            if tolerance(v, 100) is None:
                self.problem(
                    (*path, "tolerate"),
                    "`tolerate` must be a count of items (0 or more) or a percentage "
                    f'from "0%" to "100%", not {t!r}',
                )
            return
        self.problem(
            path,
            f"`on_item_error` must be `fail`, `skip` or `{{ tolerate: N }}`, not {v!r}",
            hint=did_you_mean(str(v), {"fail", "skip"}),
        )

    def visit_reduce(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        self.over(inp, ipath)
        self.body_field(inp, ipath, "do", broken)

    def visit_loop(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        """``loop``: ``up_to`` an integer 0 … MAX_LOOP_ROUNDS (or a template, checked when the
        loop starts), ``do`` one step, ``until`` a condition, ``on_exhausted`` — ``{ fail:
        message }`` or ``{ value: v }`` — required with ``until`` and meaningless without it."""
        self.positive_int(inp, ipath, "up_to", 0, MAX_LOOP_ROUNDS)
        self.body_field(inp, ipath, "do", broken)
        if "until" in inp:
            self.condition(inp["until"], (*ipath, "until"))
            if "on_exhausted" not in inp:
                self.problem(
                    ipath,
                    "a `loop` with `until` needs `on_exhausted`: `{ fail: message }` or "
                    "`{ value: v }` (what the loop gives when no round meets `until`)",
                    code=PLAN_MISSING_FIELD,
                )
        if "on_exhausted" not in inp:
            return
        oe, opath = inp["on_exhausted"], (*ipath, "on_exhausted")
        if "until" not in inp:
            self.problem(
                opath,
                "`on_exhausted` needs `until`: without it the loop runs every round and gives "
                "the last state",
            )
        elif not isinstance(oe, dict) or len(oe) != 1 or not set(oe) <= {"fail", "value"}:
            self.problem(opath, "`on_exhausted` must be `{ fail: message }` or `{ value: v }`")
        elif "fail" in oe and not isinstance(oe["fail"], str):
            self.problem((*opath, "fail"), "`fail` must be a message text")

    def visit_parallel(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        branches = inp.get("branches")
        if "branches" in inp:
            if not isinstance(branches, dict) or not branches:
                self.problem((*ipath, "branches"), "`branches` must map names to steps")
            else:
                for name in branches:
                    if not isinstance(name, str) or not STEP_ID_RE.fullmatch(name):
                        self.problem(
                            (*ipath, "branches", name),
                            f"branch name {name!r} must match [A-Za-z_][A-Za-z0-9_]*",
                            key=True,
                        )
                    self.body_field(branches, (*ipath, "branches"), name, broken)
        self.positive_int(inp, ipath, "concurrency", 1)

    def visit_sleep(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        """``sleep``: ``for`` a positive duration up to 8760h (:data:`MAX_SLEEP_MS`), or a
        template (checked when the step runs)."""
        wait = inp.get("for")
        if "for" not in inp or (isinstance(wait, str) and "{{" in wait):
            return
        ms = self.duration(wait, (*ipath, "for"), "`for`")
        if ms is not None and ms > MAX_SLEEP_MS:
            self.problem((*ipath, "for"), f"`for` must be at most 8760h (365 days), not {wait!r}")

    def visit_value(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        pass

    def visit_verify(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        checks = inp.get("checks", [])
        if not isinstance(checks, list):
            self.problem((*ipath, "checks"), "`checks` must be a list of {ok, message}")
        else:
            for i, check in enumerate(checks):
                self.fields(
                    check, (*ipath, "checks", i), {"ok", "message"}, {"ok", "message"}, "check"
                )
        judges = inp.get("judges", [])
        if not isinstance(judges, list):
            self.problem((*ipath, "judges"), "`judges` must be a list of {prompt}")
        else:
            for i, judge in enumerate(judges):
                self.fields(judge, (*ipath, "judges", i), {"prompt"}, {"prompt"}, "judge")
        if not checks and not judges:
            self.problem(ipath, "`verify` needs `checks` or `judges`", code=PLAN_MISSING_FIELD)

    def fields(
        self, value: Any, path: Path, allowed: set[str], required: set[str], what: str
    ) -> bool:
        if not isinstance(value, dict):
            self.problem(path, f"a {what} must be a mapping with {', '.join(sorted(allowed))}")
            return False
        misspelt = self.unknown_fields(value, path, allowed, what)
        for key in sorted(required - set(value) - misspelt):
            self.problem(path, f"a {what} needs `{key}`", code=PLAN_MISSING_FIELD)
        return True

    def unknown_fields(
        self, value: dict[str, Any], path: Path, allowed: Any, what: str, tool: str | None = None
    ) -> set[str]:
        """Report each key of ``value`` not in ``allowed`` (with the nearest allowed one as the
        hint; for a control step's input, else the fields it takes); return the allowed fields
        so suggested, whose "needs" problem would be the same mistake again."""
        misspelt: set[str] = set()
        for key in value:
            if key in allowed:
                continue
            hint = did_you_mean(str(key), allowed)
            if hint is not None:
                misspelt.add(suggested(hint))
            elif tool == "exit" and key == "infer":
                hint = _EXIT_INFER
            elif tool is not None:
                hint = f"`{tool}` takes: {', '.join(sorted(allowed))}"
            self.problem(
                (*path, key),
                f"unknown field `{key}` in {what}",
                hint=hint,
                key=True,
                code=PLAN_UNKNOWN_FIELD,
            )
        return misspelt

    def visit_ask(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        if "question" in inp and not isinstance(inp["question"], str):
            self.problem((*ipath, "question"), "`question` must be a text")
        schema_ok = "schema" in inp and self.json_schema(
            inp["schema"], (*ipath, "schema"), "schema"
        )
        if "choices" in inp and not isinstance(inp["choices"], list | str):
            self.problem((*ipath, "choices"), "`choices` must be a list or a `{{ … }}` template")
        if "when_unanswered" in inp:
            wu = inp["when_unanswered"]
            wpath = (*ipath, "when_unanswered")
            if wu == "skip":
                return
            if not isinstance(wu, dict) or len(wu) != 1 or not set(wu) <= {"default", "fail"}:
                self.problem(
                    wpath,
                    "`when_unanswered` must be `{ default: v }`, `{ fail: message }` or `skip`",
                )
            elif "fail" in wu and not isinstance(wu["fail"], str):
                self.problem((*wpath, "fail"), "`fail` must be a message text")
            elif "default" in wu:
                self.ask_default(inp, wu["default"], (*wpath, "default"), schema_ok)

    def ask_default(self, inp: dict[str, Any], default: Any, dpath: Path, schema_ok: bool) -> None:
        """A literal `when_unanswered.default` must itself be a valid answer: one of literal
        `choices` and conforming to a literal `schema` (templated parts are checked at run time)."""
        if _templated(default):
            return
        choices = inp.get("choices")
        if isinstance(choices, list) and choices and not _templated(choices):
            if default not in choices:
                self.problem(
                    dpath, f"the default {default!r} is not one of the choices {choices!r}"
                )
                return
        schema = inp.get("schema")
        if schema_ok and isinstance(schema, dict) and schema and not _templated(schema):
            try:
                errors = validation_errors(schema, default)
            except ValueError as exc:
                self.problem(dpath, f"the default cannot be checked: {exc}")
                return
            if errors:
                self.problem(dpath, f"the default does not match `schema`: {errors[0].message}")

    def visit_agent(self, inp: dict[str, Any], ipath: Path, broken: set[str]) -> None:
        """Agent input rules (docs/spec/PLAN_IR.md §6, seed 000 'Input')."""
        if "prompt" in inp and not isinstance(inp["prompt"], str):
            self.problem((*ipath, "prompt"), "`prompt` must be a text")
        if "output_schema" in inp:
            schema = inp["output_schema"]
            spath = (*ipath, "output_schema")
            if self.json_schema(schema, spath, "output_schema"):
                root = schema.get("type")
                if root != "object":
                    self.problem(
                        (*spath, "type") if "type" in schema else spath,
                        "`output_schema` must have `type: object` at its root"
                        + (f", not {root!r}" if root is not None else ""),
                        code=PLAN_INVALID_SCHEMA,
                    )
        if "tools" in inp:
            self.agent_tools(inp["tools"], (*ipath, "tools"))
        self.positive_int(inp, ipath, "max_iterations", 1, MAX_ITERATIONS)
        self.positive_int(inp, ipath, "repair_attempts", 0)
        for key in ("model", "system_prompt"):
            if key in inp and not isinstance(inp[key], str):
                self.problem((*ipath, key), f"`{key}` must be a text")
        if "require_final" in inp and not isinstance(inp["require_final"], bool):
            self.problem((*ipath, "require_final"), "`require_final` must be true or false")
        if "budget" in inp:
            self.budget(inp["budget"], (*ipath, "budget"))
        if "write" in inp:
            w = inp["write"]
            ok = isinstance(w, str) or (isinstance(w, list) and all(isinstance(x, str) for x in w))
            if not ok:
                self.problem((*ipath, "write"), "`write` must be a list of paths (texts)")
            elif any(not x.strip() for x in ([w] if isinstance(w, str) else w)):
                # "" would resolve to the workspace itself: a scope that grants everything
                self.problem(
                    (*ipath, "write"),
                    '`write` holds an empty path ""; name the files or directories the agent '
                    'may write (the whole workspace is ".")',
                )
        if "agent" in inp:
            self.agent_target(inp["agent"], (*ipath, "agent"))

    def agent_tools(self, tools: Any, path: Path) -> None:
        if tools == "none" or tools is None:
            return
        if isinstance(tools, str):
            self.problem(
                path,
                "`tools` must be a list of tool names or patterns, or `none`",
                hint=f"write `tools: [{tools!r}]`" if tools else None,
            )
            return
        if not isinstance(tools, list):
            self.problem(path, "`tools` must be a list of tool names or patterns, or `none`")
            return
        if not tools:
            self.problem(path, '`tools: []` is refused (it is not "no tools"): write `tools: none`')
            return
        for i, name in enumerate(tools):
            if not isinstance(name, str) or not name.strip():
                self.problem((*path, i), "each `tools` entry must be a tool name or `*` pattern")
            elif name == "plan_and_execute":
                self.problem((*path, i), "`plan_and_execute` is never available inside an agent")

    def agent_target(self, target: Any, path: Path) -> None:
        kinds = {"alias": {"name"}, "team.main": {"team"}, "team.member": {"team", "member"}}
        if not isinstance(target, dict):
            self.problem(path, "`agent` must be a mapping with `kind`")
            return
        kind = target.get("kind")
        if not isinstance(kind, str) or kind not in kinds:
            self.problem(
                (*path, "kind") if "kind" in target else path,
                f"`agent.kind` must be one of alias, team.main, team.member, not {kind!r}",
                hint=did_you_mean(str(kind), kinds) if kind else None,
            )
            return
        need = kinds[kind]
        self.fields(target, path, need | {"kind"}, need, f"`{kind}` agent target")
        for key in need:
            if key in target and not isinstance(target[key], str):
                self.problem((*path, key), f"`agent.{key}` must be a text")


#: control step → the ``_Validator.visit_<step>`` method with its rules (built once; a control
#: step without one fails here, at import)
_STEP_RULES: dict[str, Any] = {name: getattr(_Validator, "visit_" + name) for name in CONTROL_STEPS}


#: Control steps whose fields besides bodies see more names than the step's scope: the fields and
#: the names (a ``filter`` gate sees the item; a ``loop``'s ``until`` and ``on_exhausted`` the
#: round and the state).
_GATE_SCOPE: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "filter": (frozenset({"when", "infer"}), frozenset({"item", "index"})),
    "loop": (frozenset({"until", "on_exhausted"}), frozenset({"round", "accumulator"})),
}


def _templated(value: Any) -> bool:
    """Whether a raw plan value holds a ``{{ … }}`` template anywhere (so it is known only at
    run time)."""
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, dict):
        return any(_templated(k) or _templated(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_templated(v) for v in value)
    return False


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


def _schema_error(schema: dict[str, Any]) -> tuple[str, Path] | None:
    """The first problem of ``schema`` against the JSON Schema 2020-12 metaschema as
    ``(message, path inside the schema)``, or None.

    Checking a whole contract against the metaschema costs 3-30 ms, and compiled plans repeat
    the same few parts (``{"type": "integer"}``, a record type's definition) in ever new
    combinations. The metaschema constrains each keyword of a schema on its own and checks each
    subschema (``properties``/``$defs`` values, ``items``, ``anyOf`` members, …) against the
    metaschema itself, so the check splits into one check per keyword, each subschema checked
    the same way, and every part is cached by its canonical JSON text. A schema that is not JSON
    text (or nests too deeply to split) is checked whole, uncached."""
    if plainly_valid_schema(schema):  # what `flowc compile` writes: no jsonschema import
        return None
    try:
        return _split_schema_error(schema)
    except (TypeError, ValueError, RecursionError):
        return _check_schema(schema)


#: keywords whose value maps names to subschemas (the names of `patternProperties` are checked
#: too: they must be regular expressions), whose value is a subschema, or a non-empty list of them
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = frozenset(
    (
        "items",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contentSchema",
    )
)
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")


def _split_schema_error(schema: Any) -> tuple[str, Path] | None:
    if not isinstance(schema, dict) or not schema:
        return _cached_schema_error(json.dumps(schema, sort_keys=True, allow_nan=False))
    for key in sorted(schema):
        value = schema[key]
        subs: list[tuple[Path, Any]] = []
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            # the names matter only as regular expressions
            shell: Any = dict.fromkeys(value, True) if key == "patternProperties" else {}
            subs = [((key, name), sub) for name, sub in value.items()]
        elif key in _SCHEMA_ONE and isinstance(value, dict):
            shell = True
            subs = [((key,), value)]
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            shell = [True if isinstance(v, dict) else v for v in value]
            subs = [((key, i), v) for i, v in enumerate(value) if isinstance(v, dict)]
        else:
            shell = value
        error = _cached_schema_error(json.dumps({key: shell}, sort_keys=True, allow_nan=False))
        if error is not None:
            return error
        for where, sub in subs:
            error = _split_schema_error(sub)
            if error is not None:
                return error[0], (*where, *error[1])
    return None


@functools.lru_cache(maxsize=2048)
def _cached_schema_error(key: str) -> tuple[str, Path] | None:
    return _check_schema(json.loads(key))


def _check_schema(schema: dict[str, Any]) -> tuple[str, Path] | None:
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc.message, tuple(exc.path)
    except RecursionError:
        return "it is nested too deeply to check", ()
    return None
