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


FLOW_CARET = """\
flow d
input { lines: text[] }
use agent "sre" as sre

stage reading -> text {
  let ticket = read_file(path: "notes.txt")
  return agent(sre) {
    task "Look"
    input { n: parse_int(ticket), first: input.lines[0] }
    expect text
  }
}
"""


def test_a_run_time_error_points_at_the_expression_it_names(tmp_path, monkeypatch):
    # issue 31: `parse_error: step E1: parse_int(E0)` with the caret on the `agent(` line; now
    # the message names `ticket` and the caret underlines the call where the .flow wrote it
    (tmp_path / "notes.txt").write_text("x,y", encoding="utf-8")
    (tmp_path / "d.flow").write_text(FLOW_CARET, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(
        main, ["run", "d.flow", "--input", '{"lines": ["a"]}', "--model", "test"]
    )
    assert res.exit_code == 1
    err = res.stderr
    assert "error[parse_error] in reading › agent(sre) (step E1): `parse_int(ticket)`" in err
    assert "  --> d.flow:9:16\n" in err
    assert "   |     input { n: parse_int(ticket), first: input.lines[0] }\n" in err
    assert "   |                " + "^" * len("parse_int(ticket)") + "\n" in err


GOLDEN = __import__("pathlib").Path(__file__).parent / "golden"


def test_the_caret_stays_under_its_expression_on_a_line_with_control_characters(
    tmp_path, monkeypatch, golden
):
    # the console shows an ESC as `\x1b` (4 columns) and a tab as spaces: the caret is
    # measured on the line as shown, not on the file's characters (it drifted left by 3)
    flow = tmp_path / "c.flow"
    flow.write_text(
        'flow c\nstage main -> int {\n  return { a: "\x1b[2J\t", b: parse_int("zz") }.b\n}\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["run", "c.flow"])
    assert res.exit_code == 1, res.stderr
    block = res.stderr[res.stderr.index("error[parse_error]") :]
    shown, carets = block.splitlines()[2:4]
    assert carets.index("^") == shown.index("parse_int") and carets.count("^") == len(
        'parse_int("zz")'
    )
    golden.check(GOLDEN / "run_error_control_characters.txt", block)
