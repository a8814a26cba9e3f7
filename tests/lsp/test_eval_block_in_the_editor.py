"""An `eval` block in the editor (docs/reference/evals.md), through the real language server over
stdio: its scorers' mistakes are diagnostics, the outline shows the block with its scorers (kind
and threshold), and completion offers the block's items and the names a scorer reads."""

from __future__ import annotations

import sys
from pathlib import Path

from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex

#: an editor buffer inside the repository, never on disk (the server checks the text it is sent)
URI = (Path(__file__).resolve().parent / "buffers" / "evals.flow").as_uri()

TEXT = """\
input { n: int }
stage double -> int { return input.n * 2 }

eval "arithmetic" {
  dataset "cases.jsonl"
  score exact = output == expected
  score near = 1 - abs(output - expected) / 10 threshold 80%
  judge clear "Is ${output} twice ${input.n}?"
  score label = "fine"

}
"""


def _position(text: str, needle: str, delta: int = 0) -> dict:
    line, char = LineIndex(text, "utf-16").position(text.index(needle) + delta)
    return {"line": line, "character": char}


def test_eval_block_diagnostics_outline_and_completion():
    uri = URI
    client = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    try:
        client.initialize()
        client.open(uri, TEXT)
        diags = client.wait_notification(
            "textDocument/publishDiagnostics", lambda p: p["uri"] == uri
        )["diagnostics"]
        assert [(d["code"], d["range"]["start"]["line"]) for d in diags] == [("type-mismatch", 8)]

        (block,) = [
            s
            for s in client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
            if s["name"] == "arithmetic"
        ]
        assert [(c["name"], c.get("detail")) for c in block["children"]] == [
            ("exact", "bool"),
            ("near", "number ≥ 0.8"),
            ("clear", "judge ≥ 0.5"),
            ("label", "number ≥ 0.5"),  # not a score: typed as the default kind
        ]

        def labels(position: dict) -> list[str]:
            r = client.request(
                "textDocument/completion",
                {"textDocument": {"uri": uri}, "position": position},
            )
            return [i["label"] for i in (r["items"] if isinstance(r, dict) else r)]

        at_line_start = _position(TEXT, "\n}\n", 1)
        assert labels(at_line_start) == ["dataset", "expect", "score", "judge"]
        in_score = _position(TEXT, "output == expected")
        assert {"output", "expected", "usage", "case", "input"} <= set(labels(in_score))
    finally:
        client.close()
