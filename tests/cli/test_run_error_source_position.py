"""``flowc run`` names the `.flow` position of a failed step from its ``meta.source``
(``file:line:col``, read with ``Span.parse``); a hand-written ``meta.source`` that is not of that
form — here a superscript digit, which ``str.isdigit`` accepts and ``int`` refuses — is ignored,
never a traceback."""

from __future__ import annotations

from click.testing import CliRunner

from agentflow.cli import main
from agentflow.core.spans import Span

PLAN = """\
version: 1
name: p
steps:
  - id: E0
    tool_name: exit
    input: {status: error, message: boom}
    meta: {source: "x.flow:%s:1"}
"""


def test_a_malformed_step_source_is_ignored_not_a_traceback(tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text(PLAN % "²", encoding="utf-8")
    res = CliRunner().invoke(main, ["run", str(plan)])
    assert isinstance(res.exception, SystemExit), res.exception  # not a ValueError
    assert res.exit_code == 1
    assert "error[failed] at step E0: boom" in res.stderr


def test_span_parse_reads_file_line_column_with_ascii_digits_only():
    assert Span.parse("dir/x.flow:12:3") == Span.at("dir/x.flow", 12, 3)
    assert str(Span.parse("C:/x.flow:1:2")) == "C:/x.flow:1:2"
    for text in ("x.flow:²:1", "x.flow:1:٣", "x.flow:1", "x.flow", "", None, 3):
        assert Span.parse(text) is None


def test_the_source_line_shown_is_counted_as_the_scanner_counts_lines(tmp_path):
    # a comment holding U+2028 and U+0085: one line to the scanner, three to str.splitlines
    flow = tmp_path / "x.flow"
    flow.write_text(
        '// odd \u2028 comment \u0085 here\nflow x\nstage main -> int {\n  fail "boom"\n}\n',
        encoding="utf-8",
    )
    res = CliRunner().invoke(main, ["run", str(flow)])
    assert res.exit_code == 1, res.stderr
    assert "   | " + '  fail "boom"' in res.stderr, res.stderr
