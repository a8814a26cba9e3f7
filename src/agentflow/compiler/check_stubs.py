"""The stubs of `test` blocks (docs/reference/testing.md "Items of a test"): each checked against what it
names.

``stub agent A returns V`` must fit the ``expect`` type of every agent call of alias ``A`` (a
team alias: of every member), ``stub stage S returns V`` that of every agent call inside stage
``S``, ``stub tool T returns V`` the tool's declared result type; a ``fails`` of an agent or
stage stub is a code an agent call can fail with (``check_errors.agent_error_codes``).
:func:`agent_calls` lists the flow's agent calls (:class:`AgentCall`); :func:`_check_stub`
checks one stub (``stub step`` / ``stub ask`` through
:mod:`~agentflow.compiler.check_stub_steps`), with the hints for a stub that answers calls of
several contracts or a stage that calls no agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentflow.compiler.check_errors import agent_error_codes
from agentflow.compiler.checker_shared import CheckerShared
from agentflow.compiler.symbols import suggest_alias_name
from agentflow.compiler.types import (
    ERROR,
    Type,
    type_str,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import meant_among
from agentflow.core.spans import Span
from agentflow.core.vocabulary import ERROR_CODES
from agentflow.grammar import ast

__all__ = ["AgentCall", "agent_calls"]

from agentflow.compiler.check_stub_steps import _check_named_stub, _judge_hint, _unknown_target
from agentflow.compiler.check_test_values import _code, _constant, _failures, _fits, _values


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
            _unknown_target(
                checker,
                f"no agent call of this flow uses the alias `{name}`",
                stub.target.span,
                hint=D.meant_at(
                    stub.target.span, name, suggest_alias_name(name, known or checker.uses)
                )
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
            hint=meant_among(fails.code_span, fails.code, codes)
            or "an agent fails with: " + ", ".join(codes),
        )
        return
    what = "the agents of stage" if stub.kind == "stage" else "the agent"
    checker.report(
        D.STUB_MISMATCH,
        f'this stub does not fit {what} `{stub.target.name}`: an agent never fails with "{fails.code}"',
        fails.code_span,
        hint="an agent fails with: " + ", ".join(codes),
    )
