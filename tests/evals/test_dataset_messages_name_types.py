"""A dataset's problems name the flow's types by the user's names (`Ticket`, not `{ title:
text, body: text }`); an inline type, which has none, is written out (docs/reference/evals.md
"Datasets")."""

from __future__ import annotations

from click.testing import CliRunner

from agentflow.cli import main

FLOW = """\
type Ticket { title: text, body: text }
input Ticket
use agent "triager" as triager
stage triage -> { team: text } {
  return agent(triager) { task "Triage ${input.title}" tools none expect { team: text } }
}
eval "quality" {
  dataset "cases.jsonl"
  score team = output.team == expected.team
}
"""


def test_a_case_missing_a_field_of_a_named_input_type_names_the_type(tmp_path):
    (tmp_path / "t.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(
        '{"input": {"title": "x", "bdy": "y"}, "expected": {"tema": "billing"}}\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["check", str(tmp_path / "t.flow")])
    assert result.exit_code == 1, result.output
    out = result.output
    # `bdy` beside a missing `body` is one problem (the one front door: agentflow.ir.mismatch)
    assert "`input` has no field `bdy` in the flow's input type `Ticket`" in out
    assert "did you mean `body`?" in out
    # the output type is written inline in the flow: it has no name but its fields
    assert "`expected` has no field `tema` in the flow's output type `{ team: text }`" in out
