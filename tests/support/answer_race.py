"""Two `flowc answer` processes with different values racing for one question of a durable run,
``pairs`` times (issue 28): used by tests/runtime/durable/test_answer_race.py (a few pairs) and
bench/answer_race.py (a hundred).

One `flowc run --durable` asks ``pairs`` questions in a row (no timeout) and outputs the list
of its answers.  For each question two answer processes start, import the CLI, then wait on a
shared start file and call `flowc answer` at the same moment with the values ``a{i}`` and
``b{i}``.  A pair is right when exactly one says ``answered`` (exit 0), the other is told the
question was already answered with the winner's value (exit 1), and the run's output holds the
winner's value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from support.durable_questions import start_flowc, wait_asked

#: A `flowc answer` that starts the moment ``GO`` exists (its imports done before).
RACER = """\
import os, sys, time
from agentflow.cli import main
go = sys.argv[1]
open(go + "." + sys.argv[-1], "w").close()  # ready
while not os.path.exists(go):
    time.sleep(0.001)
sys.argv = ["flowc", "answer", *sys.argv[2:]]
main()
"""


def plan(pairs: int) -> str:
    """A plan asking ``pairs`` text questions ``E0`` … in a row, outputting their answers."""
    steps = "".join(
        f'  - id: E{i}\n    tool_name: ask\n    input: {{question: "Pick {i}?"}}\n'
        for i in range(pairs)
    )
    answers = ", ".join(f"E{i}.answer" for i in range(pairs))
    return (
        f"version: 1\nname: race\nsteps:\n{steps}"
        f'finish: {{mode: output, output: "{{{{ [{answers}] }}}}"}}\n'
    )


@dataclass
class RaceResult:
    """What ``pairs`` races gave: pairs right, pairs wrong (each explained), seconds."""

    pairs: int
    right: int = 0
    wrong: list[str] = field(default_factory=list)
    #: per pair: milliseconds between the two answers' ends (how close the race was)
    apart_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        """One line of figures."""
        apart = sorted(self.apart_ms)
        median = apart[len(apart) // 2] if apart else 0.0
        return (
            f"{self.pairs} pairs: {self.right} right (one answered, the other told), "
            f"{len(self.wrong)} wrong; answers ended a median {median:.0f} ms apart; "
            f"{self.seconds:.1f} s"
        )


def race(base: Path, pairs: int, run_id: str = "race", *, window: int = 3) -> RaceResult:
    """Run ``pairs`` races in a project made under ``base``; the racers of the next ``window``
    pairs start (and import the CLI) ahead of their turn."""
    start = time.monotonic()
    result = RaceResult(pairs)
    (base / "plan.yaml").write_text(plan(pairs))
    env = {**os.environ, "NO_COLOR": "1"}
    run = start_flowc(base, "run", "--durable", "--run-id", run_id, "plan.yaml", env=env)
    db = base / ".flowc" / "durable.sqlite"
    accepted: list[str | None] = []
    spawned: dict[int, list[subprocess.Popen]] = {}

    def spawn(i: int) -> None:  # the racers of pair i, importing while earlier pairs race
        if i < pairs and i not in spawned:
            spawned[i] = [
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        RACER,
                        str(base / f"go-{i}"),
                        run_id,
                        f"E{i}",
                        f"{v}{i}",
                    ],
                    cwd=base,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )  # fmt: skip
                for v in "ab"
            ]

    try:
        for i in range(pairs):
            for ahead in range(i, i + window):
                spawn(ahead)
            wait_asked(db, run_id, run, f"E{i}", poll=0.02)
            go = base / f"go-{i}"
            racers = spawned.pop(i)
            ready = [Path(f"{go}.{v}{i}") for v in "ab"]
            while not all(r.exists() for r in ready):  # both imported the CLI, now waiting
                if any(p.poll() is not None for p in racers):
                    break
                time.sleep(0.005)
            go.touch()
            outcomes = []
            for p in racers:
                _, err = p.communicate(timeout=120)
                outcomes.append((p.returncode, err.decode(), time.monotonic()))
            result.apart_ms.append(abs(outcomes[0][2] - outcomes[1][2]) * 1000)
            winners = [k for k, (rc, err, _) in enumerate(outcomes) if rc == 0]
            if len(winners) != 1:
                result.wrong.append(f"E{i}: {len(winners)} accepted: {outcomes}")
                accepted.append(None)
                continue
            win = winners[0]
            value = f"{'ab'[win]}{i}"
            rc, err, _ = outcomes[1 - win]
            told = "already answered" in err and json.dumps(value) in err
            if "answered [" not in outcomes[win][1] or rc != 1 or not told:
                result.wrong.append(f"E{i}: the loser was not told: {outcomes}")
                accepted.append(None)
                continue
            accepted.append(value)
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for left in spawned.values():  # a failed race: the racers not released
            for p in left:
                p.kill()
                p.wait()
    if run.returncode != 0:
        raise AssertionError(err.decode()[-2000:])
    used = json.loads(out)
    for i, (want, got) in enumerate(zip(accepted, used, strict=True)):
        if want is None:
            continue
        if want != got:
            result.wrong.append(f"E{i}: {want!r} was accepted, the run used {got!r}")
        else:
            result.right += 1
    result.seconds = time.monotonic() - start
    return result
