"""A tool call's `timeout` / `retry` clauses in the editor (docs/reference/tools.md "Timeout and
retry"): completion right after a call offers both (with an example), not after a plain value;
the call's tool still hovers with its signature when clauses follow it; a clause after a
library function is a diagnostic with its code and hint."""

from __future__ import annotations

from agentflow.lsp.analysis import analyze

SOURCE = """\
extern tool user__fetch(url: text) -> text
input { url: text, words: text[] }
stage s -> text {
  let page = user__fetch(url: input.url) timeout 10s retry { attempts: 2 }
  return page
}
"""


def test_completion_after_a_call_offers_timeout_and_retry():
    a = analyze(SOURCE, "t.flow")
    typed = SOURCE.replace(" timeout 10s retry { attempts: 2 }", " ", 1)
    after_call = {c.label: c.detail for c in a.completions(typed.index("url) ") + 5, typed)}
    assert after_call["timeout"] == "tool call clause: timeout 10s"
    assert after_call["retry"].startswith("tool call clause: retry { attempts: 2")
    plain = typed.replace("user__fetch(url: input.url) ", "input.url ", 1)
    after_value = {c.label for c in a.completions(plain.index("input.url ") + 10, plain)}
    assert "timeout" not in after_value and "retry" not in after_value


def test_the_called_tool_hovers_with_its_signature_when_clauses_follow():
    text, span = analyze(SOURCE, "t.flow").hover(SOURCE.index("fetch(url"))
    assert text == "```flow\n(tool) user__fetch(url: text) -> text\n```"
    assert SOURCE[span.start : span.end] == "user__fetch"


def test_a_clause_after_a_library_function_is_a_diagnostic_with_a_hint():
    bad = SOURCE.replace("return page", 'return join(input.words, " ") timeout 1s')
    found = analyze(bad, "t.flow").result.diagnostics
    diags = [d for d in found if d.code == "clause-without-tool-call"]
    (d,) = diags
    assert bad[d.span.start : d.span.end] == "timeout" and d.hint
