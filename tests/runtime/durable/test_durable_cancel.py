"""`flowc cancel RUN` stops a durable run for good, from another process: the run's own process
ends it with status ``cancelled`` (error code ``aborted``, no traceback) — its last console line,
its `--json` result and its trace's `run_finished` say so — and `flowc runs` lists it
`cancelled` too (one word everywhere: docs/durable.md "Starting, resuming, inspecting")."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support.durable_questions import flowc, flowc_in, start_flowc, wait_asked

#: Sixty questions of 1 s each: a cancel lands while one waits (the run notices it at its next
#: operation, within 1 s), long before the last would time out.
PLAN = "version: 1\nname: waiter\nsteps:\n" + "".join(
    f"  - id: E{i}\n    tool_name: ask\n"
    f'    input: {{question: "Go {i}?", when_unanswered: {{default: "no"}}}}\n'
    "    timeout: 1s\n"
    for i in range(60)
)


def test_a_cancelled_run_stops_and_is_listed_as_cancelled(tmp_path: Path):
    (tmp_path / "plan.yaml").write_text(PLAN)
    run = start_flowc(
        tmp_path, "run", "--durable", "--run-id", "c1", "--json", "--trace", "t.jsonl", "plan.yaml"
    )
    wait_asked(tmp_path / ".flowc" / "durable.sqlite", "c1", run)

    cancelled = subprocess.run(flowc("cancel", "c1"), cwd=tmp_path, capture_output=True)
    assert cancelled.returncode == 0, cancelled.stderr.decode()
    out, err = run.communicate(timeout=120)
    assert run.returncode == 1
    text = err.decode()
    assert "Traceback" not in text and "run aborted" not in text, text[-2000:]
    assert "run cancelled in " in text, text[-2000:]
    assert "error[aborted]: the run was cancelled (flowc cancel)" in text
    result = json.loads(out)
    assert result["status"] == "cancelled" and result["error"]["code"] == "aborted"
    last = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[-1])
    assert (last["kind"], last["data"]["status"]) == ("run_finished", "cancelled")

    listed = flowc_in(tmp_path, "runs", "--json")
    (info,) = json.loads(listed.stdout)
    assert (info["run_id"], info["status"]) == ("c1", "cancelled")

    unknown = flowc_in(tmp_path, "cancel", "nope")
    assert unknown.exit_code == 1
    assert "no durable run 'nope'" in unknown.stderr
