"""What the checker lets a program compute with durations is what the run computes right: a
duration is its text at run time, so ordering two durations (`<` compared the texts: `90s < 5m`
was false) and `-` of a computed one (it failed every run with `validation`) are type
mismatches; `+`, and `-` of written durations (folded by the compiler), stay
(docs/reference/lexical.md "Durations")."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

HEAD = "input { w: duration }\n"


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_ordering_two_durations_is_a_type_mismatch(op):
    (diag,) = check_source(
        HEAD + f"stage s -> bool {{\n  return input.w {op} 5m\n}}\n", "d.flow"
    ).diagnostics
    assert (diag.code, diag.message) == ("type-mismatch", f"`{op}` cannot order two durations")
    assert diag.hint is not None and "as an `int`" in diag.hint


def test_subtracting_from_a_computed_duration_is_a_type_mismatch():
    src = HEAD + "stage s -> int {\n  sleep 1m - input.w\n  return 1\n}\n"
    (diag,) = check_source(src, "d.flow").diagnostics
    assert diag.message == "`-` needs numbers, found `duration` and `duration`"
    src = HEAD + "stage s -> int {\n  sleep -input.w\n  return 1\n}\n"
    assert [d.code for d in check_source(src, "d.flow").diagnostics] == ["type-mismatch"]


def test_written_durations_fold_and_a_computed_one_adds():
    src = (
        HEAD
        + "stage s -> int {\n  let t = 2h - 1500ms\n  sleep t - 1s\n"
        + "  sleep input.w + 30s\n  return 1\n}\n"
    )
    assert check_source(src, "d.flow").ok
