"""`xs.length`, `s.size`, `xs.Length` — another language's length read as a field of a list or a
text — is an `unknown-field` whose hint says the length is `.count` and whose quick
fix writes it (docs/reference/expressions.md "Fields, .count, indexing, projections")."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source


@pytest.mark.parametrize("read", ["input.s.length", "input.xs.size", "input.xs.Length"])
def test_the_fix_writes_count(read):
    src = f"input {{ s: text, xs: int[], m: map<int> }}\nstage a -> int {{ {read} }}\n"
    (d,) = check_source(src, "s.flow").diagnostics
    assert d.hint == "the length of an array, a text or a map is `.count` (`xs.count`)"
    assert d.fix is not None
    fixed = src[: d.fix.span.start] + d.fix.text + src[d.fix.span.end :]
    assert check_source(fixed, "s.flow").diagnostics == []
