"""`output T` written for `expect T` inside `agent(…) { … }` (another framework's word) carries
its quick fix: `flowc check --format json` shows the edit to `expect` with the did-you-mean hint
(core/diagnostics.py `Diagnostic.fix`, as the other did-you-means)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from agentflow.cli import main

SOURCE = """use agent "writer" as w
stage s -> text {
  agent(w) {
    task "x"
    output text
  }
}
"""


def test_check_json_shows_the_fix_of_output_to_expect_in_an_agent_block(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "o.flow").write_text(SOURCE)
    out = CliRunner().invoke(main, ["check", "--format", "json", "o.flow"])
    assert out.exit_code == 1, out.output
    first = json.loads(out.stdout)[0]
    assert first["hint"] == (
        "did you mean `expect`? an agent's answer type is its `expect T` clause"
    )
    assert first["fix"] == {
        "title": "Change `output` to `expect`",
        "text": "expect",
        "file": first["file"],
        "line": 5,
        "column": 5,
        "end_line": 5,
        "end_column": 11,
    }
    fixed = SOURCE.replace("output text", "expect text")
    (tmp_path / "o.flow").write_text(fixed)
    assert CliRunner().invoke(main, ["check", "o.flow"]).exit_code == 0
