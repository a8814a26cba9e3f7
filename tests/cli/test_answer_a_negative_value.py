"""`flowc answer RUN NAME -5`: click takes `-5` for an option; the error shows the command with
`--` before it, which answers (docs/reference/cli.md "flowc answer"), and every "answer with"
hint puts `--` before a negative value too."""

from __future__ import annotations

from click.testing import CliRunner

from agentflow import api
from agentflow.cli import main


def _flowc(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, list(args))
    return done.exit_code, done.output


def test_a_negative_answer_is_told_to_go_after_a_double_dash(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    hint = "hint: an argument that begins with `-` (a negative answer) goes after `--`: "
    for args, shown in (
        (["q9", "count", "-5"], "flowc answer q9 count -- -5"),
        (
            ["q9", "count", "-2.5", "--database", "a b"],
            "flowc answer --database 'a b' q9 count -- -2.5",
        ),
    ):
        code, out = _flowc("answer", *args)
        assert code == 2, out
        assert out.strip().splitlines()[-1] == hint + shown, out
    code, out = _flowc("answer", "q9", "count", "--bogus")  # a misspelt option: click's error
    assert code == 2 and "No such option '--bogus'" in out and "hint:" not in out
    # what the hint shows works: the value reaches the command (no such run here)
    code, out = _flowc("answer", "q9", "count", "--", "-5")
    assert code == 1 and "no durable run 'q9'" in out, out


def test_the_answer_with_hint_puts_a_double_dash_before_a_negative_value() -> None:
    assert api.answer_command("q9", "count", "-5") == "flowc answer -- q9 count -5"
    assert api.answer_command("q9", "count") == "flowc answer q9 count VALUE"
