"""``stub step NAME`` and ``stub ask NAME`` in `test` blocks (docs/reference/testing.md
"Answers in turn, asks and steps"): what they name and whether their values fit.

:func:`named_steps` lists the ``let`` steps of the checked stages and :func:`ask_targets` the
``ask`` expressions a ``stub ask`` answers; :func:`is_step` says whether a ``let`` compiles to a
step of its own (the language server's completion reads these too). ``stub step r`` /
``stub step r.a`` of a ``parallel`` block stands for the block or one branch
(:func:`_parallel_targets`). A stub naming nothing that can be stubbed is an
``unknown-stub-target`` (:func:`_unknown_target`, shared with the agent stubs), with the hint
that says what to stub instead (a judge's step, the stage of a nested ask).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentflow.compiler.checker_shared import CheckerShared
from agentflow.compiler.lower_match import decides
from agentflow.compiler.lower_parallel import effectful
from agentflow.compiler.types import (
    ERROR,
    Type,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note, meant_among
from agentflow.core.spans import Span
from agentflow.grammar import ast

__all__ = ["NamedStep", "ask_targets", "is_step", "named_steps"]

from agentflow.compiler.check_test_values import _constant, _fits, _values


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
            hint=meant_among(branch.span, key, every)
            or f"{'their' if several else 'its'} branches: {listed}",
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
