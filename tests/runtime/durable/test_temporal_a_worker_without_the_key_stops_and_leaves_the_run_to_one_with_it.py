"""A Temporal `flowc worker` whose environment lacks the API key a run needs neither ends the
run nor fails its workflow task again and again in silence: it stops (exit 1) with one error
naming the run, the key's message `flowc run` gives and what to do; the run is left as it was
(not ended), and a process with the key — here `flowc resume` — takes it up and finishes it
(docs/durable.md "Temporal"). Before, the worker said so once and then failed the task each
time Temporal handed it back, quietly, for as long as it ran."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from support.chat_server import TEST_API_KEY, answer
from support.durable_questions import NAPPING, kill_when_started
from support.fleet import flowc

NAPS = """\
import pathlib
import time


def nap(s: float) -> str:
    marker = pathlib.Path("napping")
    if not marker.exists():  # the first call naps until its process is killed
        marker.write_text("1")
        time.sleep(s)
    return "napped"
"""

SAID = (
    "error: worker w1 stopped: run keyless-t1 cannot be taken up by this process: the "
    "environment variable SCRIPTED_API_KEY"
)


def _status(project: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        flowc("runs", "--json"), cwd=project, env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    (run,) = [r for r in json.loads(done.stdout) if r["run_id"] == "keyless-t1"]
    return str(run["status"])


@pytest.mark.timeout(300)
def test_a_keyless_worker_stops_with_one_error_and_leaves_the_run_for_a_process_with_the_key(
    tmp_path: Path, temporal_server, chat_server
) -> None:
    chat_server.script(lambda body: answer({"note": "hi"}))
    (tmp_path / "kt.flow").write_text(NAPPING)
    (tmp_path / "tools.py").write_text(NAPS)
    (tmp_path / "flow.toml").write_text(
        chat_server.config_text()
        + '\n[tools]\nmodules = ["tools.py"]\n'
        + f'[durable]\nengine = "temporal"\naddress = "{temporal_server.address}"\n'
        + f'task_queue = "keyless-{tmp_path.name}"\n'
    )
    env = {**os.environ, "SCRIPTED_API_KEY": TEST_API_KEY, "NO_COLOR": "1"}
    keyless = {k: v for k, v in env.items() if k != "SCRIPTED_API_KEY"}
    kill_when_started(
        tmp_path, "napping", "run", "--durable", "--run-id", "keyless-t1", "kt.flow", env=env
    )

    log = tmp_path / "worker.err"
    with log.open("wb") as err:
        worker = subprocess.Popen(
            flowc("worker", "--name", "w1"), cwd=tmp_path, env=keyless,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        assert worker.wait(timeout=120) == 1, log.read_text()[-3000:]  # stopped by itself
        assert _status(tmp_path, env) in ("running", "stopped")  # not ended
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    said = log.read_text()
    assert said.count(SAID) == 1, said
    assert "flowc resume keyless-t1" in said, said
    assert "flowc worker --name w1" in said, said
    assert "Traceback" not in said, said

    resumed = subprocess.run(
        flowc("resume", "keyless-t1"), cwd=tmp_path, env=env, capture_output=True, timeout=180
    )
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    assert json.loads(resumed.stdout) == {"note": "hi"}
