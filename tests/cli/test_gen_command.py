"""`flowc gen python FLOW -o module.py` and `flowc gen python DIR -o OUTDIR`, and the
`stale-generated-module` warning of `flowc check` when flow.toml lists a module under
`[gen] python` (docs/reference/python-clients.md)."""

from __future__ import annotations

from click.testing import CliRunner
from support.paths import REPO

from agentflow.cli import main

FLOW = (REPO / "examples" / "bug-triage.flow").read_text(encoding="utf-8")


def test_gen_python_writes_a_module_per_flow_of_a_directory(tmp_path, monkeypatch):
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "bug-triage.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "flows" / "first.flow").write_text(
        (REPO / "examples" / "first.flow").read_text(encoding="utf-8"), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["gen", "python", "flows", "-o", "clients"])
    assert out.exit_code == 0, out.output
    written = sorted(p.name for p in (tmp_path / "clients").iterdir())
    assert written == ["bug_triage.py", "first.py"]
    text = (tmp_path / "clients" / "bug_triage.py").read_text()
    assert "# flowc-gen: source=../flows/bug-triage.flow digest=sha256:" in text
    assert "async def run_bug_triage(" in text and "def run_bug_triage_sync(" in text


def test_check_warns_when_a_listed_module_is_older_than_its_flow(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bug-triage.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[gen]\npython = ["clients/bug_triage.py"]\n')
    runner = CliRunner()
    made = runner.invoke(main, ["gen", "python", "bug-triage.flow", "-o", "clients/bug_triage.py"])
    assert made.exit_code == 0, made.output
    fresh = runner.invoke(main, ["check", "bug-triage.flow"])
    assert fresh.exit_code == 0 and "stale-generated-module" not in fresh.output
    (tmp_path / "bug-triage.flow").write_text(FLOW.replace("deadline 20m", "deadline 30m"))
    stale = runner.invoke(main, ["check", "bug-triage.flow"])
    assert stale.exit_code == 0, stale.output  # a warning
    assert (
        "bug-triage.flow:3:1: warning[stale-generated-module]: clients/bug_triage.py was "
        "generated from an earlier version of this flow" in stale.output
    )
    assert "run `flowc gen python bug-triage.flow -o clients/bug_triage.py` again" in stale.output
    strict = runner.invoke(main, ["check", "--warnings-as-errors", "bug-triage.flow"])
    assert strict.exit_code == 1


def test_gen_python_refuses_a_program_with_errors(tmp_path):
    bad = tmp_path / "bad.flow"
    bad.write_text("stage s -> int { return nope }\n")
    out = CliRunner().invoke(main, ["gen", "python", str(bad), "-o", str(tmp_path / "m.py")])
    assert out.exit_code == 1
    assert "unknown-name" in out.output
    assert not (tmp_path / "m.py").exists()


def test_gen_python_refuses_an_output_with_no_json_form(tmp_path):
    flow = tmp_path / "opaque.flow"
    flow.write_text(
        "extern type Handle\nextern tool open_it() -> Handle\n"
        "stage s -> Handle {\n  return open_it()\n}\n"
    )
    out = CliRunner().invoke(main, ["gen", "python", str(flow), "-o", str(tmp_path / "m.py")])
    assert out.exit_code == 1
    assert f"error: {flow}: `Handle` is an extern type and has no JSON form" in out.output
