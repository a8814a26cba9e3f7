"""Checking `eval` blocks (docs/reference/evals.md), after the stages and the tests.

An eval block names datasets (``dataset "cases.jsonl"``), optionally the type of their cases'
``expected`` (``expect T``; default: the flow's output type) and its scorers:

- ``score NAME = E [threshold N]``: ``E`` is a ``bool`` (a case passes when it is true) or a
  ``number`` (a case's score, 0..1; it passes at ``threshold`` or above, default 0.5), over
  ``input``, ``output``, ``expected``, the stages, ``usage`` and ``case``;
- ``judge NAME "rubric" [threshold N]``: the rubric (a ``text`` over the same names) is put to
  the judge model, whose typed verdict ``{ score, reason }`` scores the case.

What is reported, with the codes every `.flow` uses: an eval named twice and a scorer named twice
in a block (``duplicate-definition``), a second ``expect`` (``duplicate-definition``), a score
that is neither ``bool`` nor ``number`` or a rubric that is not ``text`` (``type-mismatch``), a
threshold outside 0..1 or on a ``bool`` score, a block without scorers (``invalid-value``). The datasets themselves are read and checked by the api
(:mod:`agentflow.evals.dataset`), which knows the files. Layer: compiler.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentflow.compiler.check_tests import _var
from agentflow.compiler.checker_shared import CheckerShared
from agentflow.compiler.types import (
    BOOL,
    INT,
    JSON,
    NUMBER,
    TEXT,
    ErrorType,
    Field,
    ListType,
    ObjectType,
    Type,
    assignable,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note
from agentflow.grammar import ast

__all__ = ["CheckedEval", "EVAL_NAMES", "check_evals", "usage_type"]

#: the names a scorer sees besides ``input`` and the stages
EVAL_NAMES = ("output", "expected", "usage", "case")
#: the default threshold of a number score and of a judge's score
DEFAULT_THRESHOLD = 0.5


def usage_type() -> ObjectType:
    """The type of ``usage`` in a scorer: the case run's model use (``cost`` in US dollars, 0
    when no price is known; ``duration_ms`` the run's wall time)."""
    return ObjectType(
        {
            "inferences": Field(INT),
            "input_tokens": Field(INT),
            "output_tokens": Field(INT),
            "tokens": Field(INT),
            "cost": Field(NUMBER),
            "duration_ms": Field(INT),
        }
    )


def case_type() -> ObjectType:
    """The type of ``case`` in a scorer: the case's ``name``, ``tags`` and ``metadata``."""
    return ObjectType({"name": Field(TEXT), "tags": Field(ListType(TEXT)), "metadata": Field(JSON)})


@dataclass(slots=True)
class CheckedEval:
    """One checked eval block: its node, the type of ``expected``, and for each scorer whether
    it is a ``bool`` score (else a number or a judge), whether it reads ``expected`` (then it
    scores only the cases that give one), and its threshold."""

    node: ast.EvalDecl
    expected_type: Type
    kinds: dict[str, str] = field(default_factory=dict)  # scorer → bool, number or judge
    reads_expected: dict[str, bool] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)


def check_evals(
    checker: CheckerShared, evals: list[ast.EvalDecl], output_type: Type
) -> list[CheckedEval]:
    """Check every eval block (see the module docstring); reports through ``checker``."""
    out: list[CheckedEval] = []
    seen: dict[str, ast.EvalDecl] = {}
    for block in evals:
        if block.name in seen:
            checker.report(
                D.DUPLICATE_DEFINITION,
                f'eval "{block.name}" is defined twice',
                block.name_span,
                notes=[Note("first defined here", seen[block.name].name_span)],
            )
        else:
            seen[block.name] = block
        out.append(_check_eval(checker, block, output_type))
    return out


def _check_eval(checker: CheckerShared, block: ast.EvalDecl, output_type: Type) -> CheckedEval:
    expects = block.expects
    for extra in expects[1:]:
        checker.report(
            D.DUPLICATE_DEFINITION,
            "this eval gives the type of `expected` twice",
            extra.span,
            notes=[Note("first given here", expects[0].span)],
        )
    expected = checker.resolve_type(expects[0].type) if expects else output_type
    checked = CheckedEval(block, expected)
    if not block.scorers:
        checker.report(
            D.INVALID_VALUE,
            f'eval "{block.name}" has no scorer',
            block.name_span,
            hint="add one: `score exact = output == expected`",
        )
    names = {
        "output": output_type,
        "expected": expected,
        "usage": usage_type(),
        "case": case_type(),
    }
    scope = {name: _var(checker, name, t, block.span) for name, t in names.items()}
    first: dict[str, ast.EvalScorer] = {}
    for scorer in block.scorers:
        name = scorer.name.name
        if name in first:
            checker.report(
                D.DUPLICATE_DEFINITION,
                f"the scorer `{name}` is defined twice in this eval",
                scorer.name.span,
                notes=[Note("first defined here", first[name].name.span)],
            )
            continue
        first[name] = scorer
        checker.scopes.append(dict(scope))
        try:
            kind = _check_scorer(checker, scorer)
        finally:
            checker.scopes.pop()
        checked.kinds[name] = kind
        checked.reads_expected[name] = any(
            isinstance(n, ast.Name) and n.name == "expected" for n in ast.walk(scorer.expr)
        )
        checked.thresholds[name] = (
            scorer.threshold
            if scorer.threshold is not None
            else (1.0 if kind == "bool" else DEFAULT_THRESHOLD)
        )
    return checked


def _check_scorer(checker: CheckerShared, scorer: ast.EvalScorer) -> str:
    """Type one scorer; its kind: ``bool``, ``number`` or ``judge``."""
    if scorer.kind == "judge":
        checker.expr(scorer.expr, TEXT)
        kind = "judge"
    else:
        t = checker.infer(scorer.expr)
        if isinstance(t, ErrorType):
            kind = "number"
        elif assignable(t, BOOL, checker.env):
            kind = "bool"
        elif assignable(t, NUMBER, checker.env):
            kind = "number"
        else:
            checker.report(
                D.TYPE_MISMATCH,
                f"the score `{scorer.name.name}` is `{checker.said(t)}`; a score is `bool` (pass or "
                "fail) or `number` (0 to 1)",
                scorer.expr.span,
                hint="compare it: `score exact = output == expected`",
            )
            return "number"
    if scorer.threshold is not None and scorer.threshold_span is not None:
        if kind == "bool":
            checker.report(
                D.INVALID_VALUE,
                f"the score `{scorer.name.name}` is `bool`: a case passes when it is true, so "
                "it takes no threshold",
                scorer.threshold_span,
                hint="remove the threshold, or make the score a `number` from 0 to 1",
            )
        elif not 0 <= scorer.threshold <= 1:
            checker.report(
                D.INVALID_VALUE,
                f"a threshold is a score from 0 to 1 (or 0% to 100%), found {scorer.threshold:g}",
                scorer.threshold_span,
            )
    return kind
