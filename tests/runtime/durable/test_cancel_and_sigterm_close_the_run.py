"""`flowc cancel` and SIGTERM close a durable run like any other end (round 41): real `flowc`
processes, a scripted model server on loopback, real signals.

- cancelled in the middle of a parallel map of agents, the run's process still writes
  `run_finished` (status `cancelled`) to its trace, ends the map's step (✗, not ✓) and prints
  `run cancelled in …`; every model call that was answered is in the run's record (`runs show`)
  and in the usage of `run_finished` alike; an item whose model request is still out when the
  map stops is cancelled in the process (its request closed, its step ended in the trace)
  before `run_finished`: nothing is sent or answered after it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from support.chat_server import ChatServer, Reply, answer
from support.durable_questions import flowc, flowc_in, start_flowc, wait_asked
from support.local_provider import KEY_ENV, local_config

MAP_FLOW = """\
flow m "map"
type R { n: int }
use agent "w" as w
stage s -> R[] {
  parallel map [1,2,3,4,5,6,7,8,9,10] as i limit 3 {
    agent(w) { task "item ${i}" tools none expect R }
  }
}
"""


def _workdir(tmp_path: Path, server: ChatServer) -> dict[str, str]:
    (tmp_path / "flow.toml").write_text(local_config(server.url))
    return {**os.environ, **KEY_ENV}


def _events(trace: Path) -> list[dict]:
    return [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]


def test_a_run_cancelled_mid_map_closes_its_trace_and_keeps_its_answered_calls(tmp_path):
    arrived: list[float] = []
    released = threading.Event()
    held = threading.Event()  # the in-flight items' replies: only after the test ends

    def reply(request: object) -> Reply:
        arrived.append(time.time())
        if len(arrived) > 4:  # the second wave's last two: still out when the map stops
            held.wait(60)
        elif len(arrived) > 3:  # the second wave's first is answered once the cancel landed
            released.wait(60)
        return answer({"n": 1}, delay=0.2)

    with ChatServer(reply) as server:
        try:
            env = _workdir(tmp_path, server)
            (tmp_path / "m.flow").write_text(MAP_FLOW)
            run = start_flowc(
                tmp_path, "run", "m.flow", "--durable", "--run-id", "cm", "--trace", "t.jsonl",
                env=env,
            )  # fmt: skip
            deadline = time.monotonic() + 120
            while len(arrived) < 6:  # the map's second wave is out
                assert run.poll() is None, run.communicate()[1].decode()[-2000:]
                assert time.monotonic() < deadline, "the map never started its sixth item"
                time.sleep(0.05)
            cancelled = subprocess.run(
                flowc("cancel", "cm"), cwd=tmp_path, env=env, capture_output=True
            )
            released.set()
            assert cancelled.returncode == 0, cancelled.stderr.decode()
            _, err_bytes = run.communicate(timeout=120)
            # the fourth's reply (let go as the cancel landed, 0.2 s late) is logged by the
            # server whether or not the ended process still took it: wait for it, not the held
            deadline = time.monotonic() + 30
            while len(server.log) < 4 and time.monotonic() < deadline:
                time.sleep(0.05)
            replied = [entry["sent"] for entry in server.log]  # before the held ones' turn
        finally:
            held.set()
    err = err_bytes.decode()
    assert run.returncode == 1, err[-2000:]
    assert "run cancelled in " in err, err[-2000:]
    assert "Traceback" not in err
    assert "✓ s › map" not in err and "✗ s › map" in err, err[-2000:]
    # every item's line comes before the run's last line: none goes on after it
    assert err.index("run cancelled in ") > max(err.rfind("✗ s › item"), err.rfind("✓ s › item"))

    events = _events(tmp_path / "t.jsonl")
    last = events[-1]
    assert last["kind"] == "run_finished", last
    assert last["data"]["status"] == "cancelled"
    assert "cancelled" in last["data"]["error"]["message"]
    (map_end,) = [e for e in events if e["kind"] == "step_finished" and e["path"] == "E0"]
    assert map_end["data"].get("aborted") or map_end["data"].get("error")
    # the items whose requests were out when the map stopped ended in the trace, cancelled:
    # every step started has finished before `run_finished`
    started = {e["path"] for e in events if e["kind"] == "step_started"}
    finished = {e["path"] for e in events if e["kind"] == "step_finished"}
    assert started == finished, sorted(started - finished)
    # nothing was sent after the run ended, and no reply came after it: the two requests
    # still held were closed by the process (their replies, let go once it ended, found the
    # connection gone). The fourth, let go as the cancel landed, is answered or cancelled in
    # flight (the process watches the cancel while a call is out: CANCEL_POLL_S), whichever
    # comes first: the model calls answered are the three or four the trace has
    ended = last["time"]
    assert len(arrived) == 6 and max(arrived) < ended, (arrived, ended)
    sent = [t for t in replied if t is not None]
    assert len(replied) == 4 and len(sent) >= 3 and all(t < ended for t in sent), replied
    answered = [e for e in events if e["kind"] == "model_call"]
    assert len(answered) in (3, 4) and len(answered) <= len(sent), answered
    assert last["data"]["usage"]["inferences"] == len(answered)
    shown = flowc_in(tmp_path, "runs", "show", "cm", "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["cost"]["inferences"] == len(answered), shown.stdout


LATE_TOOLS = """\
import os, time

from agentflow import tool


@tool
def slow(n: int) -> int:
    \"\"\"Say it started (a marker file), then wait for the test's go.\"\"\"
    open(os.environ["MARK"], "w").close()
    while not os.path.exists(os.environ["GO"]):
        time.sleep(0.02)
    return n + 1
"""

LATE_FLOW = """\
flow late "a cancel during the last call"
extern tool user__slow(n: int) -> int
stage s -> int {
  let a = user__slow(n: 1)
  let b = a * 2
  return b + 1
}
"""


def test_a_cancel_that_lands_during_the_last_call_gives_one_account(tmp_path):
    """`flowc cancel` lands while the run's last tool call runs and only pure steps remain:
    the cancel wins — the run ends `cancelled` with no output in its console, its trace, its
    `--json` result and its record (`runs show`) alike (it used to finish `ok` with its output
    on the console and in the trace, and `cancelled` with that output in `--json`)."""
    (tmp_path / "tools.py").write_text(LATE_TOOLS)
    (tmp_path / "late.flow").write_text(LATE_FLOW)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    mark, go = tmp_path / "started", tmp_path / "go"
    env = {**os.environ, "MARK": str(mark), "GO": str(go), "NO_COLOR": "1"}
    run = start_flowc(
        tmp_path, "run", "late.flow", "--durable", "--run-id", "late", "--json",
        "--trace", "t.jsonl", env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not mark.exists():  # the last call runs
        assert run.poll() is None, run.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.02)
    cancelled = subprocess.run(flowc("cancel", "late"), cwd=tmp_path, env=env, capture_output=True)
    go.touch()
    assert cancelled.returncode == 0, cancelled.stderr.decode()
    out, err_bytes = run.communicate(timeout=120)
    err = err_bytes.decode()
    assert run.returncode == 1, err[-2000:]
    assert "run cancelled in " in err and "run ok" not in err, err[-2000:]
    assert "error[aborted]: the run was cancelled (flowc cancel)" in err, err[-2000:]
    result = json.loads(out)
    assert (result["status"], result["output"]) == ("cancelled", None), result
    assert result["error"]["code"] == "aborted"
    last = _events(tmp_path / "t.jsonl")[-1]
    assert last["kind"] == "run_finished", last
    assert (last["data"]["status"], last["data"]["output"]) == ("cancelled", None), last
    shown = flowc_in(tmp_path, "runs", "show", "late", "--json")
    info = json.loads(shown.stdout)
    assert (info["status"], info["output"]) == ("cancelled", None), info
    assert info["error"]["code"] == "aborted", info


ASK_FLOW = """\
flow askit "ask"
stage s -> int {
  let a = ask "How many?" expect int default 0
  let b = ask "Pick" expect text default "x"
  return a
}
"""


def _last_change(cwd: Path, run_id: str) -> float:
    shown = flowc_in(cwd, "runs", "show", run_id, "--json")
    assert shown.exit_code == 0, shown.stderr
    return float(json.loads(shown.stdout)["updated_at"])


def test_sigterm_to_flowc_resume_ends_the_run_aborted_as_it_ends_flowc_run(tmp_path):
    """`flowc resume` of a run waiting on a question shares `flowc run`'s signal handling: a
    SIGTERM stops the resumed run (`run aborted in …`, `interrupted by SIGTERM`, exit 143),
    closes the resume's trace with `run_finished` and records the run `aborted`; the question
    step stopped is shown ✗, not ✓.  An answer given while the run was stopped moves its
    `last change` (`runs show`)."""
    db = tmp_path / ".flowc" / "durable.sqlite"
    (tmp_path / "ask.flow").write_text(ASK_FLOW)
    first = start_flowc(tmp_path, "run", "ask.flow", "--durable", "--run-id", "kq")
    wait_asked(db, "kq", first, "E0")
    first.kill()  # its process dies: the run is `stopped`
    first.communicate()
    before = _last_change(tmp_path, "kq")
    answered = subprocess.run(flowc("answer", "kq", "E0", "7"), cwd=tmp_path, capture_output=True)
    assert answered.returncode == 0, answered.stderr.decode()
    assert _last_change(tmp_path, "kq") > before  # an answer is a change of the run

    resumed = start_flowc(tmp_path, "resume", "kq", "--trace", "resume.jsonl")
    wait_asked(db, "kq", resumed, "E1")  # the resumed run waits on its second question
    time.sleep(0.3)  # in its wait, not just publishing the question
    resumed.send_signal(signal.SIGTERM)
    _, err_bytes = resumed.communicate(timeout=120)
    err = err_bytes.decode()
    assert resumed.returncode == 143, err[-2000:]
    assert "run aborted in " in err and "interrupted by SIGTERM" in err, err[-2000:]
    assert "Traceback" not in err
    assert "✗ s › b = ask" in err and "✓ s › b = ask" not in err, err[-2000:]

    last = _events(tmp_path / "resume.jsonl")[-1]
    assert last["kind"] == "run_finished" and last["data"]["status"] == "aborted", last
    listed = flowc_in(tmp_path, "runs", "--json")
    (info,) = json.loads(listed.stdout)
    assert (info["run_id"], info["status"]) == ("kq", "aborted")


def test_sigterm_during_flowc_resumes_start_up_ends_the_run_aborted(tmp_path):
    """A SIGTERM that reaches `flowc resume` while it starts up — it holds the run's lock, its
    engine is open, it has not taken the run up yet — ends the run as a SIGTERM during the run
    does: `interrupted by SIGTERM` (exit 143), the resume's trace closed with `run_finished`,
    the run recorded `aborted` (it was left `stopped`: the start-up was cancelled).

    The signal lands in the start-up, not in a race with it, through an internal hook of the
    tests: with ``_AGENTFLOW_RESUME_STARTUP_PAUSE=FILE`` in its environment, `flowc resume`
    creates FILE at that point and waits there until a signal has come
    (runtime/durable/execution.py ``STARTUP_PAUSE_ENV``)."""
    db = tmp_path / ".flowc" / "durable.sqlite"
    (tmp_path / "ask.flow").write_text(ASK_FLOW)
    first = start_flowc(tmp_path, "run", "ask.flow", "--durable", "--run-id", "sq")
    wait_asked(db, "sq", first, "E0")
    first.kill()  # its process dies: the run is `stopped`
    first.communicate()

    paused = tmp_path / "paused"
    env = {**os.environ, "_AGENTFLOW_RESUME_STARTUP_PAUSE": str(paused)}
    resumed = start_flowc(tmp_path, "resume", "sq", "--trace", "resume.jsonl", env=env)
    deadline = time.monotonic() + 120
    while not paused.exists():
        assert resumed.poll() is None, resumed.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "flowc resume never reached its start-up pause"
        time.sleep(0.02)
    resumed.send_signal(signal.SIGTERM)
    _, err_bytes = resumed.communicate(timeout=120)
    err = err_bytes.decode()
    assert resumed.returncode == 143, err[-2000:]
    assert "interrupted by SIGTERM" in err and "Traceback" not in err, err[-2000:]
    last = _events(tmp_path / "resume.jsonl")[-1]
    assert last["kind"] == "run_finished" and last["data"]["status"] == "aborted", last
    listed = flowc_in(tmp_path, "runs", "--json")
    (info,) = json.loads(listed.stdout)
    assert (info["run_id"], info["status"]) == ("sq", "aborted"), info


def test_sigterm_to_flowc_redrive_ends_the_new_run_aborted_as_it_ends_flowc_run(tmp_path):
    """`flowc redrive` runs on `flowc run`'s loop too: a SIGTERM while the new run waits on a
    question stops it (`interrupted by SIGTERM`, exit 143), closes its trace with
    `run_finished` and records it `aborted` — not left `stopped` with its trace open."""
    db = tmp_path / ".flowc" / "durable.sqlite"
    (tmp_path / "ask.flow").write_text(ASK_FLOW)
    first = start_flowc(tmp_path, "run", "ask.flow", "--durable", "--run-id", "rq")
    wait_asked(db, "rq", first, "E0")
    cancelled = subprocess.run(flowc("cancel", "rq"), cwd=tmp_path, capture_output=True)
    assert cancelled.returncode == 0, cancelled.stderr.decode()
    first.communicate(timeout=120)

    again = start_flowc(tmp_path, "redrive", "rq", "--trace", "redrive.jsonl")
    assert again.stderr is not None
    line = again.stderr.readline().decode()
    while line and not line.startswith("run id: "):
        line = again.stderr.readline().decode()
    new_id = line.split()[2]
    assert new_id.startswith("rq~"), line
    wait_asked(db, new_id, again, "E0")
    time.sleep(0.3)  # in its wait, not just publishing the question
    again.send_signal(signal.SIGTERM)
    _, err_bytes = again.communicate(timeout=120)
    err = err_bytes.decode()
    assert again.returncode == 143, err[-2000:]
    assert "interrupted by SIGTERM" in err and "Traceback" not in err, err[-2000:]
    last = _events(tmp_path / "redrive.jsonl")[-1]
    assert last["kind"] == "run_finished" and last["data"]["status"] == "aborted", last
    listed = flowc_in(tmp_path, "runs", "--json")
    statuses = {i["run_id"]: i["status"] for i in json.loads(listed.stdout)}
    assert statuses[new_id] == "aborted", statuses
