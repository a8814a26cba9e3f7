"""A durable question answered while its run is ``stopped`` (its process was SIGKILLed as it
waited): ``flowc runs``, ``runs show`` and their JSON show it answered, with its answer, not
waiting; ``flowc resume`` takes the answer without telling anyone to answer it; and ``flowc run
--reuse RUN FILE`` without ``--input`` takes RUN's input (a note says so) and its answer, whose
line says it was reused and which nobody is told to answer (docs/durable.md "Questions",
"Redrive and reuse")."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.durable_questions import start_flowc, wait_asked

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
type Choice = "ship" | "hold"
input { items: text[] }
stage sizes -> int[] {
  map input.items as s { s.count }
}
stage decide -> Choice {
  ask "Ship ${sizes.count} items?" expect Choice default "hold"
}
"""


@pytest.fixture
def stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A run ``r1`` of release.flow whose process was killed while it waited on its ask."""
    (tmp_path / "release.flow").write_text(FLOW)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    proc = start_flowc(
        tmp_path, "run", "--durable", "--run-id", "r1", "release.flow",
        "--input", '{"items": ["z"]}',
    )  # fmt: skip
    try:
        wait_asked(tmp_path / ".flowc" / "durable.sqlite", "r1", proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    yield tmp_path
    shutdown()


def _cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    shutdown()
    return result


def test_a_question_answered_while_its_run_is_stopped_is_shown_answered_and_not_asked_again(
    stopped,
):
    answered = _cli("answer", "r1", "E1", "ship")
    assert answered.exit_code == 0, answered.output

    listed = _cli("runs")
    assert listed.exit_code == 0, listed.output
    assert "r1  stopped" in listed.stdout
    assert '✓ [decide › ask · E1] Ship 1 items? answered "ship"' in listed.stdout
    assert "?" not in listed.stdout.replace("Ship 1 items?", "")

    shown = _cli("runs", "show", "r1")
    assert 'answered: ✓ [decide › ask · E1] Ship 1 items? answered "ship"' in shown.stdout
    assert "the run takes it when it goes on: flowc resume r1" in shown.stdout
    assert "waiting" not in shown.stdout and "answer with" not in shown.stdout

    data = json.loads(_cli("runs", "show", "r1", "--json").stdout)
    assert data["questions"] == []
    (q,) = data["answered"]
    assert (q["path"], q["closed"], q["answer"]) == ("E1", "answer", "ship")
    (run,) = json.loads(_cli("runs", "--json").stdout)
    assert run["questions"] == [] and run["answered"][0]["answer"] == "ship"

    resumed = _cli("resume", "r1")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout == '"ship"\n'
    assert "answer with" not in resumed.stderr and "? [" not in resumed.stderr
    assert "✓ decide › ask  release.flow:7:3" in resumed.stderr
    assert 'answered "ship"' in resumed.stderr

    # --reuse without --input: r1's input, its answer reused (said so), nobody asked
    again = _cli("run", "--reuse", "r1", "--run-id", "r2", "release.flow")
    assert again.exit_code == 0, again.output
    assert again.stdout == '"ship"\n'
    assert "note: no --input: the input of run r1 is taken" in again.stderr
    assert "answer with" not in again.stderr and "? [" not in again.stderr
    # the whole line, "(reused)" said once (docs/reference/cli.md `--reuse`)
    (line,) = [line for line in again.stderr.splitlines() if line.startswith("✓ decide › ask")]
    assert re.fullmatch(
        r'✓ decide › ask  release\.flow:7:3  \d+\.\d\ds · answered "ship" \(reused\)', line
    ), line


def test_reuse_of_a_stopped_run_takes_the_answer_given_while_it_was_stopped(stopped):
    """``flowc run --reuse r1`` straight after ``flowc answer`` (r1 never resumed): the answer
    is only r1's claim, no recorded operation yet; the reusing run takes it all the same."""
    # a question asked again would wait 3s, then take its default "hold", not hang the test
    (stopped / "flow.toml").write_text('[durable]\nask_timeout = "3s"\n')
    answered = _cli("answer", "r1", "E1", "ship")
    assert answered.exit_code == 0, answered.output

    again = _cli("run", "--reuse", "r1", "--run-id", "r2", "release.flow")
    assert again.exit_code == 0, again.output
    assert "answer with" not in again.stderr and "? [" not in again.stderr
    assert again.stdout == '"ship"\n'
    (line,) = [line for line in again.stderr.splitlines() if line.startswith("✓ decide › ask")]
    assert line.endswith('answered "ship" (reused)'), line

    # r1 itself still takes its answer when resumed, as it would have without the reuse
    resumed = _cli("resume", "r1")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout == '"ship"\n'
