"""A Temporal `flowc worker` whose environment lacks the API key a run needs neither ends the
run nor retries it in silence with a traceback per attempt: it says once on stderr that it
cannot take the run up (the run, the key's message `flowc run` gives, what to do), the run is
left as it was (not ended), and a process with the key — here `flowc resume` — takes it up and
finishes it (docs/durable.md "Temporal").  Before, each retry of the run's workflow task
printed the ConfigError's traceback, for ever."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
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
    "run keyless-t1 cannot be taken up by this process: the environment variable SCRIPTED_API_KEY"
)


def _status(project: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        flowc("runs", "--json"), cwd=project, env=env, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    (run,) = [r for r in json.loads(done.stdout) if r["run_id"] == "keyless-t1"]
    return str(run["status"])


@pytest.mark.timeout(300)
def test_a_keyless_worker_says_so_once_and_leaves_the_run_for_a_process_with_the_key(
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
        deadline = time.monotonic() + 120
        while SAID not in log.read_text():
            assert worker.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.1)
        time.sleep(3.0)  # the task is given again meanwhile: nothing more is said
        assert _status(tmp_path, env) in ("running", "stopped")  # not ended
    finally:
        worker.send_signal(signal.SIGINT)
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    said = log.read_text()
    assert said.count(SAID) == 1, said
    assert "flowc resume keyless-t1" in said, said
    assert "Traceback" not in said, said

    resumed = subprocess.run(
        flowc("resume", "keyless-t1"), cwd=tmp_path, env=env, capture_output=True, timeout=180
    )
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    assert json.loads(resumed.stdout) == {"note": "hi"}
