"""Checking `test` blocks (docs/reference/testing.md), after the stages are checked: the
structure of each test case.

A test's name is defined once; its ``input`` (one, a constant) must fit the flow's input type
(a test without one runs with ``{}``); ``map [ … ] as case`` gives the test a ``case`` typed
from its constants (:func:`case_type`); a step is stubbed once per test. ``expect E`` must be a
``bool`` over ``output``, ``input``, the stages, ``inferences``, ``calls`` and ``sleeps``
(:func:`test_scope_names`); the code of ``expect fail`` must be a run-time error code.

The stubs themselves are checked by :mod:`~agentflow.compiler.check_stubs` (agent, stage and
tool stubs) and :mod:`~agentflow.compiler.check_stub_steps` (``stub step`` and ``stub ask``),
their values by :mod:`~agentflow.compiler.check_test_values` (constants, codes, contracts).

:func:`check_tests` is called by the checker with itself (:class:`~agentflow.compiler.checker.Checker`,
from its ``check_test_blocks`` phase); it only reports.
"""

from __future__ import annotations

from typing import Any, cast

from agentflow.compiler.check_stubs import AgentCall, _check_stub, agent_calls
from agentflow.compiler.check_test_values import _code, _constant
from agentflow.compiler.checker_shared import CheckerShared, Var
from agentflow.compiler.symbols import Symbol
from agentflow.compiler.types import (
    BOOL,
    DURATION,
    ERROR,
    INT,
    NULL,
    TEXT,
    Field,
    ListType,
    LiteralType,
    ObjectType,
    Type,
    make_optional,
    make_union,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note
from agentflow.core.spans import Span
from agentflow.core.vocabulary import ERROR_CODES
from agentflow.grammar import ast

__all__ = [
    "check_tests",
    "test_scope_names",
]


#: names an ``expect`` sees besides the stages and ``input``
TEST_NAMES = ("output", "inferences", "calls", "sleeps")


def test_scope_names(checker: CheckerShared) -> dict[str, Type]:
    """The types of the names only an ``expect`` sees: ``output``, ``inferences``, ``calls``,
    ``sleeps`` (the durations the run's ``sleep`` steps waited, in order)."""
    calls = ObjectType({name: Field(INT) for name in sorted(checker.tool_decls)}, None)
    return {
        "output": checker.test_output_type,
        "inferences": INT,
        "calls": calls,
        "sleeps": ListType(DURATION),
    }


def check_tests(checker: CheckerShared, tests: list[ast.TestDecl], output_type: Type) -> None:
    """Check every test block (see the module docstring); reports through ``checker``."""
    if not tests:
        return
    checker.test_output_type = output_type
    calls = agent_calls(checker.stage_order, checker.types)
    seen: dict[str, ast.TestDecl] = {}
    checker.constant_strings = True
    try:
        for test in tests:
            if test.name in seen:
                checker.report(
                    D.DUPLICATE_DEFINITION,
                    f'test "{test.name}" is defined twice',
                    test.name_span,
                    notes=[Note("first defined here", seen[test.name].name_span)],
                )
            else:
                seen[test.name] = test
            _check_test(checker, test, calls)
    finally:
        checker.constant_strings = False


def const_type(checker: CheckerShared, e: ast.Expr) -> Type:
    """The most precise type of the constant ``e``: string, number and boolean literals keep
    their literal type (``"high"``, not ``text``), so a case field can fill a literal union."""
    if isinstance(e, ast.StringLit) and all(isinstance(p, str) for p in e.parts):
        return LiteralType("".join(str(p) for p in e.parts))
    if isinstance(e, (ast.NumberLit, ast.BoolLit)):
        return LiteralType(e.value)
    if isinstance(e, ast.NullLit):
        return NULL
    if isinstance(e, ast.ListLit):
        return ListType(make_union([const_type(checker, i) for i in e.items]))
    if isinstance(e, ast.ObjectLit):
        return ObjectType({en.key: Field(const_type(checker, en.value)) for en in e.entries})
    t = checker.types.get(id(e))
    return t if t is not None else TEXT


def case_type(checker: CheckerShared, cases: ast.ListLit) -> Type:
    """The type of a test's ``case``: objects merged field by field (a field some cases lack is
    optional), each field the union of the cases' literal types; else the union of the cases."""
    types = [const_type(checker, c) for c in cases.items]
    if types and all(isinstance(t, ObjectType) for t in types):
        keys: list[str] = []
        for t in types:
            keys.extend(k for k in t.fields if k not in keys)  # type: ignore[attr-defined]
        fields = {}
        for k in keys:
            present = [t.fields[k].type for t in types if k in t.fields]  # type: ignore[attr-defined]
            ft = make_union(present)
            if len(present) < len(types):
                fields[k] = Field(make_optional(ft), optional=True)
            else:
                fields[k] = Field(ft)
        return ObjectType(fields)
    return make_union(types)


def _check_test(checker: CheckerShared, test: ast.TestDecl, calls: list[AgentCall]) -> None:
    case = test.case.name if test.case is not None else None
    case_scope: dict[str, Any] = {}
    if test.cases is not None and test.case is not None:
        checker.infer(test.cases)
        if not isinstance(test.cases, ast.ListLit) or not _constant(
            checker, test.cases, "a test's cases"
        ):
            if not isinstance(test.cases, ast.ListLit):
                checker.report(
                    D.INVALID_VALUE,
                    "a test's cases must be a list written out: `map [{ … }, { … }] as case`",
                    test.cases.span,
                )
            ct: Type = ERROR
        else:
            ct = case_type(checker, test.cases)
        case_scope[test.case.name] = _var(checker, test.case.name, ct, test.case.span)
    checker.scopes.append(case_scope)
    try:
        _check_items(checker, test, calls, case)
    finally:
        checker.scopes.pop()


def _check_items(
    checker: CheckerShared, test: ast.TestDecl, calls: list[AgentCall], case: str | None
) -> None:
    inputs = test.inputs
    for extra in inputs[1:]:
        checker.report(
            D.DUPLICATE_DEFINITION,
            "this test gives its `input` twice",
            extra.span,
            notes=[Note("first given here", inputs[0].span)],
        )
    replays = test.replays
    for again in replays[1:]:
        checker.report(
            D.DUPLICATE_DEFINITION,
            "this test replays a second cassette",
            again.span,
            notes=[Note("the first is given here", replays[0].span)],
            hint="one cassette per test: record the run once into one file",
        )
    if inputs and _constant(checker, inputs[0].value, "a test's input", case):
        checker.expr(inputs[0].value, checker.input_type)
    elif not inputs:
        _check_default_input(checker, test)
    stubbed: dict[tuple[str, str], ast.TestStub] = {}
    for stub in test.stubs:
        key = (stub.kind, stub.written)
        if key in stubbed:
            checker.report(
                D.DUPLICATE_DEFINITION,
                f"`{stub.kind} {stub.written}` is stubbed twice in this test",
                stub.span,
                notes=[Note("first stubbed here", stubbed[key].span)],
            )
            continue
        whole = stubbed.get(("step", stub.target.name)) if stub.branch else None
        if whole is not None:  # `stub step r` then `stub step r.a`: the block gives every branch
            checker.report(
                D.DUPLICATE_DEFINITION,
                f"`step {stub.written}` is stubbed with its whole block `step {stub.target.name}` "
                "in this test",
                stub.span,
                notes=[Note("the block stubbed here", whole.span)],
                hint=f"the block's stub gives every branch of `{stub.target.name}`: remove one",
            )
            continue
        stubbed[key] = stub
    staged = {stub.target.name for stub in test.stubs if stub.kind == "stage"}
    for stub in stubbed.values():
        _check_stub(checker, stub, calls, case, staged)
    names = test_scope_names(checker)
    # `calls.T` of a stubbed tool reported unknown above: not a second diagnostic of it
    unknown = [s.target.name for s in stubbed.values() if s.kind == "tool"]
    calls_t = cast(ObjectType, names["calls"])
    fields = {n: Field(ERROR) for n in unknown if n not in calls_t.fields}
    names["calls"] = ObjectType({**calls_t.fields, **fields}, None) if fields else calls_t
    scope = {name: _var(checker, name, t, test.span) for name, t in names.items()}
    for exp in test.expects:
        if exp.cond is not None and _expects_failure_by_name(checker, exp.cond):
            continue
        if exp.cond is not None:
            checker.scopes.append(dict(scope))
            try:
                checker.expr(exp.cond, BOOL)
            finally:
                checker.scopes.pop()
        elif exp.fail_code is not None:
            _code(checker, exp.fail_code, exp.code_span)


def _check_default_input(checker: CheckerShared, test: ast.TestDecl) -> None:
    """A test without ``input`` runs the flow with ``{}`` (docs/reference/testing.md): checked
    against the flow's input type as a written ``input`` is, reported at the test's name with
    the fields it lacks (`type-mismatch`)."""
    t = checker.env.resolve(checker.input_type)
    if not isinstance(t, ObjectType):
        return
    missing = [name for name, f in t.fields.items() if not f.optional]
    if not missing:
        return
    names = ", ".join(f"`{n}`" for n in missing)
    fields = ", ".join(f"{n}: …" for n in missing)
    plural = "s" if len(missing) > 1 else ""
    first = t.fields[missing[0]]
    checker.report(
        D.TYPE_MISMATCH,
        f"this test gives no `input`, so the flow runs with `{{}}`, which lacks the required "
        f"field{plural} {names} of the flow's input",
        test.name_span,
        notes=[Note(f"field `{missing[0]}` is required", first.span)] if first.span else [],
        hint=f"give the test its input: `input {{ {fields} }}`",
    )


#: names written for a failed run's error in other test frameworks (`failure.code`, `error`)
_FAILURE_NAMES = frozenset({"failure", "error", "err", "exception", "failed", "fail"})


def _expects_failure_by_name(checker: CheckerShared, cond: ast.Expr) -> bool:
    """``expect failure.code == "loop_exhausted"``: a failed run is expected with
    ``expect fail "code"`` (docs/reference/testing.md); reported as `unknown-name` with that
    hint, True.  False when ``cond`` reads no such unknown name."""
    for node in ast.walk(cond):
        if (
            isinstance(node, ast.Name)
            and node.name in _FAILURE_NAMES
            and checker.lookup(node.name) is None
            and node.name not in checker.all_stages
        ):
            code = next(
                (
                    n.text
                    for n in ast.walk(cond)
                    if isinstance(n, ast.StringLit) and n.is_plain and n.text in ERROR_CODES
                ),
                "code",
            )
            checker.report(
                D.UNKNOWN_NAME,
                f"unknown name `{node.name}`",
                node.span,
                hint=f'a test expects a failed run with `expect fail "{code}"` (the run\'s error '
                "code); `output` is the value of a run that succeeded",
            )
            return True
    return False


def _var(checker: CheckerShared, name: str, t: Type, span: Span) -> Var:
    return Var(Symbol("test", name, t, None), span, used=True)
