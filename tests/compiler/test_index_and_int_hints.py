"""Two `type-mismatch` hints: an object indexed like a tuple (`p[0]` of a `zip` pair) points at
its fields; a `number` where an `int` is wanted (`return 1 / 2` into `-> int`) points at the
standard library's `floor`, `round` and `ceil` (docs/diagnostics.md `type-mismatch`)."""

from __future__ import annotations

from agentflow.compiler.api import check_source
from agentflow.core.diagnostics import FALLBACK_HINTS

HEAD = "input { xs: text[], ns: int[], x: number }\n"


def test_indexing_a_zip_pair_hints_at_its_fields():
    src = HEAD + "stage s -> int {\n  let p = zip(input.xs, input.ns)[0]\n  return p[0]\n}\n"
    (diag,) = check_source(src, "s.flow").diagnostics
    assert diag.code == "type-mismatch"
    assert diag.message == "`{ first: text, second: int }` cannot be indexed"
    assert (diag.span.line, diag.span.column) == (4, 10)
    assert diag.hint == "an object is read by field name, not by position: `p.first`, `p.second`"


def test_indexing_a_list_or_text_keeps_no_field_hint():
    (diag,) = check_source(HEAD + "stage s -> int {\n  return 3[0]\n}\n", "s.flow").diagnostics
    assert diag.message == "`3` cannot be indexed"
    assert diag.hint == FALLBACK_HINTS["type-mismatch"]  # the code's usual fix, not a field


def test_a_division_into_an_int_hints_at_floor_round_and_ceil():
    (diag,) = check_source(HEAD + "stage s -> int {\n  return 1 / 2\n}\n", "s.flow").diagnostics
    assert diag.message == "expected `int`, found `number`"
    assert diag.hint == (
        "`/` gives a `number` (`1 / 2` is `0.5`): make it an `int` with `floor(…)` (down), "
        "`round(…)` (to the nearest) or `ceil(…)` (up)"
    )
    # and each of them gives the `int` the hint promises
    for fn in ("floor", "round", "ceil"):
        assert check_source(HEAD + f"stage s -> int {{\n  return {fn}(1 / 2)\n}}\n", "s.flow").ok


def test_any_number_into_an_int_hints_at_the_rounding_functions():
    src = HEAD + "type T { n: int }\nstage s -> T {\n  return { n: input.x }\n}\n"
    (diag,) = check_source(src, "s.flow").diagnostics
    assert diag.message == "expected `int`, found `number`"
    assert diag.hint == (
        "make it an `int` with `floor(…)` (down), `round(…)` (to the nearest) or `ceil(…)` (up)"
    )
