"""The language server on user functions (docs/reference/programs.md "User functions"): hover
on a call or a declaration shows the signature and the `///` doc, definition goes from a call
to its `fn`, the outline lists functions with their signatures, completion offers them (and a
body's parameters)."""

from __future__ import annotations

from agentflow.lsp.analysis import analyze

SOURCE = """\
type Severity = "low" | "medium" | "high"
input { severity: Severity }
/// how urgent a severity is
fn rank(s: Severity) -> int = if s == "high" then 3 else 1
stage s -> int {
  return rank(input.severity)
}
"""


def test_hover_on_a_call_shows_the_signature_and_the_doc():
    a = analyze(SOURCE, "h.flow")
    found = a.hover(SOURCE.index("rank(input") + 1)
    assert found is not None
    text, span = found
    assert "(function) fn rank(s: Severity) -> int" in text
    assert "how urgent a severity is" in text
    assert SOURCE[span.start : span.end] == "rank"


def test_hover_on_the_declaration_and_on_a_parameter():
    a = analyze(SOURCE, "h.flow")
    found = a.hover(SOURCE.index("fn rank") + 4)
    assert found is not None and "fn rank(s: Severity) -> int" in found[0]
    param = a.hover(SOURCE.index('s == "high"'))
    assert param is not None and "(param) s:" in param[0]


def test_definition_goes_from_a_call_to_the_function_and_from_a_use_to_its_parameter():
    a = analyze(SOURCE, "d.flow")
    span = a.definition(SOURCE.index("rank(input") + 2)
    assert span is not None and (span.line, span.column) == (4, 4)
    span = a.definition(SOURCE.index('s == "high"'))
    assert span is not None and (span.line, span.column) == (4, 9)


def test_the_outline_lists_a_function_with_its_signature():
    a = analyze(SOURCE, "o.flow")
    entries = {(s.name, s.kind): s.detail for s in a.symbols()}
    assert entries[("rank", "function")] == "(s: Severity) -> int"


def test_completion_offers_the_functions_and_inside_a_body_its_parameters():
    a = analyze(SOURCE, "c.flow")
    items = {c.label: c for c in a.completions(SOURCE.index("rank(input"))}
    assert items["rank"].kind == "function"
    assert items["rank"].detail == "fn rank(s: Severity) -> int"
    inside = {c.label: c for c in a.completions(SOURCE.index('s == "high"'))}
    assert inside["s"].kind == "variable" and inside["s"].detail == "Severity"


def test_a_parameter_hovers_with_the_alias_its_fn_writes():
    a = analyze(SOURCE, "h.flow")
    param = a.hover(SOURCE.index('s == "high"'))
    assert param is not None and "(param) s: Severity" in param[0]


def test_hover_and_definition_on_a_function_in_an_import(tmp_path):
    (tmp_path / "lib.flow").write_text(
        'type Sev = "low" | "high"\n/// rank doc\nfn rank(s: Sev) -> int = 1\n'
    )
    main = 'import { rank, Sev } from "./lib.flow"\nstage s -> int { return rank("low") }\n'
    a = analyze(main, str(tmp_path / "m.flow"))
    at = main.index("rank") + 1
    found = a.hover(at)
    assert found is not None and "fn rank(s: Sev) -> int" in found[0] and "rank doc" in found[0]
    span = a.definition(at)
    assert (
        span is not None and span.file.endswith("lib.flow") and (span.line, span.column) == (3, 4)
    )
