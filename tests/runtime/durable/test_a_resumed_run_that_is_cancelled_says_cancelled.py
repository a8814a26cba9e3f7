"""`flowc cancel` of a run that `flowc resume` took up (its first process killed while the run
waited on a question) ends it `cancelled` in all four accounts of the run — the resuming
process's console, its trace's `run_finished`, its `--json` result and `flowc runs` — as it does
for a run cancelled in its own process (test_durable_cancel.py; docs/durable.md "Starting,
resuming, inspecting").  It used to end `aborted` on the console and in the trace: the resuming
process took the cancel from the engine's record and shut the engine down while the run's root,
on the engine's own loop, was still in its wait, which the shutdown then cancelled."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from support.durable_questions import flowc, start_flowc, wait_asked

#: One question that waits for ever: only a cancel ends the run.
PLAN = """\
version: 1
name: waiter
steps:
  - id: E0
    tool_name: ask
    input: {question: "Go?"}
finish: {mode: output, output: "{{ E0.answer }}"}
"""


def _wait_for_text(path: Path, text: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while text not in (path.read_text() if path.exists() else ""):
        assert proc.poll() is None, path.read_text()[-2000:]
        assert time.monotonic() < deadline, f"never printed {text!r}"
        time.sleep(0.05)


def test_a_resumed_run_cancelled_from_another_process_says_cancelled_everywhere(tmp_path):
    (tmp_path / "plan.yaml").write_text(PLAN)
    first = start_flowc(tmp_path, "run", "--durable", "--run-id", "cr", "plan.yaml")
    wait_asked(tmp_path / ".flowc" / "durable.sqlite", "cr", first)
    first.kill()  # kill -9: the run is left `stopped`, waiting on its question
    first.communicate(timeout=60)

    err_file = tmp_path / "resume.err"
    with err_file.open("wb") as err_out:
        resumed = subprocess.Popen(
            flowc("resume", "--json", "--trace", "t.jsonl", "cr"),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err_out,
        )
        try:
            _wait_for_text(err_file, "answer with", resumed)
            time.sleep(1.0)  # the recovered root is in its wait, not replaying up to it
            cancelled = subprocess.run(flowc("cancel", "cr"), cwd=tmp_path, capture_output=True)
            assert cancelled.returncode == 0, cancelled.stderr.decode()
            out, _ = resumed.communicate(timeout=120)
        finally:
            if resumed.poll() is None:
                resumed.kill()
    err = err_file.read_text()
    assert resumed.returncode == 1, err[-2000:]
    assert "Traceback" not in err and "run aborted" not in err, err[-2000:]
    assert "✗ E0" in err and "aborted: cancelled" not in err, err[-2000:]  # the step's line
    assert "run cancelled in " in err, err[-2000:]
    assert "error[aborted]: the run was cancelled (flowc cancel)" in err, err[-2000:]
    result = json.loads(out)
    assert (result["status"], result["error"]["code"]) == ("cancelled", "aborted"), result
    last = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[-1])
    assert (last["kind"], last["data"]["status"]) == ("run_finished", "cancelled"), last
    assert last["data"]["error"]["message"] == "the run was cancelled (flowc cancel)", last
    listed = subprocess.run(flowc("runs", "--json"), cwd=tmp_path, capture_output=True)
    (info,) = json.loads(listed.stdout)
    assert (info["run_id"], info["status"]) == ("cr", "cancelled")
