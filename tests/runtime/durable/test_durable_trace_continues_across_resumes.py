"""A durable run's spans form one trace across its processes: `flowc run --durable --otel`
killed with SIGKILL in the middle of a step, then `flowc resume --otel`, both exporting to a
real OTLP/HTTP receiver on loopback (tests/support/otlp_receiver.py).  Checked: one trace id,
one run span (exported by the process that ended the run, starting when the run started), a
complete tree (every parent id was exported), no step replayed from the record exported twice,
the resumed process's spans marked ``agentflow.resume.attempt``, and no secret in any
attribute with content capture on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

from support.otlp_receiver import OtlpReceiver

SECRET = "sk-resume-trace-secret-0123456789"

PLAN = """\
version: 1
name: resumable
input_schema: {type: object}
steps:
  - id: E0
    tool_name: user__note
    input: {n: 0}
    meta: {stage: first}
  - id: E1
    tool_name: user__note
    input: {n: 1}
    meta: {stage: first}
  - id: E2
    tool_name: user__note
    input: {n: 2}
    meta: {stage: second}
finish: {mode: output, output: "{{ [E0, E1, E2] }}"}
"""

TOOLS = """\
import os, time
from pathlib import Path


def note(n: int) -> str:
    \"\"\"Log n; the first call with n = 1 hangs (the test kills its process there).\"\"\"
    log = Path(os.environ["NOTE_LOG"])
    with log.open("a") as f:
        f.write(f"start {n}\\n")
    marker = log.with_name("hung")
    if n == 1 and not marker.exists():
        marker.write_text("")
        time.sleep(60)
    return f"note {n} {os.environ['OPENAI_API_KEY']}"
"""


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


def test_a_durable_run_killed_and_resumed_exports_one_trace_with_one_run_span(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "plan.yaml").write_text(PLAN)
    (project / "tools.py").write_text(TOOLS)
    (project / "flow.toml").write_text(
        '[tools]\nmodules = ["tools.py"]\n\n[telemetry]\ncapture_content = true\n'
    )
    log = project / "notes.log"
    env = {k: v for k, v in os.environ.items() if k != "TRACEPARENT"}
    env.update(NOTE_LOG=str(log), OPENAI_API_KEY=SECRET, NO_COLOR="1")
    with OtlpReceiver() as receiver:
        first = subprocess.Popen(
            _flowc("run", "--durable", "plan.yaml", "--otel", receiver.url),
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # E0's spans exported (a durable run exports every second), E1 started: kill
            receiver.wait_for(
                lambda spans: any(_path(s) == "E0" and s.name == "user__note" for s in spans),
                timeout=40,
            )
            deadline = time.monotonic() + 20
            while "start 1" not in (log.read_text() if log.exists() else ""):
                assert time.monotonic() < deadline and first.poll() is None, first.stderr
                time.sleep(0.05)
            first.send_signal(signal.SIGKILL)
            _, err = first.communicate(timeout=10)
        finally:
            if first.poll() is None:
                first.kill()
        run_id = next(line for line in err.splitlines() if "run id:" in line)
        run_id = run_id.split("run id:", 1)[1].split()[0]
        before = {s.span_id for s in receiver.spans()}

        resumed = subprocess.run(
            _flowc("resume", run_id, "--otel", receiver.url),
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)[2].startswith("note 2")
        spans = receiver.wait_for(lambda spans: any(s.name.startswith("run ") for s in spans))

    assert len({s.trace_id for s in spans}) == 1  # one trace across both processes
    runs = [s for s in spans if s.name == "run resumable"]
    assert len(runs) == 1 and runs[0].parent_span_id == ""
    run = runs[0]
    assert run.attributes["agentflow.durable.run_id"] == run_id
    assert run.attributes["agentflow.run.status"] == "ok"
    assert run.attributes["agentflow.resume.attempt"] == 1
    assert ("resumed", {"agentflow.resume.attempt": 1}) in run.events

    # a complete tree: every parent was exported (the run and the stage open at the kill by
    # the resumed process, with the ids the first one gave their children)
    ids = {s.span_id for s in spans}
    assert len(ids) == len(spans)  # no span exported twice
    assert all(s.parent_span_id in ids for s in spans if s is not run)
    by_id = {s.span_id: s for s in spans}
    names = Counter(s.name for s in spans)
    assert names["stage first"] == names["stage second"] == 1
    # each step by its tool (a stage's step bound to no name; docs/observability.md "Span
    # names"), its path an attribute; E0 replayed from the record: not exported again
    steps = [s for s in spans if s.name == "user__note"]
    assert sorted(_path(s) for s in steps) == ["E0", "E1", "E2"], names
    assert names["execute_tool user__note"] == 3

    def step(path: str):
        return next(s for s in steps if _path(s) == path)

    assert by_id[step("E0").parent_span_id].name == "stage first"
    assert by_id[step("E1").parent_span_id].name == "stage first"
    assert by_id[step("E2").parent_span_id].name == "stage second"
    assert by_id[by_id[step("E0").parent_span_id].parent_span_id] is run
    assert step("E0").span_id in before and "agentflow.resume.attempt" not in step("E0").attributes
    assert step("E2").attributes["agentflow.resume.attempt"] == 1
    assert run.start <= step("E0").start and run.end >= step("E2").end

    # content capture on, yet the API key the tool returned appears nowhere
    texts = [json.dumps(s.attributes) + json.dumps(s.events) for s in spans]
    assert any("note 2 [redacted]" in t for t in texts)
    assert not any(SECRET[:12] in t for t in texts)


def _path(span) -> str | None:
    """The step path of a span (its ``agentflow.step.path`` attribute)."""
    return span.attributes.get("agentflow.step.path")
