"""``flowc run``'s input is checked before anything else it needs: an input that does not fit
the flow is said even when no model is configured (it was "no model is configured" first), and
``--input FILE`` — a file's name given as JSON text — hints ``--input @FILE``."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agentflow.cli import main

FLOW = """\
flow triage
input { email: text }
use agent "triager" as triager

stage triage -> text {
  return agent(triager) { task "Triage ${input.email}" tools none expect text }
}
"""


def _setup(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "triage.flow").write_text(FLOW)
    (tmp_path / "flow.toml").write_text("")


def test_a_bad_input_is_said_before_the_missing_model(tmp_path: Path, monkeypatch):
    _setup(tmp_path, monkeypatch)
    res = CliRunner().invoke(main, ["run", "triage.flow", "--input", '{"email": 1}'])
    assert res.exit_code == 1
    assert "no model is configured" not in res.stderr, res.stderr
    assert "`input.email` is 1, but the flow's input type wants `text` here" in res.stderr
    assert "flowc schema triage.flow --input" in res.stderr


def test_input_naming_a_file_hints_the_at_form(tmp_path: Path, monkeypatch):
    _setup(tmp_path, monkeypatch)
    (tmp_path / "big.json").write_text('{"email": "hi"}')
    res = CliRunner().invoke(main, ["run", "triage.flow", "--input", "big.json"])
    assert res.exit_code == 1
    assert res.stderr == (
        "error: --input:1:1: input is not valid JSON: Expecting value\n"
        "hint: big.json is a file: to read the input from it, write --input @big.json\n"
    )
    res = CliRunner().invoke(main, ["run", "triage.flow", "--input", "nothere.json"])
    assert res.stderr == "error: --input:1:1: input is not valid JSON: Expecting value\n"
