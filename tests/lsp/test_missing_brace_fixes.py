"""The quick fix of a deleted `}` in each place docs/diagnostics.md describes: before the line
indentation blames, or after the block's last line before a new declaration or at the end of
the file.  Applied, the file checks clean."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source
from agentflow.lsp.analysis import analyze

CASES = {
    "agent block": (
        'use agent "h" as h\nstage s -> int {\n  return agent(h) {\n    task "x"\n'
        "    expect int\n\n}\n"
    ),
    "if block": ("stage s -> int {\n  let n = 1\n  if n == 1 {\n    let _m = 2\n\n  return n\n}\n"),
    "type body": "type R {\n  a: int\n\nstage s -> R {\n  return { a: 1 }\n}\n",
    "stage body at the end": "stage s -> int {\n  return 1 // one\n",
    # parse errors on the line after the deletion: the message stays, the hint places the `}`
    "agent block before a statement": (
        'use agent "h" as h\nstage s -> int {\n  let a = agent(h) {\n    task "x"\n'
        "    expect int\n\n  let b = a + 1\n  return b\n}\n"
    ),
    "input object before a clause": (
        'use agent "h" as h\nstage s -> int {\n  return agent(h) {\n    task "x"\n'
        "    input {\n      n: 1\n\n    tools none\n    expect int\n  }\n}\n"
    ),
}


@pytest.mark.parametrize("text", CASES.values(), ids=list(CASES))
def test_the_quick_fix_of_a_deleted_brace_makes_the_file_check_clean(text: str) -> None:
    a = analyze(text, "b.flow")
    [d] = a.result.diagnostics
    (fix,) = a.fixes(d)
    assert fix.title.startswith("Insert `}` to close ")
    out = text
    for start, end, new in sorted(fix.edits, reverse=True):
        out = out[:start] + new + out[end:]
    assert check_source(out, "b.flow").diagnostics == [], out
