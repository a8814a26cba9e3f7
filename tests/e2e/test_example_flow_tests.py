"""The shipped examples carry `test` blocks, and `flowc test examples/` passes with no model, key
or network (docs/reference/testing.md); a deliberately broken stub is a check error at the stub."""

from __future__ import annotations

from click.testing import CliRunner
from support.paths import EXAMPLES

from agentflow.cli import main
from agentflow.compiler.api import check_source


def test_flowc_test_examples_passes_offline(monkeypatch):
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    # --no-cache: this checks the code of this checkout, which a cached pass would not run
    result = CliRunner().invoke(main, ["test", "--no-cache", str(EXAMPLES)])
    assert result.exit_code == 0, result.output
    assert "FAILED" not in result.output
    passed = int(result.output.strip().splitlines()[-1].split()[0])
    assert passed >= 2 * len(list(EXAMPLES.glob("*.flow")))


def test_a_stub_with_a_wrong_field_type_is_a_check_error_at_the_stub():
    path = EXAMPLES / "first.flow"
    text = path.read_text(encoding="utf-8").replace(
        'returns { top: ["retry failed jobs"], count: 1 }',
        'returns { top: ["retry failed jobs"], count: "one" }',
    )
    result = check_source(text, "first.flow")
    (diag,) = result.errors
    assert diag.code == "stub-mismatch"
    line = text.split("\n")[diag.span.line - 1]
    assert line.strip().startswith("stub agent helper returns")
    assert line[diag.span.column - 1 : diag.span.end_column - 1] == '"one"'
