"""``flowc answer RUN NAME VALUE`` takes the question's name in the `.flow` — the ``let`` its
answer is bound to (``decision``), or its stage — as well as its step path; a name that several
waiting questions have (the same ask in the items of a ``parallel map``) is refused with each
of them listed by its name and path, and the step path still answers one.  ``flowc runs`` and
``flowc answer``'s confirmation name a question as the `.flow` does, its path after; the
confirmation also says the value taken, as JSON (a choice given by its number: the choice).  (A real
``flowc run --durable`` waiting on its questions; ``flowc answer`` through click, which is
``api.answer_durable``, the web console's too.)"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from click.testing import CliRunner
from support.durable_questions import start_flowc

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
flow ship
input { items: text[] }
type Choice = "ship" | "hold"

stage review -> Choice[] {
  parallel map input.items as it limit 2 {
    let decision = ask "Ship ${it}?" expect Choice default "hold"
    return decision
  }
}

stage final -> bool {
  let go = ask "Publish?" expect bool default false
  return go
}
"""


def _questions(db: Path) -> set[str]:
    """The keys of the questions the units of run s1 published so far."""
    if not db.exists():
        return set()
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            rows = conn.execute(
                "select key from workflow_events where workflow_uuid like 's1%' "
                "and key like 'question:%'"
            ).fetchall()
    except sqlite3.OperationalError:
        return set()
    return {r[0] for r in rows}


def _wait(db: Path, proc, keys: set[str]) -> None:
    deadline = time.monotonic() + 120
    while not keys <= _questions(db):
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, f"never asked {keys}"
        time.sleep(0.05)


def _flowc(*args: str) -> tuple[int, str, str]:
    try:
        done = CliRunner().invoke(main, list(args))
    finally:
        shutdown()
    return done.exit_code, done.stdout, done.stderr


def test_answer_takes_the_let_name_and_refuses_an_ambiguous_one(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ship.flow").write_text(FLOW)
    (tmp_path / "flow.toml").write_text('[durable]\nask_timeout = "1h"\n')
    db = tmp_path / ".flowc" / "durable.sqlite"
    env = {**os.environ, "NO_COLOR": "1"}
    run = start_flowc(
        tmp_path, "run", "ship.flow", "--durable", "--run-id", "s1",
        "--input", '{"items": ["a", "b"]}', env=env,
    )  # fmt: skip
    try:
        _wait(db, run, {"question:E0/do.0", "question:E0/do.1"})
        code, listed, _ = _flowc("runs")
        assert code == 0
        assert '? [review › item 0 › decision = ask · E0/do.0] Ship a? ("ship" | "hold")' in listed
        code, _, said = _flowc("answer", "s1", "decision", "ship")
        assert code == 1
        assert said == (
            "error: `decision` names 2 questions run s1 waits on: "
            "review › item 0 › decision = ask · E0/do.0; "
            "review › item 1 › decision = ask · E0/do.1\n"
            "hint: name the one to answer, e.g. "
            "flowc answer s1 'decision[0]' VALUE (or its step path, E0/do.0)\n"
        )
        code, _, said = _flowc("answer", "s1", "E0/do.0", "1")  # the path still answers
        assert code == 0, said
        assert said == 'answered [review › item 0 › decision = ask · E0/do.0] Ship a? with "ship"\n'
        code, _, said = _flowc("answer", "s1", "decision", "hold")  # one left: the name is enough
        assert code == 0, said
        assert said == 'answered [review › item 1 › decision = ask · E0/do.1] Ship b? with "hold"\n'
        _wait(db, run, {"question:E1"})
        code, _, said = _flowc("answer", "s1", "nothing", "true")
        assert code == 1
        assert "has no question waiting at 'nothing' (waiting: final › go = ask · E1)" in said
        code, _, said = _flowc("answer", "s1", "final", "true")  # the stage's name
        assert code == 0 and said == "answered [final › go = ask · E1] Publish? with true\n", said
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err.decode()
        assert json.loads(out) is True  # the last stage's value
        code, _, said = _flowc("answer", "s1", "go", "false")  # by name, once answered
        assert code == 1
        assert "the question `go` of run s1 was already answered (true)" in said, said  # not E1
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(timeout=60)
