"""The api of compiled plans: a `.flow` checked and lowered to a plan, validated, loaded, dumped
and costed (docs/spec/LANGUAGE.md §10, docs/spec/PLAN_IR.md).  :mod:`agentflow.api` re-exports
every public name here.

This module loads the plan models (``agentflow.ir``: Pydantic) but nothing of the runtime; the
front end alone (``flowc check``) is :mod:`agentflow.api_check` (docs/decisions.md "The api
split by what it loads").  Errors in the user's files come back as
:class:`agentflow.errors.FlowError` subclasses that name file, line and column.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow.compiler.api import check_source, read_source
from agentflow.compiler.check_depth import too_deep_diagnostic
from agentflow.compiler.checker import CheckResult
from agentflow.compiler.imports import importers_of
from agentflow.compiler.lowering import LoweringError, lower, value_span
from agentflow.core.diagnostics import (
    COST_OVER_BUDGET,
    PLAN_TEMPLATE_SYNTAX,
    PLAN_TOO_DEEP,
    Diagnostic,
)
from agentflow.core.spans import Span
from agentflow.errors import CompileError, NotAPlan, PlanLoadError
from agentflow.grammar import ast
from agentflow.ir.cost import over_budget, worst_case
from agentflow.ir.dump import dump_plan, fmt_plan_text
from agentflow.ir.loader import load_plan, load_plan_data, load_plan_text, read_plan_text
from agentflow.ir.models import Plan

__all__ = [
    "output_place",
    "CompileError",
    "CompiledFlow",
    "compile_checked",
    "compile_flow",
    "compile_source",
    "cost_warnings",
    "format_plan_file",
    "load",
    "plan_from_data",
    "plan_from_text",
    "plan_text",
    "worst_case_cost",
    "library_message",
]


def _fspath(path: str | os.PathLike[Any] | None) -> str | None:
    """``path`` as a string (``os.fspath``), None kept."""
    return None if path is None else os.fspath(path)


@dataclass
class CompiledFlow:
    """The result of :func:`compile_flow`: the plan as plain data and the check result
    (whose ``diagnostics`` may still hold warnings)."""

    plan: dict[str, Any]
    check: CheckResult
    file: str
    #: errors inside `test` blocks, which are not part of the plan: they do not stop a compile
    #: or a run (``flowc check`` and ``flowc test`` report them as errors; docs/decisions.md
    #: "Errors in test blocks do not stop a run")
    test_errors: list[Diagnostic] = field(default_factory=list)

    @property
    def library(self) -> bool:
        """True for a file with no stage: a library of declarations for other flows to import,
        not a plan (docs/reference/programs.md "Libraries"): ``flowc compile`` writes no plan
        for it, ``flowc run`` and :func:`load` refuse it, the plans directory and ``flowc
        serve`` leave it out."""
        return not self.check.stages

    def to_yaml(self) -> str:
        """The plan as deterministic YAML (docs/spec/PLAN_IR.md §1; same input, same bytes)."""
        return dump_plan(self.plan)

    def to_json(self) -> str:
        """The plan as JSON (keys in canonical order, 2-space indent)."""
        return json.dumps(self.plan, indent=2, ensure_ascii=False) + "\n"


def compile_source(text: str, file: str) -> CompiledFlow:
    """Check and lower `.flow` source text named ``file``.

    Raises :class:`CompileError` with every diagnostic when the program has errors; also when
    the lowered plan fails the runtime's structural validation (a compiler bug, reported rather
    than hidden): then each problem is an ``unsupported-construct`` diagnostic whose message
    starts with ``internal compiler error``, placed at the offending step's source.
    """
    return compile_checked(check_source(text, file), text, file)


def compile_checked(result: Any, text: str, file: str) -> CompiledFlow:
    """Lower a checked program (the :class:`~agentflow.compiler.checker.CheckResult` of
    ``text``, named ``file``) and validate the plan, as :func:`compile_source` does after its
    check (same errors); for a caller that has checked the source already."""
    tested = _test_errors(result)
    if len(tested) < len(result.errors):
        raise CompileError(result.errors, {file: text})
    if tested:  # the plan leaves the tests out: lowered as if they were not there
        left = {id(d) for d in tested}
        result = dataclasses.replace(
            result, diagnostics=[d for d in result.diagnostics if id(d) not in left]
        )
    try:
        data = lower(result, file=file, source=text)
    except LoweringError as e:
        diag = Diagnostic("unsupported-construct", e.message, e.span)
        raise CompileError([diag], {file: text}) from None
    try:
        load_plan_data(data, file)  # round trip: the compiled plan must validate
    except PlanLoadError as e:
        diags = [_plan_problem(p, data, file) for p in e.errors]
        raise CompileError(diags, {file: text}) from None
    return CompiledFlow(plan=data, check=result, file=file, test_errors=tested)


def _test_errors(result: Any) -> list[Diagnostic]:
    """The errors of ``result`` placed inside a `test` block, syntax errors left out (a test
    that does not parse may hide where the program went wrong)."""
    errors = result.errors
    if not errors:
        return []
    tests = [t.span for t in result.module.of(ast.TestDecl)]
    if not tests:
        return []
    return [
        d
        for d in errors
        if d.code != "syntax-error"
        and any(t.file == d.span.file and t.start <= d.span.start < t.end for t in tests)
    ]


def _plan_problem(problem: Diagnostic, plan: dict[str, Any], file: str) -> Diagnostic:
    """The ``unsupported-construct`` diagnostic for a compiled plan's load problem: a template
    deeper than the plan limit (``vocabulary.MAX_EXPR_DEPTH`` levels, e.g. a long member chain
    on a `let` that the lowering writes out in full) is the program's limit; anything else is
    an internal compiler error."""
    span = _problem_span(problem.message, plan, file)
    if problem.code == PLAN_TOO_DEEP or (
        problem.code == PLAN_TEMPLATE_SYNTAX and "nested too deeply" in problem.message
    ):  # the check reports these first (compiler.check_depth)
        return too_deep_diagnostic(span)
    return Diagnostic(
        "unsupported-construct",
        f"internal compiler error: the compiled plan does not validate: {problem.message}",
        span,
        hint="this is a flowc bug; simplifying the expression may work around it",
    )


_STEP_PATH = re.compile(r"^(?:plans\.([A-Za-z0-9_]+)\.)?(steps\[\d+\](?:\.[A-Za-z0-9_]+|\[\d+\])*)")
_PATH_PART = re.compile(r"\.?([A-Za-z0-9_]+)|\[(\d+)\]")


def _problem_span(message: str, plan: dict[str, Any], file: str) -> Span:
    """The `.flow` position of a compiled plan's load problem: the ``meta.source`` of the
    innermost step on the value path its message starts with (``steps[3].input.do…`` /
    ``plans.<name>.steps[0]…``), as ``flowc check`` places it (compiler.check_depth), else
    line 1, column 1."""
    line = column = 1
    m = _STEP_PATH.match(message)
    if m:
        node: Any = (plan.get("plans") or {}).get(m.group(1)) if m.group(1) else plan
        for part in _PATH_PART.finditer(m.group(2)):
            try:
                node = node[part.group(1)] if part.group(1) else node[int(part.group(2))]
            except (KeyError, IndexError, TypeError):
                break
            meta = node.get("meta") if isinstance(node, dict) else None
            loc = Span.parse(meta.get("source")) if isinstance(meta, dict) else None
            if loc is not None:
                line, column = loc.line, loc.column
    return Span(file, line, column, line, column + 1)


def compile_flow(path: str | os.PathLike[str]) -> CompiledFlow:
    """Check and lower the `.flow` file at ``path`` (see :func:`compile_source`)."""
    return compile_source(read_source(path), str(path))


def output_place(text: str, file: str) -> tuple[str, Span] | None:
    """Where a compiled `.flow`'s output is written: ``(the last stage's name, the span of its
    value)`` — its ``return``, else its last expression, else the stage — for the `.flow`
    source ``text`` of ``file``; None when it has no stage.  A compiled plan's ``finish`` is
    its last stage's value (docs/spec/LANGUAGE.md §10): ``flowc run`` names a failure of it so
    (docs/reference/errors.md)."""
    result = check_source(text, file)
    if not result.stages:
        return None
    stage = result.stages[-1]
    return stage.name.name, value_span(stage.body.stmts, stage.span)


def load(path: str | os.PathLike[str]) -> Plan:
    """Load a runnable plan: a `.flow` file is compiled in memory, anything else is read as a
    YAML/JSON plan file.  Raises :class:`CompileError` or :class:`PlanLoadError`."""
    p = Path(path)
    if p.suffix == ".flow":
        compiled = compile_flow(p)
        if compiled.library:
            raise NotAPlan(library_message(p, compiled))
        return load_plan_data(compiled.plan, str(p))
    return load_plan(p)


def load_plan_or_library(path: str | os.PathLike[str]) -> Plan | None:
    """:func:`load` for the plans directory: None for a `.flow` library (a file of types the
    directory's flows import is not a ``plan__`` tool: docs/reference/programs.md
    "Libraries")."""
    try:
        return load(path)
    except NotAPlan:
        return None


def _shown_path(path: Path) -> str:
    """``path`` relative to the current directory when under it, else as it is."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def library_message(path: str | os.PathLike[str], compiled: CompiledFlow) -> str:
    """What a `.flow` library is and what to run instead (``flowc run`` of one): the flows
    near it that import it, else how to make it a flow."""
    p = Path(path)
    types = sorted(n for n, i in compiled.check.type_decls.items() if i.span.file == str(p))
    example = types[0] if types else "T"
    users = importers_of(p)
    if len(users) == 1:
        then = f"run the flow that imports it: `flowc run {_shown_path(users[0])}`"
    elif users:
        shown = ", ".join(_shown_path(u) for u in users[:3])
        more = f" and {len(users) - 3} more" if len(users) > 3 else ""
        then = (
            f"run a flow that imports it: `flowc run {_shown_path(users[0])}` (imported by "
            f"{shown}{more})"
        )
    else:
        then = (
            f'run a flow that imports it (`import {{ {example} }} from "./{p.name}"`), or add a '
            "`stage` to make it a flow"
        )
    return (
        f"{p} has no stage: it is a library of types for other flows to import, not a plan "
        f"to run; {then}"
    )


def library_tests_note(path: str | os.PathLike[str]) -> str | None:
    """``flowc test FILE`` of a `.flow` library (no stage) that holds no `test` block: a note
    saying so and where its types are tested — by the tests of the flows near it that import
    it (:func:`~agentflow.compiler.imports.importers_of`), else by `test` blocks written in it,
    which run as any file's do (docs/reference/testing.md "Running").  None for any other
    file (a flow, a library with tests, one that cannot be read or does not check)."""
    p = Path(path)
    try:
        result = check_source(read_source(p), str(p))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not result.ok or result.stages or result.tests:
        return None
    users = importers_of(p)
    if users:
        then = f"the tests of the flows that import it use its types: `flowc test {_shown_path(users[0])}`"
    else:
        then = "a `test` block written in it runs as any file's does"
    return f"note: {p} is a library (types only, no stage): {then}"


def plan_text(target: str | os.PathLike[str] | Plan) -> tuple[str, str]:
    """``(plan YAML text, file name)`` of a `.flow` file (compiled), a plan file or a loaded plan:
    the input a durable run records, so editing the file never changes a run in flight."""
    if isinstance(target, Plan):
        return dump_plan(target), target.source_file or "<plan>"
    p = Path(target)
    if p.suffix == ".flow":
        return dump_plan(compile_flow(p).plan), str(p)
    return p.read_text(encoding="utf-8"), str(p)


def cost_warnings(plan: Plan, file: str, module: Any = None) -> list[Diagnostic]:
    """The ``cost-over-budget`` warnings of ``flowc cost`` for ``plan`` (read from ``file``):
    one per way the static worst case of model calls (:func:`agentflow.ir.cost.worst_case`)
    exceeds the plan's own run budget of inferences (:func:`agentflow.ir.cost.over_budget`).
    ``module``: the checked `.flow` AST (``CompiledFlow.check.module``), whose ``budget``
    declaration the warnings point at; else they point at the file.  docs/models.md
    "flowc cost"."""
    found = over_budget(worst_case(plan), plan)
    decls = module.of(ast.BudgetDecl) if module is not None else []
    span = decls[0].span if decls else Span.at(file)
    return [Diagnostic(COST_OVER_BUDGET, m, span, hint=h) for m, h in found]


def plan_from_data(data: dict[str, Any], file: str) -> Plan:
    """A runnable plan from plan data (a :class:`~agentflow.api.CompiledFlow`'s ``plan``);
    ``file`` names it in messages.  Raises :class:`agentflow.errors.PlanLoadError`."""
    return load_plan_data(data, file)


def plan_from_text(text: str, file: str = "<plan>") -> Plan:
    """A runnable plan from plan text (YAML or JSON; e.g. what a durable run recorded).  Raises
    :class:`agentflow.errors.PlanLoadError` with every problem."""
    return load_plan_text(text, file)


def worst_case_cost(plan: Plan) -> dict[str, Any]:
    """The most model calls one run of ``plan`` can make (``flowc cost``; docs/models.md
    "flowc cost"): ``{"roles": {role: text}, "total": text, "loops": [...], "unbounded":
    [...], "budgets": [...]}``, figures in the sizes of the run's input."""
    return worst_case(plan).to_dict()


def format_plan_file(path: str | os.PathLike[str]) -> tuple[str, str]:
    """``(text, canonical text)`` of the plan file at ``path`` (``flowc plan fmt``;
    docs/spec/PLAN_IR.md §1): comments kept.  Raises :class:`agentflow.errors.PlanLoadError`
    for an unreadable file or a plan that does not parse."""
    text = read_plan_text(Path(path))
    return text, fmt_plan_text(text, str(path))
