"""``flowc redrive RUN`` of a run started with ``--model test`` answers its new run with the test
model again, as ``flowc resume`` does (RUN's spec records it), so a run that needed no model
configuration to start needs none to be redriven; ``--model`` chooses another answerer.  (The
web console's redrive button runs ``flowc redrive RUN``: the same command.)"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
flow refine "Refine"
input { topic: text }
type Review { approved: bool, notes: text }
use agent "critic" as critic

stage polished -> text {
  loop up to 2 as round, d = input.topic {
    let review = agent(critic) { task "Approve ${d}" tools none expect Review }
    return d
  } until false else fail "no approval"
}
"""


def _flowc(*args: str) -> tuple[int, str]:
    try:
        done = CliRunner().invoke(main, list(args))
    finally:
        shutdown()
    return done.exit_code, done.stderr


def test_redrive_of_a_test_model_run_uses_the_test_model_and_takes_model(
    tmp_path: Path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "refine.flow").write_text(FLOW)
    (tmp_path / "flow.toml").write_text("")  # no model configured
    code, said = _flowc(
        "run", "--durable", "refine.flow", "--model", "test", "--input", '{"topic": "x"}',
        "--run-id", "rf1",
    )  # fmt: skip
    assert code == 1 and "error[loop_exhausted]" in said, said
    code, said = _flowc("redrive", "rf1")
    assert "no model is configured" not in said, said
    assert code == 1 and "(redrive of rf1)" in said and "error[loop_exhausted]" in said, said
    # its progress as `flowc run` shows it: the steps it ran and how the run ended
    assert "▶ polished" in said and "run error in " in said, said
    code, said = _flowc("redrive", "rf1", "--model", "test:7")
    assert code == 1 and "(redrive of rf1)" in said and "error[loop_exhausted]" in said, said
    code, said = _flowc("redrive", "rf1", "--model", "gpt")
    assert code == 2 and "--model 'gpt'" in said and "Traceback" not in said, said
