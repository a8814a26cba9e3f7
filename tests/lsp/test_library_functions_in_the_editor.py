"""The language server on the standard library (docs/reference/functions.md): completion offers
every library function with its signature, hover on a call's name shows the signature, summary
and example."""

from __future__ import annotations

from agentflow.core.functions import FUNCTIONS
from agentflow.lsp.analysis import analyze

SOURCE = """\
input { names: text[] }
stage s -> text {
  let shown = join(input.names, ", ")
  return if shown == "" then "nobody" else lower(shown)
}
"""


def test_completion_offers_every_library_function_with_its_signature():
    a = analyze(SOURCE, "c.flow")
    offset = SOURCE.index("join")
    items = {c.label: c for c in a.completions(offset)}
    for name, spec in FUNCTIONS.items():
        assert items[name].kind == "function"
        assert items[name].detail == spec.signature


def test_hover_on_a_library_call_shows_its_signature_and_example():
    a = analyze(SOURCE, "h.flow")
    found = a.hover(SOURCE.index("join") + 1)
    assert found is not None
    text, span = found
    assert "(function) join<T>(xs: T[], sep: text) -> text" in text
    assert 'join(["a", "b", "c"], ", ")' in text and '"a, b, c"' in text
    assert SOURCE[span.start : span.end] == "join"


def test_hover_inside_a_conditional_types_the_arms_join():
    a = analyze(SOURCE, "h.flow")
    found = a.hover(SOURCE.index("lower") + 2)
    assert found is not None and "lower(s: text) -> text" in found[0]


def _fixed(source: str) -> str:
    a = analyze(source, "q.flow")
    (d,) = [d for d in a.result.diagnostics if d.code == "unknown-function"]
    (fix,) = a.fixes(d)
    start, end, new = fix.edits[0]
    return source[:start] + new + source[end:]


def test_a_quick_fix_replaces_a_name_of_another_language_by_the_library_function():
    source = "input { s: text, n: number }\nstage s -> text {\n  return strip(input.s)\n}\n"
    assert "return trim(input.s)" in _fixed(source)
    source = "input { n: number }\nstage s -> int {\n  return Math.round(input.n)\n}\n"
    assert "return round(input.n)" in _fixed(source)


def test_the_vscode_grammar_highlights_every_library_function():
    import json
    import re

    from support.paths import REPO

    grammar = json.loads(
        (REPO / "editors" / "vscode" / "syntaxes" / "flow.tmLanguage.json").read_text()
    )
    (rule,) = [
        p
        for p in grammar["repository"]["keywords"]["patterns"]
        if p["name"] == "support.function.builtin.flow"
    ]
    listed = set(re.search(r"\\b\((.*?)\)", rule["match"]).group(1).split("|"))
    assert listed == set(FUNCTIONS)
    assert re.search(rule["match"], "join(xs") and not re.search(rule["match"], "x.join(")
