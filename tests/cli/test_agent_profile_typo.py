"""A mistyped agent profile (`use agent "triager"` with `[agents.triagr]` in flow.toml): the run's
"no profile" warning says which profile was probably meant, and `flowc check` reports it before
anything runs (warning `unknown-agent-profile`, from the flow.toml beside the flow) — only for a
near miss: an agent with no profile at all is not a mistake."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agentflow.cli import main

FLOW = """\
flow triage
input { email: text }
use agent "triager" as triager
use agent "helper" as helper

stage triage -> text {
  let a = agent(triager) { task "Triage ${input.email}" tools none expect text }
  return agent(helper) { task "Help with ${a}" tools none expect text }
}
"""

CONFIG = """\
[models]
default = "fake:any"
[providers.fake]
kind = "test"
[agents.triagr]
system_prompt = "You triage."
"""


def _setup(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "triage.flow").write_text(FLOW)
    (tmp_path / "flow.toml").write_text(CONFIG)


def test_the_run_warning_names_the_profile_meant(tmp_path: Path, monkeypatch):
    _setup(tmp_path, monkeypatch)
    res = CliRunner().invoke(main, ["run", "triage.flow", "--input", '{"email": "hi"}'])
    assert res.exit_code == 0, res.output
    assert (
        "agent 'triager' has no [agents.triager] profile (did you mean `triagr`?); "
        "running with the default profile" in res.stderr
    ), res.stderr
    # no near name: the warning as it was
    assert "agent 'helper' has no [agents.helper] profile; running" in res.stderr, res.stderr


def test_flowc_check_reports_the_typo_from_the_flow_toml_beside_it(tmp_path: Path, monkeypatch):
    _setup(tmp_path, monkeypatch)
    res = CliRunner().invoke(main, ["check", "triage.flow"])
    assert res.exit_code == 0, res.output
    assert res.stdout == (
        "triage.flow:3:11: warning[unknown-agent-profile]: agent 'triager' has no "
        "[agents.triager] in flow.toml\n"
        "  |\n"
        '3 | use agent "triager" as triager\n'
        "  |           ^^^^^^^^^\n"
        "  = hint: did you mean `triagr`?\n"
    ), res.stdout
    assert CliRunner().invoke(main, ["check", "--warnings-as-errors", "triage.flow"]).exit_code == 1
    (tmp_path / "flow.toml").write_text(CONFIG.replace("triagr", "triager"))
    clean = CliRunner().invoke(main, ["check", "triage.flow"])
    assert clean.exit_code == 0 and "unknown-agent-profile" not in clean.output, clean.output


def test_check_and_run_of_a_flow_elsewhere_read_the_same_flow_toml(tmp_path: Path, monkeypatch):
    """One rule for every command (docs/reference/configuration.md "Which flow.toml"): the
    nearest flow.toml from the flow's directory upward, not the one of the current directory;
    `--config` overrides it."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "triage.flow").write_text(FLOW)
    (project / "flow.toml").write_text(CONFIG)
    # the current directory's own flow.toml, whose profile is another near miss
    (tmp_path / "flow.toml").write_text(CONFIG.replace("triagr", "triagerr"))
    monkeypatch.chdir(tmp_path)
    flow = str(Path("project") / "triage.flow")
    checked = CliRunner().invoke(main, ["check", flow])
    assert checked.exit_code == 0, checked.output
    assert f"in {Path('project') / 'flow.toml'}\n" in checked.stdout, checked.stdout
    assert "did you mean `triagr`?" in checked.stdout, checked.stdout
    ran = CliRunner().invoke(main, ["run", flow, "--input", '{"email": "hi"}'])
    assert ran.exit_code == 0, ran.output
    assert "(did you mean `triagr`?)" in ran.stderr, ran.stderr
    given = ["run", "--config", "flow.toml", flow, "--input", '{"email": "hi"}']
    overridden = CliRunner().invoke(main, given)
    assert "(did you mean `triagerr`?)" in overridden.stderr, overridden.stderr  # --config wins


def test_a_durable_run_of_a_flow_elsewhere_says_where_its_database_is(tmp_path: Path, monkeypatch):
    from agentflow.runtime.durable.dbos_engine import shutdown

    project = tmp_path / "project"
    project.mkdir()
    (project / "one.flow").write_text("stage s -> int { return 1 }\n")
    (project / "flow.toml").write_text("[tools]\nentry_points = false\n")
    monkeypatch.chdir(tmp_path)
    try:
        ran = CliRunner().invoke(main, ["run", "--durable", "--run-id", "d1", "project/one.flow"])
    finally:
        shutdown()
    assert ran.exit_code == 0, ran.output
    used = Path("project") / "flow.toml"
    assert (
        f"note: the run's database is {used}'s: `flowc runs --config {used}` lists it (runs "
        "show, answer, cancel, resume and redrive of this run find it from any directory)"
    ) in ran.stderr, ran.stderr
    assert (project / ".flowc" / "durable.sqlite").is_file()  # beside the flow.toml it read


def test_flowc_test_of_a_flow_below_its_project_reads_the_project_flow_toml(
    tmp_path: Path, monkeypatch
):
    """`flowc test` found a flow.toml only beside the flow: a flow in a subdirectory of its
    project ran its tests without the project's `[tools] modules`."""
    project = tmp_path / "project"
    (project / "flows").mkdir(parents=True)
    (project / "tools.py").write_text(
        'def double(n: int) -> int:\n    """2n."""\n    return 2 * n\n'
    )
    (project / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\nentry_points = false\n')
    (project / "flows" / "d.flow").write_text(
        "extern tool user__double(n: int) -> int\n"
        "stage s -> int { return user__double(n: 4) }\n"
        'test "the tool runs" { expect output == 8 }\n'
    )
    monkeypatch.chdir(tmp_path)
    tested = CliRunner().invoke(main, ["test", str(Path("project") / "flows" / "d.flow")])
    assert tested.exit_code == 0, tested.output
