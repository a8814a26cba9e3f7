"""An ``ask`` with neither ``default`` nor ``else fail`` that nobody answers (no terminal, no
``--answer``) fails with its question — its first line, shortened — and the ways to answer it:
``--answer NAME=VALUE`` (``answers=`` from Python), a ``--durable`` run answered with ``flowc
answer``, or a ``default`` on the ask (docs/reference/control.md "Unanswered"); it used to say
only "question not answered"."""

from __future__ import annotations

import subprocess
import sys

from agentflow import run_sync
from agentflow.runtime.hooks import AskRequest, unanswered_message

FLOW = """\
flow review "r"
input { text: text }
stage draft -> bool {
  let ship = ask "Ship these notes?\\n${input.text}" expect bool
  return ship
}
"""


def test_a_run_with_no_one_to_answer_names_the_question_and_the_ways_to_answer(tmp_path):
    (tmp_path / "review.flow").write_text(FLOW)
    done = subprocess.run(
        [sys.executable, "-m", "agentflow", "run", "review.flow", "--input", '{"text": "alpha"}'],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    assert (
        'error[failed] in draft › ship = ask (step E0): question not answered: "Ship these '
        'notes?…"; answer it with `--answer ship=VALUE` (from Python: `answers={"ship": VALUE}`), '
        "run with `--durable` and answer it with `flowc answer RUN ship VALUE`, or give the ask "
        'a default (`ask "…" expect bool default false`)'
    ) in done.stderr
    answered = subprocess.run(
        [sys.executable, "-m", "agentflow", "run", "review.flow", "--input", '{"text": "a"}',
         "--answer", "ship=yes"],
        cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True,
    )  # fmt: skip
    assert answered.returncode == 0 and answered.stdout.strip() == "true", answered.stderr


def test_the_python_api_gives_the_same_message_and_answers_take_it(tmp_path):
    (tmp_path / "review.flow").write_text(FLOW)
    failed = run_sync(str(tmp_path / "review.flow"), {"text": "x"})
    assert failed.status == "error" and failed.error is not None
    assert failed.error.code == "failed"
    assert failed.error.message.startswith('question not answered: "Ship these notes?…"; ')
    assert 'answers={"ship": VALUE}' in failed.error.message
    ok = run_sync(str(tmp_path / "review.flow"), {"text": "x"}, answers={"ship": True})
    assert ok.output is True


def test_an_own_else_fail_message_is_kept(tmp_path):
    (tmp_path / "f.flow").write_text(
        'flow f "f"\nstage s -> bool {\n  return ask "Go?" expect bool else fail "nobody said"\n}\n'
    )
    failed = run_sync(str(tmp_path / "f.flow"))
    assert failed.error is not None and failed.error.message == "nobody said"


def _request(question: str, label: str | None = "s › go = ask", schema=None) -> AskRequest:
    return AskRequest(question, schema, None, "E3/do.0", ["f"], label=label)


def test_a_long_question_is_shortened_and_a_durable_run_says_answer_it_sooner():
    long = "Is this the right release to ship to every customer in every region today? " * 3
    said = unanswered_message(_request(long, schema={"type": "integer"}), durable=True)
    shown = said.split('"')[1]
    assert len(shown) <= 60 and shown.endswith("…"), shown
    assert said.endswith(
        "; answer it sooner with `flowc answer RUN go VALUE`, or give the ask a default "
        '(`ask "…" expect int default 0`)'
    ), said
    assert "--answer" not in said


def test_an_ask_bound_to_no_let_is_named_by_its_step_path_and_a_plans_by_its_field():
    said = unanswered_message(_request("Go?", label="s › ask"), durable=False)
    assert said.startswith('question not answered: "Go?"; answer it with `--answer E3/do.0=VALUE`')
    plan = unanswered_message(_request("Go?", label=None), durable=False)
    assert plan.endswith("or give the step `when_unanswered: {default: VALUE}`"), plan


def test_in_flowc_test_an_ask_no_stub_answers_says_the_stub_that_answers_it(tmp_path):
    """A test's run has no `--answer` nor `flowc answer`: the failure names `stub ask`."""
    from click.testing import CliRunner

    from agentflow.cli import main

    (tmp_path / "review.flow").write_text(
        FLOW + 'test "shipped" {\n  input { text: "a" }\n  expect draft == true\n}\n'
    )
    done = CliRunner().invoke(main, ["test", str(tmp_path / "review.flow")])
    assert done.exit_code == 1, done.output
    assert (
        'the test does not answer the question "Ship these notes?…": answer it with '
        "`stub ask ship returns VALUE` in the test, or give the ask a default"
    ) in done.output, done.output
    assert "--answer" not in done.output


def test_the_default_hint_names_the_expect_type_as_the_flow_writes_it(tmp_path):
    """``expect Choice`` with ``type Choice = "ship" | "hold"``: the hint says ``expect Choice``,
    not the values the alias stands for; an inline union is said as written."""
    (tmp_path / "named.flow").write_text(
        'type Choice = "ship" | "hold"\n'
        "stage s -> Choice[] {\n"
        '  let c = ask "Ship?" expect Choice\n'
        '  let many = ask "More?" expect Choice[] default []\n'
        "  return many + [c]\n"
        "}\n"
    )
    failed = run_sync(str(tmp_path / "named.flow"))
    assert failed.error is not None
    assert failed.error.message.endswith('(`ask "…" expect Choice default VALUE`)')
    (tmp_path / "inline.flow").write_text(
        'stage s -> text {\n  let c = ask "Ship?" expect "ship" | "hold"\n  return c\n}\n'
    )
    inline = run_sync(str(tmp_path / "inline.flow"))
    assert inline.error is not None
    assert inline.error.message.endswith('(`ask "…" expect "ship" | "hold" default VALUE`)')
