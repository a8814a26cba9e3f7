"""Hover shows the types the checker uses, through the language server's protocol
(docs/editors.md): never the `<error>` placeholder of a type it could not give — a call of a
`fn` whose body does not parse shows the header as written, a `let` of such a call its name
alone; a `parallel` block's literal branches as the `let` binds them (`q: int`, not `q: 2`);
a stage's, parameter's or annotated `let`'s declared type as written (`Sev`, not the union
it names)."""

from __future__ import annotations

import sys

import pytest

from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex

BROKEN = """\
fn f(x: int, y: int) -> int = x + y +* 2
stage a -> int {
  let r = f(1, 2)
  let q = [f(1, 2)]
  let p = parallel { a: f(1, 2), b: 2 }
  return r + q[0] + p.a
}
"""

TYPED = """\
type Sev = "low" | "high"
fn twice(n: int) -> int = n * 2
stage a -> Sev { return "low" }
stage b -> int {
  let r = parallel { p: twice(1), q: 2 }
  let s: Sev = "low"
  return r.q + r.p
}
stage c -> Sev[] { return [a] }
"""


@pytest.fixture(scope="module")
def editor(tmp_path_factory):
    root = tmp_path_factory.mktemp("hover")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0})
    uris = {}
    for name, text in (("broken.flow", BROKEN), ("typed.flow", TYPED)):
        uri = (root / name).as_uri()
        c.open(uri, text)
        c.wait_notification("textDocument/publishDiagnostics", lambda p, u=uri: p["uri"] == u)
        uris[name] = uri
    try:
        yield c, uris
    finally:
        c.close()


def hover_at(c: LspClient, uri: str, text: str, needle: str, delta: int = 0) -> str | None:
    """The hover's Markdown at ``needle`` (+ ``delta`` characters) in ``text``, or None."""
    line, char = LineIndex(text, "utf-16").position(text.index(needle) + delta)
    got = c.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": line, "character": char}},
    )
    return None if got is None else got["contents"]["value"]


@pytest.mark.parametrize(
    ("needle", "delta", "shown"),
    [
        ("f(1, 2)\n  let q", 0, "```flow\n(function) fn f(x: int, y: int) -> int\n```"),
        ("r = f", 0, "```flow\n(let) r\n```"),
        ("q = [", 0, "```flow\n(let) q\n```"),
        ("p.a", 0, "```flow\n(let) p\n```"),
        ("a: f(1", 0, "```flow\n(branch) a\n```"),
        ("[f(1, 2)]", 0, None),  # the list expression: no type to show
    ],
)
def test_a_hover_never_shows_the_error_placeholder(editor, needle, delta, shown):
    c, uris = editor
    got = hover_at(c, uris["broken.flow"], BROKEN, needle, delta)
    assert got == shown
    got_parallel = hover_at(c, uris["broken.flow"], BROKEN, "parallel")
    assert got_parallel is not None and "<error>" not in got_parallel
    assert got_parallel.startswith("```flow\nparallel\n```")


@pytest.mark.parametrize(
    ("needle", "delta", "shown"),
    [
        ("parallel", 0, "parallel: { p: int, q: int }"),
        ("r = ", 0, "(let) r: { p: int, q: int }"),
        ("q: 2", 0, "(branch) q: int"),
        ("r.q", 2, "(branch) q: int"),
        ("a -> Sev", 0, "(stage) a: Sev"),
        ("a] }", 0, "(stage) a: Sev"),
        ("c -> Sev[]", 0, "(stage) c: Sev[]"),
        ("s: Sev", 0, "(let) s: Sev"),
    ],
)
def test_a_hover_shows_the_types_the_checker_uses_as_written(editor, needle, delta, shown):
    c, uris = editor
    got = hover_at(c, uris["typed.flow"], TYPED, needle, delta)
    assert got is not None and got.startswith(f"```flow\n{shown}\n```"), got
