"""Lowering of ``match`` (docs/reference/expressions.md "match", docs/decisions.md "match").

A ``match`` whose arms are pure is template text, ``match subject { p => v, … }``: plans are
parsed by the same grammar and evaluated by ``runtime.expressions``, which evaluates only the
chosen arm. When an arm has an effect (a tool call, an agent, ``ask`` …), the ``match`` becomes
a chain of ``decide`` steps, as ``if … then … else`` does: the first arm is the ``then`` branch
of a step whose ``when`` is the pure ``match subject { p | q => true, _ => false }``, and the
``else`` branch is the ``match`` of the arms left, so only the chosen arm's effects run.
"""

from __future__ import annotations

from typing import Any

from agentflow.compiler.lower_effects import _insert_before, arm_effect
from agentflow.compiler.lower_expressions import (
    Ctx,
    Frag,
    LoweringShared,
    StepRef,
    _NeedsOutline,
    join_frags,
    paren_frag,
)
from agentflow.compiler.lower_written import span_text
from agentflow.grammar import ast
from agentflow.grammar.tokens import MATCH_AFTER
from agentflow.grammar.written import expr_text


def _effectful(e: ast.Expr) -> bool:
    return any(arm_effect(n) for n in ast.walk(e))


def decides(e: ast.Expr) -> bool:
    """Whether ``e`` lowers to a ``decide`` step whose result is its value: an ``if … then …
    else`` or a ``match`` (of more than one arm, the first not ``_``) with an effectful arm.
    ``let v = e`` is then a step of its own, which ``stub step v`` replaces
    (docs/reference/testing.md)."""
    if isinstance(e, ast.CondExpr):
        return _effectful(e.then) or _effectful(e.else_)
    if isinstance(e, ast.MatchExpr):
        return (
            len(e.arms) > 1
            and e.arms[0].wildcard_span is None
            and any(_effectful(arm.value) for arm in e.arms)
        )
    return False


class MatchLowering(LoweringShared):
    """The ``visit_MatchExpr`` rule of the lowering."""

    def visit_MatchExpr(self, e: ast.MatchExpr, ctx: Ctx) -> Frag:
        """``match``: its own text when its arms are pure; else ``decide`` steps, one per arm
        but the last (module docstring)."""
        if not any(_effectful(arm.value) for arm in e.arms):
            subject = self._subject(e, ctx)
            items: list[Frag | str] = ["match ", subject, " { "]
            for i, arm in enumerate(e.arms):
                if i:
                    items.append(", ")
                items.extend([self._patterns(arm, ctx), " => ", self.expr(arm.value, ctx)])
            items.append(" }")
            return join_frags(*items, atomic=True)
        if len(e.arms) == 1 or e.arms[0].wildcard_span is not None:
            if _effectful(e.subject):
                self._subject(e, ctx)  # its effect happens, even with nothing to test
            return self.expr(e.arms[0].value, ctx)  # the one arm left: checked to cover the rest
        if ctx.body:
            raise _NeedsOutline()  # a decide cannot be a body
        subject = self._subject(e, ctx)
        rest_subject = e.subject
        rest_ctx = ctx
        if _effectful(e.subject):
            # the subject's step runs once: the arms left read its result through a name bound
            # to it (passed in the `env` of their sub-plan when their `decide` is outlined)
            name = f"match_subject_{e.span.start}"
            rest_subject = ast.Name(e.subject.span, name)
            self.match_subjects[name] = self._subject_as_written(e)
            rest_ctx = Ctx(ctx.plan, ctx.target, ctx.stage, parent=ctx, bindings={name: subject})
        first = e.arms[0]
        test = join_frags(
            "match ", subject, " { ", self._patterns(first, ctx), " => true, _ => false }",
            atomic=True,
        )  # fmt: skip
        inp: dict[str, Any] = {"when": {"expr": test.render()}}
        inp["then"] = self.body_step(
            [ast.ExprStmt(first.value.span, first.value)], first.value.span, ctx, {}, "match arm"
        )
        written = {"subject": self._subject_as_written(e), "then": self._arm_as_written(first)}
        if len(e.arms) == 2:
            # the last arm: its value, as the effectful path gives a one-arm `match` (checked to
            # cover the rest), not a `match` of a name the compiler made up
            last = e.arms[1]
            inp["else"] = self.body_step(
                [ast.ExprStmt(last.value.span, last.value)], last.value.span, ctx, {}, "match arm"
            )
            written["else"] = self._arm_as_written(last)
        else:
            rest = ast.MatchExpr(
                e.arms[1].span.to(e.span), rest_subject, e.arms[1:], e.keyword_span
            )
            inp["else"] = self.body_step(
                [ast.ExprStmt(rest.span, rest)], rest.span, rest_ctx, {}, "match arms"
            )
        step = self.add_step(ctx, "decide", inp, e.span)
        # the graph's words: `match agent(triage).kind`, its branches `"bug"` … (ir/graph.py)
        step["meta"]["match"] = written
        _insert_before(step, "meta", "select", "{{ result.output }}")
        return Frag([StepRef(step)])

    def _subject_as_written(self, e: ast.MatchExpr) -> str:
        """The subject as the `.flow` writes it, short: its text when it is pure, else with each
        agent written ``agent(alias)`` (no block), as the graph names the agent's step."""
        subject = e.subject
        if isinstance(subject, ast.Name) and subject.name in self.match_subjects:
            return self.match_subjects[subject.name]  # the arms left of a `match`
        text = None
        if not _effectful(subject):
            text = span_text(self.source_text, subject, self.r.module.file)
        if text is None or text.count("(") != text.count(")"):
            # a parenthesized operand's span leaves its `(` out: `(x ?? y).a`
            text = expr_text(subject)
        return " ".join(text.split())

    def _arm_as_written(self, arm: ast.MatchArm) -> str:
        """An arm's patterns as written, ``"a" | "b"`` (``_`` for the wildcard arm)."""
        if arm.wildcard_span is not None:
            return "_"
        file = self.r.module.file
        return " | ".join(
            span_text(self.source_text, p, file) or expr_text(p) for p in arm.patterns
        )

    def _subject(self, e: ast.MatchExpr, ctx: Ctx) -> Frag:
        """The subject as template text, in parentheses when it needs them: an operand of
        unknown strength, or one whose text the template grammar would not read as a
        subject after ``match`` — an inlined object literal (``{w: input.w}.w``, from
        ``let o = { … }`` then ``match o.w``), ``not {…}.ok``, ``-{…}.n`` (``MATCH_AFTER``)."""
        subject = self.expr(e.subject, ctx)
        if subject.prec == 0 and not subject.atomic:
            return paren_frag(subject)
        lead = "".join("E0" if isinstance(p, StepRef) else p for p in subject.parts)
        if MATCH_AFTER.match(f" {lead} {{ ") is None:
            return join_frags("(", subject, ")", atomic=True)
        return subject

    def _patterns(self, arm: ast.MatchArm, ctx: Ctx) -> Frag:
        """An arm's patterns as template text (durations as written: compared by length)."""
        if arm.wildcard_span is not None:
            return Frag.text("_")
        items: list[Frag | str] = []
        for i, p in enumerate(arm.patterns):
            if i:
                items.append(" | ")
            items.append(Frag.text(p.text) if isinstance(p, ast.DurationLit) else self.expr(p, ctx))
        return join_frags(*items, atomic=True)
