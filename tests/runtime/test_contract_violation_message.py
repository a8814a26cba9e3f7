"""The message of an agent answer that breaks its output contract counts the other violations as
violations: after an enum's allowed values, a bare "(and 2 more)" read as two more values."""

from __future__ import annotations

from agentflow.runtime.agent import first_problem
from agentflow.runtime.extract import validate

SCHEMA = {
    "type": "object",
    "properties": {
        "kind": {"enum": ["bug", "feature", "question"]},
        "priority": {"type": "integer"},
        "title": {"type": "string"},
    },
    "required": ["kind", "priority", "title"],
}


def test_the_first_violation_lists_every_allowed_value_and_counts_the_rest_as_violations():
    problems = validate(SCHEMA, {"kind": "bgu", "priority": "high", "title": 3})
    assert len(problems) == 3
    message = first_problem(problems)
    assert message == (
        '$.kind: "bgu" is not one of the allowed values: "bug", "feature", "question" '
        "(and 2 more violations)"
    )


def test_one_other_violation_is_singular_and_a_lone_one_has_no_count():
    assert first_problem(["$.a: x", "$.b: y"]) == "$.a: x (and 1 more violation)"
    assert first_problem(["$.a: x"]) == "$.a: x"
