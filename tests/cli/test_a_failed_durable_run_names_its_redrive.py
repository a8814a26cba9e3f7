"""A durable run that ends in error says how to go on from it — ``hint: … `flowc redrive RUN`
…`` after its error — as a waiting question says ``answer with: flowc answer …``; before, its
run id was only on its first line and nothing named ``redrive``.  A plain run, which cannot be
redriven, gets no such hint; a redrive that fails again names its own new run; a resume of a
run that had ended in error says it once (in its note)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
flow rd "read a file"
input { p: path }
stage s -> text {
  let t = read_file(path: input.p)
  return upper(t)
}
"""


def _flowc(*args: str):
    try:
        return CliRunner().invoke(main, list(args))
    finally:
        shutdown()


def _hint(run_id: str) -> str:
    return (
        f"hint: once what failed is put right, `flowc redrive {run_id}` runs it again from its "
        "failed steps, taking every step that finished"
    )


def test_a_failed_durable_run_ends_with_the_redrive_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rd.flow").write_text(FLOW)
    failed = _flowc("run", "rd.flow", "--durable", "--run-id", "r1", "--input", '{"p": "a.txt"}')
    assert failed.exit_code == 1, failed.output
    assert "error[tool_error] in s › t = read_file" in failed.stderr
    assert failed.stderr.splitlines()[-1] == _hint("r1")

    resumed = _flowc("resume", "r1")  # its note names redrive already: said once
    assert resumed.exit_code == 1, resumed.output
    assert resumed.stderr.count("flowc redrive r1") == 1, resumed.stderr

    again = _flowc("redrive", "r1")  # the file is still missing: the new run names itself
    assert again.exit_code == 1, again.output
    assert again.stderr.splitlines()[-1] == _hint(_redriven(again.stderr))

    (tmp_path / "a.txt").write_text("hi")
    fixed = _flowc("redrive", "r1")
    assert fixed.exit_code == 0, fixed.output
    assert "redrive" not in fixed.stderr.replace("(redrive of r1)", "")


def _redriven(stderr: str) -> str:
    """The new run's id as `flowc redrive` prints it (`run id: r1~xxxxxx (redrive of r1)`),
    quoted for a shell as the hint quotes it."""
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("run id: ")]
    return "'" + line.split()[2] + "'"


def test_a_failed_plain_run_has_no_redrive_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rd.flow").write_text(FLOW)
    failed = _flowc("run", "rd.flow", "--input", '{"p": "a.txt"}')
    assert failed.exit_code == 1, failed.output
    assert "redrive" not in failed.stderr
