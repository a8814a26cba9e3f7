"""`<`, `<=`, `>`, `>=` with an optional operand (`input.n > 1`, `n: int?`) is a
`type-mismatch` whose hint says the operand may be `null` and gives the default to write, as
`+` does (docs/reference/expressions.md "Operators"); two values that never order keep the
general hint."""

from __future__ import annotations

from agentflow.compiler.api import check_source


def _only(src: str):
    (d,) = check_source(src, "s.flow").diagnostics
    return d


def test_an_optional_operand_of_an_ordering_gets_a_default_to_write():
    d = _only("input { n: int? }\nstage s -> bool { input.n > 1 }\n")
    assert d.message == "`>` cannot order `int?` and `int`"
    assert (
        d.hint
        == "`input.n` may be `null` (`int?`): give a default with `??`, e.g. `(input.n ?? 0)`"
    )
    d = _only('input { t: text? }\nstage s -> bool { "a" <= input.t }\n')
    assert d.hint.startswith("`input.t` may be `null` (`text?`)") and '(input.t ?? "")' in d.hint


def test_values_that_never_order_keep_the_general_hint():
    d = _only('input { n: int }\nstage s -> bool { input.n > "a" }\n')
    assert d.hint == "comparisons need two numbers, two texts or two durations"
