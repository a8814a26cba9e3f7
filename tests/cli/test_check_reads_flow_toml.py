"""``flowc check`` loads the ``flow.toml`` a run of the checked flow would read (the nearest from
the flow's directory upward), as a run loads it, and reports each problem as an error
``invalid-config`` at its ``flow.toml:line:col`` with a hint — once for the flows that share the
file — so that a typo in it fails CI rather than the first run; what depends on the environment
is left to the run (docs/reference/cli.md "flowc check", docs/diagnostics.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main

FLOW = "stage s -> int {\n  return 1\n}\n"

BAD = """\
[models]
default = "p:m"
[providers.p]
kind = "openai"
region = "us-east-1"
api_key_evn = "OPENAI_API_KEY"
"""


def _project(tmp_path: Path, config: str, flows: tuple[str, ...] = ("a.flow",)) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "flow.toml").write_text(config, encoding="utf-8")
    for name in flows:
        (project / name).write_text(FLOW, encoding="utf-8")
    return project


def test_a_wrong_key_in_flow_toml_is_an_error_at_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, BAD)
    monkeypatch.chdir(tmp_path)  # the project's flow.toml, not the current directory's
    res = CliRunner().invoke(main, ["check", "project/a.flow"])
    assert res.exit_code == 1, res.output
    assert res.stdout == (
        "project/flow.toml:5:1: error[invalid-config]: [providers.p] `region` applies to kind "
        "bedrock, not 'openai'\n"
        "  |\n"
        '5 | region = "us-east-1"\n'
        "  | ^^^^^^\n"
        "  = hint: a run of this flow stops on it (flowc run, test, eval, serve); "
        "docs/reference/configuration.md lists what flow.toml takes\n"
        "\n"
        "project/flow.toml:6:1: error[invalid-config]: unknown key 'providers.p.api_key_evn'\n"
        "  |\n"
        '6 | api_key_evn = "OPENAI_API_KEY"\n'
        "  | ^^^^^^^^^^^\n"
        "  = hint: did you mean `api_key_env`?\n"
    ), res.stdout
    assert res.stderr == "2 error(s), 0 warning(s) in 1 file(s)\n"


def test_flows_sharing_a_flow_toml_report_it_once_in_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, '[tools]\nisolaton = "process"\n', ("a.flow", "b.flow"))
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["check", "--format", "json", "project"])
    assert res.exit_code == 1, res.output
    assert json.loads(res.stdout) == [
        {
            "file": "project/flow.toml",
            "line": 2,
            "column": 1,
            "end_line": 2,
            "end_column": 9,
            "severity": "error",
            "code": "invalid-config",
            "message": "unknown key 'tools.isolaton'",
            "notes": [],
            "hint": "did you mean `isolation`?",
            "fix": None,
        }
    ]


def test_invalid_toml_is_one_error_at_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, '[models]\ndefault = "p:m"\n[providers.p\n')
    monkeypatch.chdir(tmp_path / "project")
    res = CliRunner().invoke(main, ["check", "--format", "json", "a.flow"])
    (only,) = json.loads(res.stdout)
    assert (only["file"], only["line"], only["code"]) == ("flow.toml", 3, "invalid-config")
    assert only["message"].startswith("invalid TOML: "), only


def test_what_depends_on_the_environment_is_left_to_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(
        tmp_path,
        '[models]\ndefault = "p:m"\n[providers.p]\nkind = "openai"\n'
        'api_key_env = "CHECK_UNSET_KEY"\nheaders = { X-Gw = "${CHECK_UNSET_GW}" }\n'
        '[durable]\ndatabase = "${CHECK_UNSET_DB}"\n',
    )
    monkeypatch.delenv("CHECK_UNSET_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "not a url")  # the environment is not read
    monkeypatch.chdir(tmp_path / "project")
    res = CliRunner().invoke(main, ["check", "a.flow"])
    assert res.exit_code == 0 and res.stdout == "", res.output
    assert res.stderr == "1 file(s) checked: no problems\n"


@pytest.mark.parametrize(
    "config",
    [
        '[models]\ndefault = "p:m"\n\n[providers.p]\nkind = "opnai"\ntimeout = "30s"\n',
        '[providers.p]\nkind = "llama"\n\n[tools]\nmodules = "tools.py"\nisolaton = "thread"\n',
        '[chat]\nmax_agent_iterations = "5"\n[durable]\nask_timeout = 30\n',
        'policy = "none"\n',
    ],
)
def test_flowc_check_and_flowc_run_report_a_flow_toml_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str
) -> None:
    """Each problem `flowc check` reports (message, line, column; a did-you-mean as its hint)
    is an `error:` line of `flowc run`, in the same words (docs/reference/configuration.md
    "Errors")."""
    project = _project(tmp_path, config)
    monkeypatch.chdir(tmp_path)
    checked = CliRunner().invoke(main, ["check", "--format", "json", "project/a.flow"])
    assert checked.exit_code == 1, checked.output
    expected = []
    for d in json.loads(checked.stdout):
        meant = d["hint"].split("`")[1] if d["hint"].startswith("did you mean") else None
        text = d["message"] + (f"; did you mean '{meant}'?" if meant else "")
        expected.append(f"{project / 'flow.toml'}:{d['line']}:{d['column']}: {text}")
    ran = CliRunner().invoke(main, ["run", "project/a.flow"])
    assert ran.exit_code == 1, ran.output
    assert all(line.startswith("error: ") for line in ran.stderr.splitlines()), ran.stderr
    printed = sorted(line.removeprefix("error: ") for line in ran.stderr.splitlines())
    assert printed == sorted(expected), (printed, expected)
    assert not any(p in ran.stderr for p in ("Input should", "validation error", "pydantic"))


def test_a_kind_naming_an_openai_compatible_server_has_the_fix_as_its_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, '[providers.local]\nkind = "ollama"\n')
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["check", "project/a.flow"])
    assert res.exit_code == 1, res.output
    assert res.stdout == (
        "project/flow.toml:2:1: error[invalid-config]: [providers.local] kind: expected a "
        'provider kind; got the string "ollama"\n'
        "  |\n"
        '2 | kind = "ollama"\n'
        "  | ^^^^\n"
        '  = hint: ollama serves OpenAI\'s chat-completions API: write kind = "openai" with '
        'base_url = "http://127.0.0.1:11434/v1"\n'
    ), res.stdout
