"""Three slips in a `match` arm's patterns get a hint that says what to write
(docs/reference/expressions.md "match"): a computed value (`input.t => …`, a path: a bare name
already had its hint) — compare in `if … then … else`; patterns separated by a comma
(`1, 2 => …`) — join them with `|`; a range (`1..3 => …`) — `if x in 1..3`. Each stays a
`syntax-error` at the token that stops the arm."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

SLIPS = {
    "a computed value": ('input.t => "x"', ".", "not a computed value"),
    "patterns with a comma": ('1, 2 => "x"', ",", "joined by `|`: `1 | 2 => …`"),
    "texts with a comma": ('"a", "b" => "x"', ",", 'joined by `|`: `"a" | "b" => …`'),
    "a range": ('1..3 => "x"', "..", "for a range, write `if x in 1..3 then … else …`"),
}


@pytest.mark.parametrize("arm, stop, said", SLIPS.values(), ids=SLIPS.keys())
def test_the_slip_is_said_where_the_arm_stops(arm, stop, said):
    subject = "input.t" if arm.startswith('"') else "input.n"
    src = f'input {{ n: int, t: text }}\nstage s -> text {{\n  match {subject} {{ {arm}, _ => "y" }}\n}}\n'
    (d,) = check_source(src, "s.flow").diagnostics
    assert (d.code, d.message) == ("syntax-error", f"expected `=>`, found `{stop}`")
    assert said in d.hint
    assert src[d.span.start : d.span.end] == stop
