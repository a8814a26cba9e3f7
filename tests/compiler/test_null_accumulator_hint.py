"""A ``reduce`` accumulator or a ``loop`` state initialised with an unannotated ``null`` is
typed ``null`` (its initial value's type, docs/reference/control.md "reduce"): a body that gives
anything else is one ``type-mismatch`` at the ``null``, whose hint writes the annotation."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source


def _errors(line: str) -> list:
    src = f"input {{ xs: int[] }}\nstage u -> int? {{\n  let m = {line}\n  return m\n}}\n"
    return [d for d in check_source(src, "u.flow").diagnostics if d.severity == "error"]


@pytest.mark.parametrize(
    ("line", "name", "what"),
    [
        ("reduce input.xs as x, acc = null { x }", "acc", "accumulator"),
        ("loop up to 2 as r, st = null { r }", "st", "state"),
        (
            "reduce input.xs as x, acc = null { if acc == null then x else max([acc, x]) ?? x }",
            "acc",
            "accumulator",
        ),
    ],
)
def test_a_null_initial_state_is_one_error_with_the_annotation_to_write(
    line: str, name: str, what: str
):
    errors = _errors(line)
    assert len(errors) == 1, [d.message for d in errors]
    d = errors[0]
    assert d.code == "type-mismatch" and d.span.line == 3
    assert d.message == (
        f"the {what} `{name}` starts as `null`, so its type is `null`, but the body gives `int`"
    )
    assert "comes from its initial value" in d.hint and f"`{name}: int? = null`" in d.hint


@pytest.mark.parametrize(
    "line",
    [
        "reduce input.xs as x, acc: int? = null { x }",
        "loop up to 2 as r, st: int? = null { r }",
        "reduce input.xs as x, acc = null { acc }",
    ],
)
def test_an_annotated_or_null_keeping_state_checks(line: str):
    assert _errors(line) == []
