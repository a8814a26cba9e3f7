"""Checking `test` blocks (docs/reference/testing.md), after the stages are checked.

A test's ``input`` must fit the flow's input type; ``stub agent A returns V`` must fit the
``expect`` type of every agent call of alias ``A`` (a team alias: of every member), ``stub stage
S returns V`` that of every agent call inside stage ``S``, ``stub tool T returns V`` the tool's
declared result type; stub values and inputs are constants (no names). ``expect E`` must be a
``bool`` over ``output``, ``input``, the stages, ``inferences`` and ``calls``; the codes of
``fails`` and ``expect fail`` must be run-time error codes, and a ``fails`` of an agent or stage
stub one an agent call can fail with (``check_errors.agent_error_codes``). A stub that does not
fit is a ``stub-mismatch`` at the stub, with a note at the contract it breaks.

:func:`check_tests` is called by the checker with itself (:class:`~agentflow.compiler.checker.Checker`,
from its ``check_test_blocks`` phase); it only reports.
:func:`test_targets` is what the test runner needs to place the stubs.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from agentflow.compiler.check_errors import agent_error_codes
from agentflow.compiler.check_expressions import literal_const
from agentflow.compiler.check_types import object_tags
from agentflow.compiler.checker_shared import CheckerShared, Var
from agentflow.compiler.lower_match import decides
from agentflow.compiler.lower_parallel import effectful
from agentflow.compiler.symbols import Symbol, suggest_alias_name
from agentflow.compiler.types import (
    BOOL,
    DURATION,
    ERROR,
    INT,
    JSON,
    NULL,
    TEXT,
    VERDICT_OBJECT,
    ErrorType,
    Field,
    ListType,
    LiteralType,
    MapType,
    ObjectType,
    Type,
    UnionType,
    VerdictType,
    assignable,
    make_optional,
    make_union,
    strip_optional,
    type_str,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note, did_you_mean, meant_among
from agentflow.core.spans import Span
from agentflow.core.vocabulary import ERROR_CODES
from agentflow.grammar import ast

__all__ = [
    "AgentCall",
    "check_tests",
    "agent_calls",
    "is_step",
    "named_steps",
    "test_scope_names",
]

#: names an ``expect`` sees besides the stages and ``input``
TEST_NAMES = ("output", "inferences", "calls", "sleeps")


@dataclass(slots=True)
class AgentCall:
    """One ``agent(…) { … }`` of the flow: its alias (``dev`` for ``dev.main`` and
    ``dev.member(x)``; None when the target is not an alias), its stage, its ``expect`` type and
    the span of its ``expect`` clause."""

    alias: str | None
    stage: str
    type: Type
    expect_span: Span | None
    node: Any = field(default=None, repr=False)


def _alias_of(target: ast.Expr) -> str | None:
    if isinstance(target, ast.Name):
        return target.name
    if isinstance(target, ast.Member) and isinstance(target.obj, ast.Name):
        return target.obj.name
    if (
        isinstance(target, ast.Call)
        and isinstance(target.callee, ast.Member)
        and isinstance(target.callee.obj, ast.Name)
    ):
        return target.callee.obj.name
    return None


def agent_calls(stages: list[ast.StageDecl], types: dict[int, Type]) -> list[AgentCall]:
    """Every agent call in ``stages`` (checked: ``types`` maps ``id(node)`` → type), in order."""
    out = []
    for stage in stages:
        for node in ast.walk(stage.body):
            if isinstance(node, ast.AgentExpr):
                expect = next((c for c in node.clauses if c.kind == "expect"), None)
                out.append(
                    AgentCall(
                        _alias_of(node.target),
                        stage.name.name,
                        types.get(id(node), ERROR),
                        expect.span if expect is not None else None,
                        node,
                    )
                )
    return out


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


def _constant(checker: CheckerShared, value: ast.Expr, what: str, case: str | None = None) -> bool:
    """True when ``value`` reads no name (but the test's ``case``); else reported."""
    for node in ast.walk(value):
        if isinstance(node, ast.Name) and node.name != case:
            checker.report(
                D.INVALID_VALUE,
                f"{what} must be a constant; `{node.name}` is a name",
                node.span,
                hint="write the value out: a literal, list or object",
            )
            return False
    return True


def _code(checker: CheckerShared, code: str, span: Span | None) -> None:
    if code not in ERROR_CODES and span is not None:
        checker.report(
            D.UNKNOWN_ERROR_CODE,
            f'"{code}" is not a run-time error code',
            span,
            hint=meant_among(span, code, ERROR_CODES) or "codes: " + ", ".join(ERROR_CODES),
        )


#: at most this many of an answer's problems are listed as notes of its one ``stub-mismatch``
_MAX_PROBLEMS = 4


def _fits(
    checker: CheckerShared,
    value: ast.Expr,
    want: Type,
    stub: ast.TestStub,
    what: str,
    where: Span | None,
    hint: str | None = None,
) -> None:
    """Report one ``stub-mismatch`` when ``value`` does not fit ``want`` (a ``Verdict`` is
    stubbed by its structure, ``{ passed: bool, failures: text[] }``): at the answer, with its
    first problem in the message and the others (up to :data:`_MAX_PROBLEMS`) as notes — one
    error per answer, not one per field. ``hint`` replaces the default hint."""
    if isinstance(want, VerdictType):
        want = VERDICT_OBJECT
    got = checker.infer(value, want)
    if isinstance(got, ErrorType) or isinstance(want, ErrorType):
        return
    if assignable(got, want, checker.env):
        _constraints_hold(checker, value, want, stub, what, where)
        return
    mark = len(checker.diags)
    checker.mismatch(value, got, want)
    found = checker.diags[mark:]
    del checker.diags[mark:]
    contract = [Note(f"{what} expects `{checker.said(want)}`", where)] if where is not None else []
    if not found:
        found = [
            D.Diagnostic(
                D.TYPE_MISMATCH,
                f"expected `{checker.said(want)}`, found {checker.said_words(got)}",
                value.span,
            )
        ]
    first, rest = found[0], found[1:]
    message = f"this stub does not fit {what}: {first.message}"
    notes = list(first.notes)
    if rest:
        message += f" (and {len(rest)} more problem{'s' if len(rest) > 1 else ''})"
        notes += [Note(d.message, d.span) for d in rest[:_MAX_PROBLEMS]]
        if len(rest) > _MAX_PROBLEMS:
            notes.append(Note(f"… {len(rest) - _MAX_PROBLEMS} more"))
    checker.diags.append(
        dataclasses.replace(
            first,
            code=D.STUB_MISMATCH,
            span=value.span if rest else first.span,
            message=message,
            notes=notes + contract,
            hint=hint
            or first.hint
            or "update the stub to the contract, or the contract to the stub",
        )
    )


def _constraints_hold(
    checker: CheckerShared,
    value: ast.Expr,
    want: Type,
    stub: ast.TestStub,
    what: str,
    where: Span | None,
) -> None:
    """Report one ``stub-mismatch`` when a constant of the stub breaks a field constraint of
    ``want`` (``@range``, ``@length``, ``@pattern``): the contract a real answer is validated
    against, so a stub breaking it stands in for no answer the step could give. At the first
    such value, with the constraint's field as a note (``@format`` is checked at run time)."""
    problems = list(_broken_constraints(checker, value, want))
    if not problems:
        return
    (span, message, field_span), rest = problems[0], problems[1:]
    notes = [Note("the constraint is declared here", field_span)] if field_span else []
    notes += [Note(m, s) for s, m, _ in rest[:_MAX_PROBLEMS]]
    if where is not None:
        notes.append(Note(f"{what} expects `{checker.said(want)}`", where))
    more = f" (and {len(rest)} more problem{'s' if len(rest) > 1 else ''})" if rest else ""
    default = "write a value the contract accepts: a stub stands in for an answer, and is held to "
    default += "the same contract"
    if stub.kind in ("agent", "stage"):
        default += (
            '; to test an answer the agent cannot make conform, stub `fails "output_validation"`'
        )
    checker.report(
        D.STUB_MISMATCH,
        f"this stub does not fit {what}: {message}{more}",
        span,
        notes=notes,
        hint=default,
    )


def _broken_constraints(
    checker: CheckerShared, value: ast.Expr, want: Type
) -> Iterator[tuple[Span, str, Span | None]]:
    """``(span, message, the field's span)`` for each constant in ``value`` that breaks a
    constraint of the field of ``want`` it fills (objects and lists are walked; a union is
    walked into the members the value could be: :func:`_union_broken`)."""
    t = checker.env.resolve(strip_optional(want, checker.env))
    if isinstance(t, UnionType):
        yield from _union_broken(checker, value, t)
        return
    if isinstance(value, ast.ObjectLit) and isinstance(t, ObjectType):
        for entry in value.entries:
            f = t.fields.get(entry.key)
            if f is None:
                continue
            for name, args in f.constraints.items():
                broken = _breaks(entry.value, name, args)
                if broken is not None:
                    yield entry.value.span, f"`{entry.key}` {broken}", f.span
            yield from _broken_constraints(checker, entry.value, f.type)
    elif isinstance(value, ast.ListLit) and isinstance(t, ListType):
        for item in value.items:
            yield from _broken_constraints(checker, item, t.elem)


def _union_broken(
    checker: CheckerShared, value: ast.Expr, union: UnionType
) -> Iterator[tuple[Span, str, Span | None]]:
    """The broken constraints of ``value`` held to the union ``union``: the members it could be
    are those its tags (literal-typed fields: ``kind: "b"``) and its fields allow; when one of
    them takes it with every constraint holding, none; else the problems of the first (a
    tagged union has one such member, picked by its tag: the value fits no member)."""
    candidates = [m for m in union.members if _could_be(checker, value, m)]
    ranked = []
    for i, member in enumerate(candidates):
        problems = list(_broken_constraints(checker, value, member))
        if not problems:
            return
        t = checker.env.resolve(strip_optional(member, checker.env))
        written = (
            {e.key: e.value for e in value.entries} if isinstance(value, ast.ObjectLit) else {}
        )
        tags = object_tags(checker.env, written, t)[0] if isinstance(t, ObjectType) else []
        ranked.append(((-len(tags), len(problems), i), member, problems))
    if len(ranked) < 2:
        yield from ranked[0][2] if ranked else []
        return
    ranked.sort(key=lambda r: r[0])  # the closest first: by its tags, then fewest problems
    (_, member, first), others = ranked[0], ranked[1:]
    name = checker.said(union)
    span, message, field_span = first[0]
    yield (
        span,
        f"as `{checker.said(member)}` (the closest member of `{name}`), {message}",
        field_span,
    )
    yield from first[1:]
    for _, other, problems in others:  # the value fits no other member either: why, briefly
        span, message, field_span = problems[0]
        yield span, f"as `{checker.said(other)}`: {message}", field_span


def _could_be(checker: CheckerShared, value: ast.Expr, member: Type) -> bool:
    """Whether the stub constant ``value`` could be a value of the union member ``member``: an
    object literal by its keys and tags (a closed object has no other keys; every literal-typed
    field it writes holds that literal); any other value by its checked type."""
    t = checker.env.resolve(strip_optional(member, checker.env))
    if t == JSON:  # a `json` member takes any value (its constraints: none)
        return True
    if isinstance(value, ast.ObjectLit):
        if isinstance(t, MapType):  # any keys; its values as checked (constraints not walked)
            return True
        if not isinstance(t, ObjectType):
            return False
        written = {entry.key: entry.value for entry in value.entries}
        if any(key not in t.fields for key in written):
            return False
        for key, f in t.fields.items():
            if key not in written:
                if not f.optional:
                    return False
                continue
            tag = checker.env.resolve(f.type)
            if isinstance(tag, LiteralType):
                is_const, v = literal_const(written[key])
                if is_const and (
                    v != tag.value or isinstance(v, bool) != isinstance(tag.value, bool)
                ):
                    return False
        return True
    got = checker.types.get(id(value))
    return got is None or isinstance(got, ErrorType) or assignable(got, member, checker.env)


def _breaks(value: ast.Expr, name: str, args: tuple[Any, ...]) -> str | None:
    """How the constant ``value`` breaks the constraint ``@name(args)``, or None (it holds, or
    ``value`` is not a constant the constraint reads)."""
    shown = ", ".join("null" if a is None else json.dumps(a, ensure_ascii=False) for a in args)
    written = f"`@{name}({shown})`"
    if isinstance(value, ast.ListLit):
        if name != "length":
            return None
        v: Any = len(value.items)
        size = f"has {v} item{'' if v == 1 else 's'}"
    else:
        is_const, v = literal_const(value)
        if not is_const or v is None or isinstance(v, bool):
            return None
        size = f"has {len(v)} character{'' if len(v) == 1 else 's'}" if isinstance(v, str) else ""
    if name in ("range", "length"):
        lo, hi = (list(args) + [None, None])[:2]
        if name == "range":
            if isinstance(v, str):
                return None
            size = f"is {json.dumps(v)}"
        else:
            if not isinstance(value, ast.ListLit) and not isinstance(v, str):
                return None
            v = v if isinstance(v, int) else len(v)
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            return f"{size}, outside {written}"
        return None
    if name == "pattern" and isinstance(v, str) and args:
        try:
            if re.search(str(args[0]), v) is None:
                return f"is {json.dumps(v, ensure_ascii=False)}, which {written} does not match"
        except re.error:
            return None
    return None


def check_tests(checker: CheckerShared, tests: list[ast.TestDecl], output_type: Type) -> None:
    """Check every test block (see the module docstring); reports through ``checker``."""
    if not tests:
        return
    checker.test_output_type = output_type
    calls = agent_calls(checker.stage_order, checker.types)
    seen: dict[str, ast.TestDecl] = {}
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


def _unknown_target(
    checker: CheckerShared,
    message: str,
    span: Span,
    *,
    notes: list[Note] | None = None,
    hint: str | None = None,
    names_nothing: bool = True,
) -> None:
    """Report ``unknown-stub-target``.  A stub that ``names_nothing`` (no such stage, `let`,
    alias, ask or tool) is not reported while the parse dropped an item (a ``syntax-error``
    anywhere in the file): what it names may be in that item, and the stub is checked again
    once the file parses (docs/diagnostics.md "syntax-error": no cascade from a broken item).
    A stub naming something that parsed but cannot be stubbed (a stage calling no agent, a
    computed `let`) is reported all the same."""
    if names_nothing and any(d.code == D.SYNTAX_ERROR for d in checker.diags):
        return
    checker.report(D.UNKNOWN_STUB_TARGET, message, span, notes=notes, hint=hint)


def _var(checker: CheckerShared, name: str, t: Type, span: Span) -> Var:
    return Var(Symbol("test", name, t, None), span, used=True)


def _check_stub(
    checker: CheckerShared,
    stub: ast.TestStub,
    calls: list[AgentCall],
    case: str | None = None,
    staged: frozenset[str] | set[str] = frozenset(),
) -> None:
    name = stub.target.name
    if stub.kind == "tool":
        sig = checker.tool_decls.get(name)
        if sig is None:
            _unknown_target(
                checker,
                f"`{name}` is not a tool of this flow",
                stub.target.span,
                hint=meant_among(stub.target.span, name, checker.tool_decls)
                or f"declare it: `extern tool {name}(…) -> …` (docs/reference/tools.md)",
            )
            return
        for fails in _failures(stub):
            _code(checker, fails.code, fails.code_span)
        for value in _values(stub):
            if _constant(checker, value, "a stub's value", case):
                decl = getattr(sig.decl, "returns", None)
                _fits(
                    checker,
                    value,
                    sig.returns,
                    stub,
                    f"tool `{name}`",
                    decl.span if decl is not None else None,
                )
        return
    if stub.kind in ("ask", "step"):
        _check_named_stub(checker, stub, case)
        return
    if stub.kind == "agent":
        targets = [c for c in calls if c.alias == name]
        if not targets:
            # the aliases declared and called (an `agent(wri)` of no alias is reported there)
            known = sorted({c.alias for c in calls if c.alias in checker.uses})
            near = suggest_alias_name(name, known or checker.uses)
            _unknown_target(
                checker,
                f"no agent call of this flow uses the alias `{name}`",
                stub.target.span,
                hint=D.meant_at(stub.target.span, name, near)
                or (f"agent aliases called: {', '.join(known)}" if known else None),
            )
            return
    else:
        targets = [c for c in calls if c.stage == name]
        if not targets:
            stages = sorted({c.stage for c in calls})
            hint = meant_among(stub.target.span, name, stages)
            if name in checker.all_stages:
                message = f"stage `{name}` calls no agent"
                hint = hint or _no_agent_hint(checker, checker.all_stages[name], stages)
            else:
                message = f"`{name}` is not a stage of this flow"
            _unknown_target(
                checker,
                message,
                stub.target.span,
                hint=hint or (f"stages with agents: {', '.join(stages)}" if stages else None),
                names_nothing=name not in checker.all_stages,
            )
            return
    for fails in _failures(stub):
        _agent_code(checker, stub, fails)
    every = targets
    if stub.kind == "agent":  # a `stub stage` of the same test answers its stage's agents first
        targets = [c for c in targets if c.stage not in staged]
    hint = _agent_stub_hint(checker, stub, targets) or _staged_stub_hint(
        checker, stub, every, targets
    )
    for value in _values(stub):
        if not _constant(checker, value, "a stub's value", case):
            continue
        for call in targets:
            what = f"the agent `{call.alias}`" if call.alias else "the agent"
            before = len(checker.diags)
            _fits(
                checker,
                value,
                call.type,
                stub,
                f"{what} in stage `{call.stage}`",
                call.expect_span,
                hint,
            )
            if len(checker.diags) > before:
                break


def _agent_stub_hint(
    checker: CheckerShared, stub: ast.TestStub, targets: list[AgentCall]
) -> str | None:
    """The fix for a ``stub agent A`` that does not fit when ``A`` answers calls of more than one
    contract (one alias used with two ``expect`` types, or a team: every member and the main
    agent): ``stub stage`` stubs one stage; separate aliases stub one contract each."""
    if stub.kind != "agent" or not targets:
        return None
    name = stub.target.name
    contracts: dict[str, list[str]] = {}
    for call in targets:
        contracts.setdefault(type_str(call.type), []).append(call.stage)
    use = checker.uses.get(name)
    stages = list(dict.fromkeys(c.stage for c in targets))
    by_stage = f"`stub stage S returns …` (S: {', '.join(f'`{x}`' for x in stages)})"
    if use is not None and use.kind == "team":
        return (
            f"a stub of the team `{name}` answers every member and the main agent; to stub one "
            f"stage's agents, use {by_stage}"
        )
    if len(contracts) < 2:
        return None
    each = ", ".join(
        f"`{t}` in stage{'s' if len(st) > 1 else ''} {', '.join(f'`{x}`' for x in dict.fromkeys(st))}"
        for t, st in contracts.items()
    )
    target = use.target if use is not None else name
    return (
        f"`stub agent {name}` answers every call of `{name}`, which expects {each}: stub one "
        f"stage with {by_stage}, or give each contract its own alias "
        f'(`use agent "{target}" as …`)'
    )


def _staged_stub_hint(
    checker: CheckerShared,
    stub: ast.TestStub,
    every: list[AgentCall],
    targets: list[AgentCall],
) -> str | None:
    """The fix for a ``stub agent A`` that does not fit when ``A`` is used with several contracts
    but a ``stub stage`` of the same test answers some of them first: the agent stub answers
    only the other stages' calls, so each stage is stubbed on its own."""
    if stub.kind != "agent" or not targets or len({type_str(c.type) for c in every}) < 2:
        return None
    name = stub.target.name
    kept = {id(c) for c in targets}
    staged = list(dict.fromkeys(c.stage for c in every if id(c) not in kept))
    left = list(dict.fromkeys(c.stage for c in targets))
    wants = ", ".join(dict.fromkeys(f"`{checker.said(c.type)}`" for c in targets))
    stubs = ", ".join(f"`stub stage {x}`" for x in staged)
    return (
        f"{stubs} answer{'s' if len(staged) == 1 else ''} the agents of "
        f"{'that stage' if len(staged) == 1 else 'those stages'} first, so `stub agent {name}` "
        f"answers only its calls in {', '.join(f'`{x}`' for x in left)}, which expect {wants}: "
        f"stub each stage on its own ("
        + ", ".join(f"`stub stage {x} returns …`" for x in left)
        + ")"
    )


def _no_agent_hint(checker: CheckerShared, stage: ast.StageDecl, stages: list[str]) -> str:
    """The fix for ``stub stage S`` on a stage that calls no agent: stub what it does call (its
    tools, a ``let`` step), since a stage stub answers only agents."""
    tools = sorted(
        {
            n.callee.name
            for n in ast.walk(stage.body)
            if isinstance(n, ast.Call)
            and isinstance(n.callee, ast.Name)
            and n.callee.name in checker.tool_decls
        }
    )
    lets = [n.name.name for n in ast.walk(stage.body) if isinstance(n, ast.LetStmt)]
    judge = _judge_hint(stage)
    if judge is not None:
        return judge
    ways = [f"`stub tool {t} returns …`" for t in tools[:2]]
    ways += [f"`stub step {x} returns …`" for x in lets[:1]]
    what = " or ".join(ways) if ways else "the tools it calls (`stub tool NAME returns …`)"
    out = f"`stub stage` answers the agents of a stage; to replace what `{stage.name.name}` does, use {what}"
    if stages:
        out += f" (stages with agents: {', '.join(stages)})"
    return out


def _is_judged(e: Any) -> bool:
    """A ``filter … where judge`` or a ``verify`` with a ``judge``: model calls that are not
    agents."""
    if isinstance(e, ast.FilterExpr):
        return e.judge is not None
    return isinstance(e, ast.VerifyExpr) and any(isinstance(i, ast.VerifyJudge) for i in e.items)


def _judge_hint(stage: ast.StageDecl) -> str | None:
    """The fix for ``stub stage S`` when S's model calls are judges (``filter … where judge``,
    ``verify { judge … }``), which no stub answers: stub the step of the ``let`` that holds
    one, else bind it to a ``let`` first."""
    judged = [n for n in ast.walk(stage.body) if _is_judged(n)]
    if not judged:
        return None
    bound = [
        n.name.name
        for n in ast.walk(stage.body)
        if isinstance(n, ast.LetStmt) and _is_judged(n.value)
    ]
    how = (
        f"stub its step: `stub step {bound[0]} returns …`"
        if bound
        else "bind it to a `let` and stub that step: `let kept = filter … where judge …`, "
        "then `stub step kept returns …`"
    )
    return (
        f"the model calls of stage `{stage.name.name}` are judges, which no `stub stage` or "
        f"`stub agent` answers: to fix a judge's outcome, {how} (an unstubbed judge answers "
        f"yes or no from the test model)"
    )


def _values(stub: ast.TestStub) -> list[ast.Expr]:
    """Every answer of ``stub`` that is a value (not a ``fails "code"``), in call order."""
    if stub.values:
        return [v for v in stub.values if not isinstance(v, ast.StubFails)]
    return [stub.value] if stub.value is not None else []


def _failures(stub: ast.TestStub) -> list[ast.StubFails]:
    """Every ``fails "code"`` among the answers of ``stub``, in call order."""
    return [v for v in stub.values if isinstance(v, ast.StubFails)]


def _agent_code(checker: CheckerShared, stub: ast.TestStub, fails: ast.StubFails) -> None:
    """``stub agent|stage … fails "code"``: ``code`` must be a code an agent call can fail with
    (:func:`~agentflow.compiler.check_errors.agent_error_codes`), else ``unknown-error-code``
    (no such code) or ``stub-mismatch`` (an agent never fails with it)."""
    codes = agent_error_codes()
    if fails.code in codes:
        return
    if fails.code not in ERROR_CODES:
        checker.report(
            D.UNKNOWN_ERROR_CODE,
            f'"{fails.code}" is not a run-time error code',
            fails.code_span,
            hint=did_you_mean(fails.code, codes) or "an agent fails with: " + ", ".join(codes),
        )
        return
    what = "the agents of stage" if stub.kind == "stage" else "the agent"
    checker.report(
        D.STUB_MISMATCH,
        f'this stub does not fit {what} `{stub.target.name}`: an agent never fails with "{fails.code}"',
        fails.code_span,
        hint="an agent fails with: " + ", ".join(codes),
    )


@dataclass(slots=True)
class NamedStep:
    """A ``let NAME = …`` of the flow (``stage``: the stage it is in; ``value``: its expression;
    ``type``: the value's type), or an ``ask`` (``let`` bound or not) when found for ``stub ask``."""

    name: str | None
    stage: str
    value: ast.Expr
    type: Type
    span: Span


def named_steps(stages: list[ast.StageDecl], types: dict[int, Type]) -> list[NamedStep]:
    """Every ``let`` of ``stages`` (checked), in source order."""
    out = []
    for stage in stages:
        for node in ast.walk(stage.body):
            if isinstance(node, ast.LetStmt):
                out.append(
                    NamedStep(
                        node.name.name,
                        stage.name.name,
                        node.value,
                        types.get(id(node.value), ERROR),
                        node.name.span,
                    )
                )
    return out


def ask_targets(stages: list[ast.StageDecl], types: dict[int, Type], name: str) -> list[NamedStep]:
    """The ``ask`` expressions ``stub ask NAME`` answers: the one bound by ``let NAME = ask …``,
    else every ``ask`` inside stage ``NAME``."""
    bound = [
        s for s in named_steps(stages, types) if s.name == name and isinstance(s.value, ast.AskExpr)
    ]
    if bound:
        return bound
    out = []
    for stage in stages:
        if stage.name.name != name:
            continue
        for node in ast.walk(stage.body):
            if isinstance(node, ast.AskExpr):
                out.append(NamedStep(None, name, node, types.get(id(node), ERROR), node.span))
    return out


#: the expressions a ``let`` of its own compiles to one step (``stub step`` can replace)
_STEP_EXPRS = (
    ast.Call,
    ast.CallOptions,
    ast.AgentExpr,
    ast.AskExpr,
    ast.MapExpr,
    ast.FilterExpr,
    ast.ReduceExpr,
    ast.VerifyExpr,
)


def is_step(value: ast.Expr) -> bool:
    """Whether ``let N = value`` compiles to one step of its own, which ``stub step N`` can
    replace (a ``parallel`` block is one when every branch runs: see :func:`effectful`)."""
    return isinstance(value, _STEP_EXPRS) or decides(value)


def _asks_hint(asks: list[str]) -> str:
    """How the asks of a flow are named by ``stub ask`` (``asks``: the ``let`` names and stage
    names that name one)."""
    return (
        f'`stub ask` names a `let` whose value is the `ask` (`let answer = ask "…"`) or a '
        f"stage whose asks it answers; this flow's: {', '.join(f'`{a}`' for a in asks)} "
        f"(`stub ask {asks[0]} returns …`)"
    )


def _nested_ask_hint(checker: CheckerShared, name: str) -> str | None:
    """The hint for ``stub ask NAME`` where ``let NAME = …`` holds an ``ask`` inside a larger
    expression (``let ok = if c then true else ask "…"``): the ``let`` is not the ask's name.
    An ``ask`` in a branch of ``let NAME = parallel { … }`` is stubbed as that branch
    (``stub step NAME.B``); one an ``if`` or ``match`` may not reach cannot move out of it."""
    for step in named_steps(checker.stage_order, checker.types):
        if step.name != name:
            continue
        if not any(isinstance(n, ast.AskExpr) for n in ast.walk(step.value)):
            continue
        stage = checker.all_stages.get(step.stage)
        asks = sum(isinstance(n, ast.AskExpr) for n in ast.walk(stage.body)) if stage else 1
        which = (
            "the stage's only ask"
            if asks == 1
            else f"all {asks} asks of the stage, in the order they are asked: `returns A then B …`"
        )
        by_stage = (
            f"`stub ask {step.stage} returns …` answers the asks of stage `{step.stage}` ({which})"
        )
        if isinstance(step.value, ast.ParallelExpr):
            branch = next(
                b.key
                for b in step.value.branches
                if any(isinstance(n, ast.AskExpr) for n in ast.walk(b.value))
            )
            return (
                f"the `ask` is branch `{branch}` of the `parallel` block `{name}`: write `stub "
                f"step {name}.{branch} returns …` (the branch's value); {by_stage}"
            )
        conditional = next(
            (
                n
                for n in ast.walk(step.value)
                if isinstance(n, ast.CondExpr | ast.MatchExpr)
                and any(isinstance(a, ast.AskExpr) for arm in _arms(n) for a in ast.walk(arm))
            ),
            None,
        )
        word = "if" if isinstance(conditional, ast.CondExpr) else "match"
        moved = (
            f"Moving the ask to a `let` of its own before the `{word}` would change the flow: "
            f"the person would be asked even when the `{word}` does not reach the ask"
            if conditional is not None
            else 'Or bind the ask to a `let` of its own (`let answer = ask "…"`) and stub that'
        )
        return (
            f"write `stub ask {step.stage} returns …`: it answers the asks of stage "
            f"`{step.stage}` ({which}); `{name}` is the `let` the `ask` sits in, not the ask's "
            f"own name (`stub ask` names a `let` whose whole value is the ask, or a stage). "
            f"{moved}"
        )
    return None


def _arms(e: ast.CondExpr | ast.MatchExpr) -> list[ast.Expr]:
    """The values an ``if`` or ``match`` may not reach: its arms."""
    if isinstance(e, ast.CondExpr):
        return [e.then, e.else_]
    return [arm.value for arm in e.arms]


def _parallel_targets(
    checker: CheckerShared, stub: ast.TestStub, targets: list[NamedStep]
) -> list[NamedStep] | None:
    """``stub step r`` / ``stub step r.a`` where ``let r`` may be a ``parallel`` block
    (docs/reference/testing.md "Stubbing a parallel block"): what each stands in for — the
    block, when every branch runs as a step (its value is the step's), or the branch ``a``, when
    it runs as one (its value is the branch's); None once the mistake is reported. ``let r``
    may bind a block in several stages: ``r.a`` stands for the branch ``a`` of each block that
    has one (as ``stub step v`` stands for the ``let v`` of each stage)."""
    if stub.branch is not None:
        return _branch_targets(checker, stub, stub.branch, targets)
    name, out = stub.target.name, []
    several = sum(isinstance(t.value, ast.ParallelExpr) for t in targets) > 1
    for t in targets:
        block = t.value
        if not isinstance(block, ast.ParallelExpr):
            out.append(t)
            continue
        runs = [b.key for b in block.branches if effectful(b.value)]
        if len(runs) == len(block.branches):
            out.append(t)
            continue
        pure = ", ".join(f"`{b.key}`" for b in block.branches if b.key not in runs)
        where = f" in stage `{t.stage}`" if several else ""
        _unknown_target(
            checker,
            f"`{name}` is not a step of its own: its `parallel` block{where} computes {pure} "
            "from other values",
            stub.target.span,
            notes=[Note(f"`{name}` is computed here", block.span)],
            hint=(
                f"stub the branches that run, one by one: `stub step {name}.{runs[0]} returns …`"
                if runs
                else "stub what it is computed from (a tool, agent or ask)"
            ),
            names_nothing=False,
        )
        return None
    return out


def _branch_targets(
    checker: CheckerShared, stub: ast.TestStub, branch: ast.Ident, targets: list[NamedStep]
) -> list[NamedStep] | None:
    """``stub step r.a``: the branch ``a`` of every ``let r = parallel { … }`` that has one,
    in whichever stage (a ``let r`` that is no block is left out when one is); None once the
    mistake is reported — no block, no block with that branch (each block's branches named,
    with its stage when there are several), or a branch that is computed inline."""
    name, key = stub.target.name, branch.name
    blocks = [t for t in targets if isinstance(t.value, ast.ParallelExpr)]
    if not blocks:
        _unknown_target(
            checker,
            f"`{name}` is not a `parallel` block: `stub step {stub.written}` names a branch of "
            f"`let {name} = parallel {{ … }}`",
            branch.span,
            notes=[Note(f"`{name}` is bound here", targets[0].span)],
            hint=f"stub the step itself: `stub step {name} returns …`",
            names_nothing=False,
        )
        return None
    several = len(blocks) > 1
    found = [
        (t, b)
        for t in blocks
        if isinstance(t.value, ast.ParallelExpr)
        for b in t.value.branches
        if b.key == key
    ]
    if not found:
        keys = [
            (t.stage, [b.key for b in t.value.branches])
            for t in blocks
            if isinstance(t.value, ast.ParallelExpr)
        ]
        every = sorted({k for _, ks in keys for k in ks})
        listed = (
            "; ".join(f"stage `{stage}`: {', '.join(ks)}" for stage, ks in keys)
            if several
            else ", ".join(keys[0][1])
        )
        _unknown_target(
            checker,
            f"no `parallel` block of `{name}` has a branch `{key}`"
            if several
            else f"the `parallel` block of `{name}` has no branch `{key}`",
            branch.span,
            hint=did_you_mean(key, every) or f"{'their' if several else 'its'} branches: {listed}",
            names_nothing=False,
        )
        return None
    out = []
    for t, b in found:
        if not effectful(b.value):
            where = f" (stage `{t.stage}`)" if several else ""
            _unknown_target(
                checker,
                f"branch `{key}` of `{name}`{where} is not a step of its own: its value is "
                "computed from other values",
                branch.span,
                notes=[Note(f"`{key}` is computed here", b.value.span)],
                hint="stub what it is computed from (a tool, agent or ask)",
                names_nothing=False,
            )
            return None
        value_type = checker.types.get(id(b.value), ERROR)
        out.append(NamedStep(name, t.stage, b.value, value_type, b.value.span))
    return out


def _check_named_stub(checker: CheckerShared, stub: ast.TestStub, case: str | None) -> None:
    """``stub ask NAME`` and ``stub step NAME``: the target exists, each value fits its type."""
    name = stub.target.name
    if stub.kind == "ask":
        targets = ask_targets(checker.stage_order, checker.types, name)
        if not targets:
            asks = sorted(
                {
                    s.name
                    for s in named_steps(checker.stage_order, checker.types)
                    if s.name and isinstance(s.value, ast.AskExpr)
                }
                | {
                    st.name.name
                    for st in checker.stage_order
                    if any(isinstance(n, ast.AskExpr) for n in ast.walk(st.body))
                }
            )
            _unknown_target(
                checker,
                f"no `ask` of this flow is bound to `{name}` or inside a stage `{name}`",
                stub.target.span,
                hint=_nested_ask_hint(checker, name)
                or meant_among(stub.target.span, name, asks)
                or (_asks_hint(asks) if asks else "this flow asks nothing"),
            )
            return
    else:
        targets = [s for s in named_steps(checker.stage_order, checker.types) if s.name == name]
        if targets and (stub.branch or any(isinstance(t.value, ast.ParallelExpr) for t in targets)):
            found = _parallel_targets(checker, stub, targets)
            if found is None:
                return
            targets = found
        inline = [
            t
            for t in targets
            if not stub.branch and not (is_step(t.value) or isinstance(t.value, ast.ParallelExpr))
        ]
        if inline:
            _unknown_target(
                checker,
                f"`{name}` is not a step of its own: its value is computed from other values",
                stub.target.span,
                notes=[Note(f"`{name}` is computed here", inline[0].value.span)],
                hint="stub what it is computed from (a tool, agent or ask), or bind that to a "
                "`let` of its own",
                names_nothing=False,
            )
            return
        if not targets:
            lets = sorted(
                {s.name for s in named_steps(checker.stage_order, checker.types) if s.name}
            )
            hint = meant_among(stub.target.span, name, lets)
            stage = checker.all_stages.get(name)
            if hint is None and stage is not None:
                # `stub step real` for a stage: a stage is stubbed through what it calls
                hint = _judge_hint(stage) or (
                    f"`{name}` is a stage, not a `let`: stub what it calls (`stub stage {name}` "
                    f"for its agents, `stub tool T` for its tools), or bind its value to a `let` "
                    f"and stub that step"
                )
            _unknown_target(
                checker,
                f"no `let {name} = …` in this flow's stages",
                stub.target.span,
                hint=hint or (f"steps that can be stubbed: {', '.join(lets)}" if lets else None),
            )
            return
    for value in _values(stub):
        if not _constant(checker, value, "a stub's value", case):
            continue
        for target in targets:
            what = (
                f"the `ask` in stage `{target.stage}`"
                if stub.kind == "ask"
                else (f"`{stub.written}` in stage `{target.stage}`")
            )
            before = len(checker.diags)
            _fits(checker, value, target.type, stub, what, target.span)
            if len(checker.diags) > before:
                break
