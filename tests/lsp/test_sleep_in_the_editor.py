"""`sleep` in the editor (docs/reference/statements.md "sleep"): completion offers it where a
statement starts, and hover on the keyword says what it waits and how it waits in each kind of
run."""

from __future__ import annotations

from agentflow.lsp.analysis import analyze


def test_the_editor_offers_sleep_and_hovers_it():
    src = "input { wait: duration }\nstage s -> int {\n  sleep input.wait\n  return 1\n}\n"
    a = analyze(src, "e.flow")
    text, span = a.hover(src.index("sleep") + 2)
    assert "sleep input.wait" in text and "sleeps only what is left" in text
    assert (span.line, span.column, span.end_column) == (3, 3, 8)
    field, _ = a.hover(src.index("input.wait") + 7)  # the field, not the sleep
    assert "(field) wait: duration" in field
    labels = {c.label for c in a.completions(src.index("return"))}
    assert "sleep" in labels
