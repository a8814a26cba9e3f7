"""`max`, `sum`, `sort` … of a list whose elements may be `null` (`map items as i { i.score }`
with `score: int?`) is a `type-mismatch` whose hint gives the two ways out — a default per
element, or a `filter` that leaves the nulls out (which narrows: docs/reference/types.md
"Narrowing") — and each of them checks clean (docs/reference/functions.md)."""

from __future__ import annotations

from agentflow.compiler.api import check_source

HEAD = "type I { score: int? }\ninput { items: I[] }\n"
HINT = (
    "the elements may be `null` (`int?`): give each a default (`map xs as x { x ?? 0 }`) or "
    "leave the nulls out (`filter xs as x where x != null`)"
)


def test_the_hint_gives_a_default_or_a_filter():
    src = HEAD + "stage s -> int? { max(map input.items as i { i.score }) }\n"
    (d,) = check_source(src, "s.flow").diagnostics
    assert d.message == "argument of `max`: `T` must be `number | text`, found `int?`"
    assert d.hint == HINT


def test_both_ways_out_check_clean():
    defaulted = HEAD + "stage s -> int? { max(map input.items as i { i.score ?? 0 }) }\n"
    filtered = (
        HEAD + "stage s -> int? {\n  let scores = map input.items as i { i.score }\n"
        "  return max(filter scores as x where x != null)\n}\n"
    )
    assert check_source(defaulted, "s.flow").diagnostics == []
    assert check_source(filtered, "s.flow").diagnostics == []
