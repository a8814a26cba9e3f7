"""An argument of a library function that makes a type parameter something else than an earlier
argument did — `index_of(input.xs, "a")` with `xs: int[]`, `overlap(xs, ts)` — is a
`type-mismatch` that says what the parameter is and what this argument gives:
"argument of `index_of`: `T` is `int` here, found `text`" (docs/reference/functions.md)."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

CALLS = {
    "index_of": ('index_of(input.xs, "a")', "int", "text"),
    "overlap": ("overlap(input.xs, input.ts)", "int", "text"),
}


@pytest.mark.parametrize("call, bound, found", CALLS.values(), ids=CALLS.keys())
def test_the_conflict_names_the_parameter_and_what_was_found(call, bound, found):
    src = f"input {{ xs: int[], ts: text[] }}\nstage s -> json {{ {call} }}\n"
    (d,) = check_source(src, "s.flow").diagnostics
    name = call.split("(")[0]
    assert d.message == f"argument of `{name}`: `T` is `{bound}` here, found `{found}`"
