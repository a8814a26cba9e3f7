"""LSP ``textDocument/formatting``: a file `flowc fmt` formats is formatted (``match -(x)``), and
when the formatter refuses a file that parses, the user is told why (``window/showMessage``)
instead of getting no edit and no word (docs/editors.md)."""

from __future__ import annotations

import sys

from support.lsp_editor import applied
from support.paths import TESTS

from agentflow.lsp.client import LspClient

URI = (TESTS / "lsp" / "buffers" / "neg.flow").as_uri()
NEG = "input { n: int }\nstage u -> int {\nreturn match -(input.n) { -1 => 1, _ => 0 }\n}\n"
FMT = {"textDocument": {"uri": URI}, "options": {"tabSize": 2, "insertSpaces": True}}

#: the language server with a formatter that always refuses (as a formatter bug would)
REFUSING = (
    "import agentflow.compiler.fmt as f\n"
    "def refuse(text, file='<input>'):\n"
    "    raise f.FormatError(file + ': internal formatter error: left unchanged')\n"
    "f.format_source = refuse\n"
    "from agentflow.cli import main\n"
    "main(['lsp'])\n"
)


def _server(argv: list[str]) -> LspClient:
    c = LspClient(argv)
    c.initialize()
    c.open(URI, NEG)
    c.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == URI)
    return c


def test_formatting_a_match_on_a_negated_parenthesis_edits_the_file():
    c = _server([sys.executable, "-m", "agentflow", "lsp"])
    try:
        edits = c.request("textDocument/formatting", FMT, timeout=30)
        assert applied(edits, NEG) == NEG.replace("\nreturn", "\n  return")
    finally:
        c.close()


def test_a_refused_formatting_shows_the_reason():
    c = _server([sys.executable, "-c", REFUSING])
    try:
        assert c.request("textDocument/formatting", FMT, timeout=30) is None
        shown = c.wait_notification("window/showMessage", timeout=30)
        assert shown["type"] == 1 and "internal formatter error" in shown["message"]
    finally:
        c.close()
