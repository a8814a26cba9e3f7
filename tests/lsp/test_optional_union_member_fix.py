"""The quick fix of `optional-union-member` (docs/diagnostics.md): the union written whole and
optional, as the hint says; applied, the file checks clean."""

from __future__ import annotations

from agentflow.compiler.api import check_source
from agentflow.lsp.analysis import analyze


def test_the_quick_fix_writes_the_whole_union_optional_and_the_file_checks_clean():
    text = 'input {\n  priority: "p1" | "p2" | "p3"?\n}\nstage s -> text { return "x" }\n'
    a = analyze(text, "q.flow")
    [d] = a.result.diagnostics
    (fix,) = a.fixes(d)
    assert (fix.title, fix.preferred) == ('Write `("p1" | "p2" | "p3")?`', True)
    [(start, end, new)] = fix.edits
    fixed = text[:start] + new + text[end:]
    assert 'priority: ("p1" | "p2" | "p3")?\n' in fixed
    assert check_source(fixed, "q.flow").diagnostics == []
