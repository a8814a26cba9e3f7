"""A `.flow` file named on the command line and found again in a directory given too
(`flowc test a.flow .`) is taken once: its diagnostics are printed once (cli/common.py
``_flow_files``)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agentflow.cli import main

FLOW = """\
input { email: text }
stage s -> text {
  let c = lookup_customer(email: input.email)
  return "x"
}
test "t" {
  input { email: "a" }
  expect s == "x"
}
"""


def test_flowc_test_of_a_file_and_its_directory_prints_each_diagnostic_once(
    tmp_path: Path, monkeypatch
):
    (tmp_path / "cust.flow").write_text(FLOW, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for args in (["test", "cust.flow", "."], ["test", "./cust.flow", "cust.flow"]):
        out = CliRunner().invoke(main, args)
        assert out.exit_code == 1, out.output
        assert out.output.count("error[unknown-tool]") == 1, out.output
        assert "0 passed, 0 failed; 1 test not run: cust.flow does not check" in out.output
    out = CliRunner().invoke(main, ["check", "cust.flow", "."])
    assert out.output.count("error[unknown-tool]") == 1, out.output
