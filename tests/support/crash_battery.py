"""A crash battery over a durable map-with-agents run (issue 28): real ``flowc run --durable`` /
``flowc resume`` processes with ``--trace``, killed with SIGKILL at random points (some killed
again while resuming: double crashes), against the scripted model server on loopback, which logs
when each request came and when its reply was sent.  The suite runs a few kills
(tests/runtime/durable/test_crash_battery.py); ``bench/crash_battery.py`` runs dozens.

Measured per trial, against an uninterrupted durable run of the same plan:

- the output (must equal the uninterrupted one);
- the trace's finished events (``tool_finished``, ``model_call``, ``step_finished``) by kind and
  step path: **duplicated** (more than the uninterrupted trace holds) and **lost** (fewer);
- every finished event the trace held at a kill is for an operation recorded at that kill
  (a tool call's result recorded before an event says it finished);
- model requests **repeated whose reply had been sent before the kill** (server log vs the
  kill's time), and how long after its reply each model call was recorded (the database's
  ``completed_at`` of the operation vs the reply's ``sent``).
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow.testing.chat_server import TEST_API_KEY, ChatServer, answer, tool_calls

PLAN = """\
version: 1
name: battery
input_schema: {type: object}
steps:
  - id: E0
    tool_name: user__note
    input: {n: 0}
  - id: E1
    tool_name: map
    input:
      over: "{{ input.xs }}"
      concurrency: 4
      do:
        tool_name: plan__item
        input: {x: "{{ item }}"}
  - id: E2
    tool_name: user__note
    input: {n: 99}
finish: {mode: output, output: "{{ {first: E0, items: E1, last: E2} }}"}
plans:
  item:
    name: item
    steps:
      - id: S0
        tool_name: user__note
        input: {n: "{{ input.x }}"}
      - id: S1
        tool_name: agent
        input:
          prompt: "Process item {{ input.x }} (first step gave {{ S0 }})."
          tools: [user__note]
          max_iterations: 3
          output_schema:
            type: object
            properties: {v: {type: integer}, x: {type: integer}}
            required: [v, x]
    finish: {mode: output, output: "{{ {x: input.x, s0: S0, agent: S1.output} }}"}
"""

TOOLS = """\
import os, time


def note(n: int) -> int:
    \"\"\"Note n in the side-effect log and return 2n.\"\"\"
    with open(os.environ["NOTE_LOG"], "a") as f:
        f.write(f"start {n} {time.time()}\\n")
    time.sleep(float(os.environ.get("NOTE_SLEEP", "0.05")))
    return 2 * n
"""

#: The finished events a trace must hold once per kind and step path.
FINISHED = ("tool_finished", "model_call", "step_finished")

_ITEM = re.compile(r"Process item (\d+)")


def model(body: dict[str, Any]) -> object:
    """Round 1 calls user__note(1000 + x); round 2 answers with its result."""
    messages = body["messages"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    x = int(_ITEM.search(user).group(1))  # type: ignore[union-attr]
    results = [m for m in messages if m["role"] == "tool"]
    if not results:
        return tool_calls(("user__note", {"n": 1000 + x}, f"call_{x}"))
    return answer({"v": int(results[-1]["content"]), "x": x})


def request_key(body: dict[str, Any]) -> tuple[int, int]:
    """(item, round) of a model request."""
    messages = body["messages"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    x = int(_ITEM.search(user).group(1))  # type: ignore[union-attr]
    return x, 1 + sum(1 for m in messages if m["role"] == "tool")


def project_files(
    project: Path, server: ChatServer, plan: str, tools: str, *, synchronous: str = "full"
) -> dict[str, str]:
    """Write ``plan.yaml``, ``tools.py`` (a module whose ``note`` appends to ``$NOTE_LOG``) and
    a ``flow.toml`` for ``server`` into the directory ``project`` (made here), its database at
    ``[durable] synchronous`` level ``synchronous``; the environment its ``flowc`` processes
    run in."""
    project.mkdir(parents=True)
    (project / "tools.py").write_text(tools)
    (project / "plan.yaml").write_text(plan)
    config = server.config_text(retries=4) + '\n[tools]\nmodules = ["tools.py"]\n'
    if synchronous != "full":  # the default; a caller may add a [durable] table of its own
        config += f'\n[durable]\nsynchronous = "{synchronous}"\n'
    (project / "flow.toml").write_text(config)
    return {
        **os.environ,
        "SCRIPTED_API_KEY": TEST_API_KEY,
        "NOTE_LOG": str(project / "notes.log"),
        "NO_COLOR": "1",
    }


def trace_events(trace: Path) -> Iterator[dict[str, Any]]:
    """The events of a ``--trace`` file; a line cut by a kill is skipped (none when there is
    no file yet)."""
    if not trace.exists():
        return
    for line in trace.read_text(encoding="utf-8").split("\n"):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        yield event


def traced_notes(trace: Path) -> Counter[int]:
    """How many ``tool_finished`` events of ``user__note`` the trace holds per note ``n`` (the
    tool returns 2n)."""
    found: Counter[int] = Counter()
    for event in trace_events(trace):
        data = event.get("data") or {}
        if event.get("kind") == "tool_finished" and data.get("tool_name") == "user__note":
            if isinstance(data.get("result"), int):
                found[data["result"] // 2] += 1
    return found


def note_of(name: str) -> int | None:
    """The note (n) of a recorded ``user__note`` operation named ``name`` (``E0``: 0, ``E2``:
    99, an item x's first step: x, its agent's call: 1000 + x, a one-call map item ``E3/do.i``:
    2001 + i); None for any other operation."""
    if "/tool:user__note" not in name:
        return None
    path = name.split("/tool:", 1)[0]
    if path == "E0":
        return 0
    if path == "E2":
        return 99
    if path.startswith("E3/do."):  # a one-call map item: recorded in the run itself
        return 2000 + int(path.split(".")[1]) + 1
    m = re.match(r"E1/do\.(\d+)/(S0|S1/agent\.1/user__note)$", path)
    if m is None:
        return None
    x = int(m.group(1)) + 1
    return x if m.group(2) == "S0" else 1000 + x


@dataclass
class Figures:
    """What a battery measured (sums over its trials)."""

    trials: int = 0
    kills: int = 0
    double_crashes: int = 0
    wrong_outputs: int = 0
    duplicated_finished: int = 0
    lost_finished: int = 0
    finished_before_recorded: int = 0
    repeated_after_reply: int = 0
    repeated_in_flight: int = 0
    #: seconds from a model reply's sending to its operation's record, over every call
    record_lag: list[float] = field(default_factory=list)
    #: seconds between a reply's sending and a kill that made its request go again
    repeat_gaps: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The figures as JSON data."""
        lag = sorted(self.record_lag)

        def pct(q: float) -> float | None:
            return round(lag[min(len(lag) - 1, int(q * len(lag)))], 4) if lag else None

        return {
            "trials": self.trials,
            "kills": self.kills,
            "double_crashes": self.double_crashes,
            "wrong_outputs": self.wrong_outputs,
            "duplicated_finished_events": self.duplicated_finished,
            "lost_finished_events": self.lost_finished,
            "finished_events_before_their_record": self.finished_before_recorded,
            "model_requests_repeated_after_their_reply": self.repeated_after_reply,
            "model_requests_repeated_in_flight": self.repeated_in_flight,
            "repeat_gaps_s": [round(g, 4) for g in self.repeat_gaps],
            "model_record_lag_s": {"p50": pct(0.5), "p99": pct(0.99), "max": pct(1.0)},
            "problems": self.problems[:20],
        }


class Battery:
    """Trials in ``root`` (one project directory each) against one scripted model server."""

    def __init__(
        self,
        root: Path,
        server: ChatServer,
        *,
        items: int = 8,
        seed: int = 0,
        synchronous: str = "full",
    ):
        self.root = root
        self.synchronous = synchronous
        self.server = server
        self.items = items
        self.rng = random.Random(seed)
        self.figures = Figures()
        server.script(model)
        self.reference: Counter[tuple[str, str]] | None = None
        self.expected: Any = None

    # ----------------------------------------------------------------- a project

    def project(self, name: str) -> tuple[Path, dict[str, str]]:
        project = self.root / name
        files = project_files(project, self.server, PLAN, TOOLS, synchronous=self.synchronous)
        return project, files

    def argv(self, run_id: str, *, resume: bool) -> list[str]:
        trace = ("--trace", "trace.jsonl")
        if resume:
            return [sys.executable, "-m", "agentflow", "resume", run_id, *trace]
        xs = json.dumps({"xs": list(range(1, self.items + 1))})
        return [sys.executable, "-m", "agentflow", "run", "--durable", "--run-id", run_id,
                "plan.yaml", "--input", xs, *trace]  # fmt: skip

    # ----------------------------------------------------------------- measuring

    @staticmethod
    def finished(trace: Path) -> Counter[tuple[str, str]]:
        """The trace's finished events by (kind, step path); a line cut by a kill is skipped."""
        found: Counter[tuple[str, str]] = Counter()
        for event in trace_events(trace):
            if event.get("kind") in FINISHED:
                found[(event["kind"], event["path"])] += 1
        return found

    @staticmethod
    def operations(db: Path) -> list[tuple[str, int | None]]:
        """Every recorded operation: (name, completed at, epoch ms)."""
        if not db.exists():
            return []
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            found = list(
                conn.execute("select function_name, completed_at_epoch_ms from operation_outputs")
            )
            tables = {row[0] for row in conn.execute("select name from sqlite_master")}
            if "agentflow_items" in tables:  # one-call units' records (runtime/durable/items.py)
                found += conn.execute(
                    "select name, cast(finished_at * 1000 as integer) from agentflow_items"
                )
            return found

    def recorded_notes(self, db: Path) -> set[int]:
        """The notes (n) whose tool call is recorded as finished."""
        notes = (note_of(name) for name, _ in self.operations(db))
        return {n for n in notes if n is not None}

    # ----------------------------------------------------------------- trials

    def uninterrupted(self) -> None:
        """The reference: the output and finished events of a durable run nobody kills."""
        project, env = self.project("reference")
        done = subprocess.run(
            self.argv("reference", resume=False), cwd=project, env=env, capture_output=True,
            timeout=600,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(done.stderr.decode()[-3000:])
        self.expected = json.loads(done.stdout)
        self.reference = self.finished(project / "trace.jsonl")

    def _wait_and_kill(
        self, proc: subprocess.Popen[bytes], project: Path, point: tuple[str, float]
    ) -> float | None:
        """Kill ``proc`` at ``point`` (``("model", n)``: n more model requests came; ``("tool",
        n)``: n more tool calls began; ``("time", s)``: s seconds passed); the kill's time, or
        None when the process ended first."""
        log = project / "notes.log"

        def tools() -> int:
            return len(log.read_text().splitlines()) if log.exists() else 0

        kind, at = point
        base = len(self.server.requests) if kind == "model" else tools()
        started = time.monotonic()
        deadline = started + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if kind == "model":
                reached = len(self.server.requests) - base >= at
            elif kind == "tool":
                reached = tools() - base >= at
            else:
                reached = time.monotonic() - started >= at
            if reached:
                killed_at = time.time()
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return killed_at
            time.sleep(0.005)
        proc.wait(timeout=120)
        return None

    def point(self) -> tuple[str, float]:
        """A random kill point in the run's work: after so many model requests came or tool
        calls began (of the process being killed)."""
        kind = self.rng.choice(["model", "tool"])  # a run makes 2n + 2 tool calls, 2n requests
        return kind, float(self.rng.randint(1, 2 * self.items + (1 if kind == "tool" else -1)))

    @staticmethod
    def started(db: Path, run_id: str) -> bool:
        """True when the run is recorded (a process killed before that left nothing to
        resume: it is started again)."""
        if not db.exists():
            return False
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            found = conn.execute(
                "select 1 from workflow_status where workflow_uuid = ?", (run_id,)
            ).fetchall()
        return bool(found)

    def trial(self, number: int, *, double: bool) -> None:
        """One run: killed once (``double``: killed again while resuming), then resumed to
        its end; its figures added."""
        assert self.reference is not None
        f = self.figures
        run_id = f"trial-{number}"
        project, env = self.project(run_id)
        db = project / ".flowc" / "durable.sqlite"
        trace = project / "trace.jsonl"
        first_request = len(self.server.requests)
        kills: list[float] = []
        # a double crash: the resuming process killed at its first new work (or the one after)
        again = (self.rng.choice(["model", "tool"]), float(self.rng.randint(1, 2)))
        points = [self.point()] + ([again] if double else [])
        resume = False
        for point in points:
            proc = subprocess.Popen(
                self.argv(run_id, resume=resume), cwd=project, env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
            killed_at = self._wait_and_kill(proc, project, point)
            resume = self.started(db, run_id)
            if killed_at is None:
                break  # it ended before the point
            kills.append(killed_at)
            f.kills += 1
            # a finished event in the trace is for a call recorded as finished
            early = set(traced_notes(trace)) - self.recorded_notes(db)
            if early:
                f.finished_before_recorded += len(early)
                f.problems.append(f"{run_id}: finished before recorded: {sorted(early)}")
        if len(kills) == 2:
            f.double_crashes += 1
        f.trials += 1
        done = subprocess.run(
            self.argv(run_id, resume=self.started(db, run_id)), cwd=project, env=env,
            capture_output=True, timeout=600,
        )  # fmt: skip
        if done.returncode != 0:
            f.wrong_outputs += 1
            f.problems.append(f"{run_id}: resume failed: {done.stderr.decode()[-500:]}")
            return
        if json.loads(done.stdout) != self.expected:
            f.wrong_outputs += 1
            f.problems.append(f"{run_id}: output differs")
        got = self.finished(trace)
        for key in set(got) | set(self.reference):
            extra = got[key] - self.reference[key]
            if extra > 0:
                f.duplicated_finished += extra
                f.problems.append(f"{run_id}: duplicated {key} x{extra}")
            elif extra < 0:
                f.lost_finished += -extra
                f.problems.append(f"{run_id}: lost {key} x{-extra}")
        self._requests(run_id, first_request, kills, db)

    def _requests(self, run_id: str, first: int, kills: list[float], db: Path) -> None:
        """Repeated model requests against the kills; each call's record lag."""
        f = self.figures
        seen: dict[tuple[int, int], dict[str, Any]] = {}
        for entry in sorted(
            (e for e in self.server.log if e["index"] >= first), key=lambda e: e["received"]
        ):
            key = request_key(self.server.requests[entry["index"]])
            earlier = seen.get(key)
            if earlier is None:
                seen[key] = entry
                continue
            sent = earlier["sent"]
            between = [k for k in kills if earlier["received"] <= k <= entry["received"]]
            if sent is not None and between and sent < between[0]:
                f.repeated_after_reply += 1
                f.repeat_gaps.append(between[0] - sent)
                f.problems.append(
                    f"{run_id}: item {key[0]} round {key[1]} asked again: its reply was sent "
                    f"{between[0] - sent:.3f} s before the kill"
                )
            else:
                f.repeated_in_flight += 1
            seen[key] = entry
        recorded: dict[tuple[int, int], int] = {}
        for name, completed in self.operations(db):
            m = re.match(r"E1/do\.(\d+)/S1/model:\w+#(\d+)$", name)
            if m and completed:
                recorded[(int(m.group(1)) + 1, int(m.group(2)))] = completed
        for key, entry in seen.items():
            if key in recorded and entry["sent"] is not None:
                f.record_lag.append(max(0.0, recorded[key] / 1000.0 - entry["sent"]))


def run_battery(
    root: Path,
    *,
    kills: int,
    doubles: int,
    items: int = 8,
    seed: int = 0,
    synchronous: str = "full",
) -> Figures:
    """Trials until ``kills`` SIGKILLs were made, ``doubles`` of the trials double crashes;
    the runs' database at ``[durable] synchronous`` level ``synchronous`` (a SIGKILL is a
    process crash: every level must pass it)."""
    with ChatServer() as server:
        battery = Battery(root, server, items=items, seed=seed, synchronous=synchronous)
        battery.uninterrupted()
        number = 0
        while battery.figures.kills < kills:
            number += 1
            battery.trial(number, double=battery.figures.double_crashes < doubles)
        return battery.figures
