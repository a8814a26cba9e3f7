"""A string literal where a union of literals is wanted, close to one of them, gets `did you
mean "high"?` with the respelling as its quick fix, wherever the literal goes — an annotated
`let`, a list element, an object field, an arm of a conditional, a user function's argument
(docs/reference/types.md "Assignability") — as `==` and `match` patterns already did. A user
function's argument names the literal it was given, not `text`."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

HEAD = 'type Sev = "low" | "medium" | "high"\nfn rank(s: Sev) -> int = if s == "low" then 1 else 2\ninput { n: int }\n'

SITES = {
    "an annotated let": ('stage s -> Sev {\n  let v: Sev = "hgh"\n  return v\n}\n', "hgh", "high"),
    "a list element": ('stage s -> Sev[] { ["low", "hgh"] }\n', "hgh", "high"),
    "an object field": ('stage s -> { v: Sev } { { v: "meduim" } }\n', "meduim", "medium"),
    "an arm of a conditional": (
        'stage s -> Sev { if input.n > 5 then "high" else "lo" }\n',
        "lo",
        "low",
    ),
    "a user function's argument": ('stage s -> int { rank("hihg") }\n', "hihg", "high"),
}


@pytest.mark.parametrize("body, written, meant", SITES.values(), ids=SITES.keys())
def test_a_misspelt_literal_gets_the_literal_meant_and_its_fix(body, written, meant):
    src = HEAD + body
    (d,) = check_source(src, "s.flow").diagnostics
    assert d.code == "type-mismatch"
    assert f'found `"{written}"`' in d.message
    assert d.hint == f'did you mean "{meant}"?'
    assert d.fix is not None
    start, end = d.fix.span.start, d.fix.span.end
    assert src[:start] + d.fix.text + src[end:] == src.replace(f'"{written}"', f'"{meant}"')


def test_a_literal_close_to_none_keeps_the_usual_hint():
    (d,) = check_source(HEAD + 'stage s -> Sev { "purple" }\n', "s.flow").diagnostics
    assert d.code == "type-mismatch" and "did you mean" not in (d.hint or "")
