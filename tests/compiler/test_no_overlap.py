"""`no-overlap`: a comparison that can never be true (TypeScript's "no overlap") — `==`/`in`
always false, `!=`/`not in` always true — for literal unions and for disjoint types, in `let`s,
`filter` and `if` conditions; the hint lists the values that can occur."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source
from agentflow.compiler.types import INT, NULL, LiteralType, OptionalType, UnionType, overlaps

HEAD = """\
type Item { kind: "bug" | "debt" | "doc", n: 1 | 2 | 3 }
type A { k: "a", n: int }
type B { k: "b", n: int }
input { items: Item[], m: Item, n: int, a: A, b: B, t: text, o: int? }
"""


def _diags(expr: str):
    return check_source(HEAD + f"stage s -> bool {{\n  return {expr}\n}}\n", "s.flow").diagnostics


@pytest.mark.parametrize(
    "expr, message, hint",
    [
        (
            'input.m.kind == "bugs"',
            'this comparison is always false: `"bug" | "debt" | "doc"` and `"bugs"` have no '
            "value in common",
            'did you mean "bug"? (`input.m.kind` can be "bug", "debt" or "doc")',
        ),
        (
            '"feature" != input.m.kind',
            'this comparison is always true: `"feature"` and `"bug" | "debt" | "doc"` have no '
            "value in common",
            '`input.m.kind` can be "bug", "debt" or "doc"',
        ),
        (
            "input.m.n == 4",
            "this comparison is always false: `1 | 2 | 3` and `4` have no value in common",
            "`input.m.n` can be 1, 2 or 3",
        ),
        (
            "input.n == 2.5",
            "this comparison is always false: `int` and `2.5` have no value in common",
            "compare with a value the other side can have, or remove the comparison",
        ),
        (
            '"feature" in input.items[*].kind',
            'this `in` test is always false: the array\'s elements are `"bug" | "debt" | "doc"`, '
            'never `"feature"`',
            'the elements can be "bug", "debt" or "doc"',
        ),
        (
            'input.m.kind not in ["x", "y"]',
            'this `not in` test is always true: the array\'s elements are `"x" | "y"`, never '
            '`"bug" | "debt" | "doc"`',
            '`input.m.kind` can be "bug", "debt" or "doc"',
        ),
        (
            "input.n == null",
            "this comparison is always false: `int` and `null` have no value in common",
            "`input.n` is never null: its type is `int`, not `int?`",
        ),
        (
            "input.a == input.b",
            "this comparison is always false: `A` and `B` have no value in common",
            'field `k` is `"a"` on one side and `"b"` on the other',
        ),
    ],
)
def test_a_comparison_that_can_never_be_true_is_no_overlap(expr, message, hint):
    (diag,) = _diags(expr)
    assert (diag.code, diag.message, diag.hint) == ("no-overlap", message, hint)
    assert (diag.span.line, diag.span.column) == (6, 10)


def test_filter_and_if_conditions_are_checked():
    src = HEAD + (
        "stage s -> Item[] {\n"
        '  if input.m.kind == "dept" { fail "no" }\n'
        '  filter input.items as x where x.kind == "bugs" or x.n == 0\n'
        "}\n"
    )
    got = [(d.code, d.span.line, d.span.column) for d in check_source(src, "s.flow").diagnostics]
    assert got == [("no-overlap", 6, 6), ("no-overlap", 7, 33), ("no-overlap", 7, 53)]


@pytest.mark.parametrize(
    "expr",
    [
        'input.m.kind == "bug"',
        "input.m.kind == input.t",
        'input.m.kind in ["bug", "x"]',
        "input.m.n == 2.0",
        "input.o == null",
        "input.n == input.m.n",
        "input.a == input.a",
        "[1] == []",
        'input.t != "x"',
    ],
)
def test_comparisons_that_can_be_true_pass(expr):
    assert _diags(expr) == []


def test_values_of_different_kinds_stay_a_type_mismatch():
    (diag,) = _diags('input.n == "3"')
    assert (diag.code, diag.message) == ("type-mismatch", "cannot compare `int` with `text`")


def test_overlap_of_types():
    ab = UnionType((LiteralType("a"), LiteralType("b")))
    assert overlaps(ab, LiteralType("b")) and not overlaps(ab, LiteralType("c"))
    assert overlaps(OptionalType(INT), NULL) and not overlaps(INT, NULL)
    assert overlaps(INT, LiteralType(2.0)) and not overlaps(INT, LiteralType(2.5))
