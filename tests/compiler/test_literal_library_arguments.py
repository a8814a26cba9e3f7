"""A string literal a library function would refuse on every run is refused when the flow is
checked (``invalid-argument``, docs/reference/functions.md): a bad regular expression of
``match``/``matches``/``find_all``, a ``fill`` that is not one character, an empty ``old`` of
``replace``; a valid literal or a computed argument checks."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source


def _errors(expr: str) -> list:
    src = f"input {{ s: text }}\nstage u -> json {{\n  return {expr}\n}}\n"
    return [d for d in check_source(src, "u.flow").diagnostics if d.severity == "error"]


@pytest.mark.parametrize(
    ("expr", "literal", "message"),
    [
        ('matches(input.s, "(")', '"("', 'invalid regular expression "(": missing )'),
        ('match(input.s, "a[")', '"a["', 'invalid regular expression "a[":'),
        ('find_all(input.s, "*x")', '"*x"', 'invalid regular expression "*x":'),
        ('pad_start(input.s, 3, "ab")', '"ab"', '`fill` must be one character, got "ab"'),
        ('pad_end(input.s, 3, "")', '""', '`fill` must be one character, got ""'),
        ('replace(input.s, "", "x")', '""', "`old` must not be empty"),
    ],
)
def test_a_literal_the_function_always_refuses_is_an_error_at_the_literal(
    expr: str, literal: str, message: str
):
    errors = _errors(expr)
    assert len(errors) == 1, [d.message for d in errors]
    d = errors[0]
    assert d.code == "invalid-argument" and d.message.startswith(message)
    assert d.span.line == 3 and d.span.end_column - d.span.column == len(literal)
    assert d.hint and d.notes


@pytest.mark.parametrize(
    "expr",
    [
        'matches(input.s, "\\\\(")',
        'find_all(input.s, "[a-z]+")',
        'pad_start(input.s, 3, "0")',
        "pad_end(input.s, 3)",
        'replace(input.s, "a", "")',
        "matches(input.s, input.s)",
        "pad_start(input.s, 3, input.s)",
    ],
)
def test_a_valid_or_computed_argument_checks(expr: str):
    assert _errors(expr) == []
