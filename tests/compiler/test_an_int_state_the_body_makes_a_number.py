"""An unannotated `reduce` accumulator or `loop` state whose initial value is an `int`
(`acc = 0`) while its body gives a `number` (`acc + 0.5`) is one `type-mismatch` at the
initial value, whose hint is the annotation that fixes it (`acc: number = 0`) — not one in the
body whose hint says to round the body's value to an `int` (docs/reference/control.md "loop").
The annotated accumulator checks clean; a body wrong with any accumulator keeps its own error."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

HEAD = "input { xs: int[] }\nstage s -> number {\n"

FOLDS = {
    "reduce": "let t = reduce input.xs as x, acc = 0 { acc + 0.5 }\n  return t\n",
    "loop": "let t = loop up to 3 as r, acc = 0 { acc + 0.5 }\n  return t\n",
    "loop with until": "let t = loop up to 3 as r, acc = 0 { acc + 0.5 } until acc > 1 else acc\n"
    "  return t\n",
}


@pytest.mark.parametrize("body", FOLDS.values(), ids=FOLDS.keys())
def test_the_mismatch_is_at_the_initial_value_with_the_annotation_as_hint(body):
    src = HEAD + "  " + body + "}\n"
    (d,) = check_source(src, "s.flow").diagnostics
    assert d.code == "type-mismatch"
    assert d.message.endswith(
        "`acc` starts as `0`, an `int`, so its type is `int`, but the body gives a `number`"
    )
    assert src[d.span.start : d.span.end] == "0" and d.span.line == 3
    assert d.hint.endswith("write `acc: number = 0`")


@pytest.mark.parametrize("body", FOLDS.values(), ids=FOLDS.keys())
def test_the_annotated_state_checks_clean(body):
    src = HEAD + "  " + body.replace("acc = 0", "acc: number = 0") + "}\n"
    assert check_source(src, "s.flow").diagnostics == []


def test_a_body_wrong_with_a_number_too_keeps_its_own_error():
    src = HEAD + '  let t = reduce input.xs as x, acc = 0 { acc + "a" }\n  return t\n}\n'
    (d,) = check_source(src, "s.flow").diagnostics
    assert d.message == "`+` cannot combine `int` and `text`"


def test_a_body_with_another_error_keeps_its_errors():
    # `break` is an unknown name whatever the state's type: the body's errors stand, as written
    src = (
        "stage s -> int {\n  let x = loop up to 5 as r, n = 0 {\n    if n > 2 { break }\n"
        "    n + 0.5\n  } until n > 3 else n\n  return 1\n}\n"
    )
    codes = [d.code for d in check_source(src, "t.flow").diagnostics]
    assert "unknown-name" in codes and "the state" not in str(codes)
