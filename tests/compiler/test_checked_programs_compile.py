"""Programs that used to pass `flowc check` and then fail `flowc compile` with an internal
compiler error: each is now either a diagnostic at check time or a plan that validates."""

from __future__ import annotations

from agentflow.compiler.api import check_source


def test_an_empty_verify_is_an_invalid_value():
    src = "stage s {\n  verify { }\n}\n"
    (diag,) = check_source(src, "s.flow").diagnostics
    assert (diag.code, diag.message) == ("invalid-value", "an empty `verify` checks nothing")
    assert (diag.span.line, diag.span.column) == (2, 3)
    assert diag.hint == 'give it `check COND else "message"` and/or `judge "…"` items'
