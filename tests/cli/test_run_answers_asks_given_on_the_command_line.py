"""``flowc run --answer NAME=VALUE`` answers a plain run's ``ask`` with no terminal (a pipe,
CI), NAME as ``flowc answer`` takes it (docs/reference/cli.md "flowc run --answer"); an ask
left to its default says its question on its progress line."""

from __future__ import annotations

import json

from click.testing import CliRunner

from agentflow.cli import main

FLOW = """\
flow approve
input { subject: text }

stage approve -> bool {
  let ok = ask "Send the reply about ${input.subject}?" expect bool default false
  return ok
}
"""


def _run(tmp_path, monkeypatch, *more: str):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "approve.flow").write_text(FLOW)
    args = ["run", "approve.flow", "--input", '{"subject": "x"}', *more]
    return CliRunner().invoke(main, args, input="yes\n")


def test_an_answer_given_with_answer_is_taken_and_piped_stdin_is_not(tmp_path, monkeypatch):
    given = _run(tmp_path, monkeypatch, "--answer", "ok=yes")
    assert given.exit_code == 0, given.output
    assert json.loads(given.stdout) is True
    assert "· answered true" in given.stderr
    left = _run(tmp_path, monkeypatch)
    assert json.loads(left.stdout) is False
    assert '· no answer to "Send the reply about x?": the default false' in left.stderr


def test_an_answer_option_without_a_name_and_value_is_a_usage_error(tmp_path, monkeypatch):
    bad = _run(tmp_path, monkeypatch, "--answer", "ok")
    assert bad.exit_code == 2
    assert "'ok': give NAME=VALUE" in bad.stderr


def test_answer_with_a_durable_run_is_refused_before_it_starts(tmp_path, monkeypatch):
    durable = _run(tmp_path, monkeypatch, "--durable", "--answer", "ok=yes")
    assert durable.exit_code == 1
    assert "a durable run's questions wait for `flowc answer RUN NAME VALUE`" in durable.stderr
    assert not (tmp_path / ".flowc").exists()


MAP = """\
input { items: text[] }
stage s -> bool[] {
  parallel map input.items as it limit 2 {
    let ok = ask "Ship ${it}?" expect bool default false
    return ok
  }
}
"""


def test_one_ask_of_a_map_is_answered_as_flowc_answer_names_it(tmp_path, monkeypatch):
    # `ok[1]`, the label and the step path answer item 1's ask alone; `ok` every item's; a
    # misspelt let is refused before the run (final battery: `ok[0]` was refused)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "m.flow").write_text(MAP)
    for name, want in [
        ("ok[1]", [False, True]),
        ("s › item 0 › ok", [True, False]),
        ("E0/do.1", [False, True]),
        ("ok", [True, True]),
    ]:
        args = ["run", "m.flow", "--input", '{"items": ["a", "b"]}', "--answer", f"{name}=true"]
        out = CliRunner().invoke(main, args)
        assert out.exit_code == 0 and json.loads(out.stdout) == want, (name, out.output)
    bad = CliRunner().invoke(main, ["run", "m.flow", "--input", '{"items": ["a"]}', "--answer", "okk[0]=true"])  # fmt: skip
    assert bad.exit_code == 1 and "no `ask` of the flow is named so" in bad.stderr, bad.output
