"""Quick fixes for the hints about other languages' habits whose fix is one exact edit
(docs/editors.md): `&&` → `and`, `||` → `or`, `!x` → `not x`, `===` → `==`, `a?.b` → `a.b`,
`} elif c {` → `} else if c {`, `'text'` → `"text"`, and a `;` ending a line dropped. The edit
comes with the diagnostic from the parser (its `fix`), where the hint is made, and the editor
offers it as a preferred quick fix; applying it leaves a program without a syntax error.
Driven as a real LSP client over stdio; one document edited from case to case, as typing does."""

from __future__ import annotations

import itertools
import sys

import pytest
from support.lsp_editor import applied, opened

from agentflow.lsp.client import LspClient

TEMPLATE = """\
input {{ q: text?, on: bool }}
stage s -> bool {{
  {line}
  return x
}}
"""

ELIF = """\
stage s -> int {
  if true {
    return 1
  } elif false {
    return 2
  }
  return 3
}
"""

_VERSIONS = itertools.count(2)


@pytest.fixture(scope="module")
def editor(tmp_path_factory):
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0})
    uri = (tmp_path_factory.mktemp("habits") / "main.flow").as_uri()
    text = TEMPLATE.format(line="let x = true")
    opened(c, uri, text)
    try:
        yield c, uri
    finally:
        c.close()


def quick_fixes(editor, text: str) -> tuple[list[dict], list[dict]]:
    """The diagnostics of ``text`` and the code actions offered for the syntax error."""
    c, uri = editor
    c.change(uri, text, next(_VERSIONS))
    got = c.wait_notification(
        "textDocument/publishDiagnostics",
        lambda p: p["uri"] == uri and any(d["code"] == "syntax-error" for d in p["diagnostics"]),
        timeout=30,
    )
    diags = [d for d in got["diagnostics"] if d["code"] == "syntax-error"]
    acts = c.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": diags[0]["range"],
            "context": {"diagnostics": diags},
        },
    )
    return diags, acts or []


@pytest.mark.parametrize(
    ("written", "fixed", "title"),
    [
        ("let x = true && input.on", "let x = true and input.on", "Replace `&&` with `and`"),
        ("let x = true&&input.on", "let x = true and input.on", "Replace `&&` with `and`"),
        ("let x = true || input.on", "let x = true or input.on", "Replace `||` with `or`"),
        ("let x = !input.on", "let x = not input.on", "Replace `!` with `not`"),
        ("let x = 1 === 1", "let x = 1 == 1", "Replace `===` with `==`"),
        ("let x = 1 !== 1", "let x = 1 != 1", "Replace `!==` with `!=`"),
        ("let x = input.q == 'a'", 'let x = input.q == "a"', "Write the string in double quotes"),
        ("let x = input?.q == null", "let x = input.q == null", "Replace `?.` with `.`"),
        ("let x = true;", "let x = true", "Remove the `;`"),
        ("let x = true ; // done", "let x = true // done", "Remove the `;`"),
    ],
)
def test_a_habit_hint_with_one_exact_edit_is_a_preferred_quick_fix(editor, written, fixed, title):
    text = TEMPLATE.format(line=written)
    _diags, acts = quick_fixes(editor, text)
    assert [a["title"] for a in acts] == [title]
    assert acts[0]["isPreferred"] is True
    (edits,) = acts[0]["edit"]["changes"].values()
    after = applied(edits, text)
    assert after == TEMPLATE.format(line=fixed)


def test_elif_after_a_brace_is_fixed_to_else_if(editor):
    _diags, acts = quick_fixes(editor, ELIF)
    assert [a["title"] for a in acts] == ["Replace `elif` with `else if`"]
    (edits,) = acts[0]["edit"]["changes"].values()
    assert "  } else if false {\n" in applied(edits, ELIF)


@pytest.mark.parametrize(
    "written",
    [
        "let x = true; let y = 2",  # a `;` between statements: a line break is the fix, not one edit
        "let x = true & input.on",  # a lone `&`: `and` is a guess
        "let x = 'it\\'s'",  # a quote to escape
    ],
)
def test_a_hint_that_is_not_one_exact_edit_offers_no_quick_fix(editor, written):
    _diags, acts = quick_fixes(editor, TEMPLATE.format(line=written))
    assert acts == []


def test_applying_each_fix_leaves_no_syntax_error():
    from agentflow.compiler.api import check_source

    for written in ("true && input.on", "true || input.on", "!input.on", "1 === 1"):
        text = TEMPLATE.format(line=f"let x = {written}")
        (d,) = [d for d in check_source(text, "x.flow").diagnostics if d.code == "syntax-error"]
        assert d.fix is not None
        fixed = text[: d.fix.span.start] + d.fix.text + text[d.fix.span.end :]
        assert [d.code for d in check_source(fixed, "x.flow").diagnostics] == []
