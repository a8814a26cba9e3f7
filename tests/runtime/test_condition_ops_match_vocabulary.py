"""The condition operators are defined once (``core.vocabulary.CONDITION_OPS``,
docs/spec/PLAN_IR.md §4): the plan validator accepts exactly those, and the evaluator runs every one
of them."""

from __future__ import annotations

import re

import pytest

from agentflow.core.vocabulary import CONDITION_OPS, UNARY_CONDITION_OPS
from agentflow.runtime.expressions import ExprError, evaluate_condition


@pytest.mark.parametrize("op", sorted(CONDITION_OPS))
def test_the_evaluator_runs_every_condition_operator(op):
    cond = {"value": "abc", "op": op}
    if op not in UNARY_CONDITION_OPS:
        cond["to"] = ["abc"] if op in ("in", "not_in") else "abc"
    assert isinstance(evaluate_condition(cond, {}), bool)


def test_the_evaluator_names_the_vocabulary_operators_for_an_unknown_one():
    with pytest.raises(ExprError) as info:
        evaluate_condition({"value": 1, "op": "between", "to": 2}, {})
    listed = re.search(r"\(one of (.*)\)", str(info.value)).group(1).split(", ")
    assert set(listed) == CONDITION_OPS
