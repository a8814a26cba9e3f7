"""``flowc serve --mcp``: a call busy evaluating a long expression holds no other call up, and a
client's ``notifications/cancelled`` ends its evaluation (docs/mcp.md "cancels the run; its steps
unwind as on Ctrl-C"; docs/decisions.md "Break-it fixes, stop 44").  Before, the run evaluated on
the server's event loop: the cancel and the other calls were read only when it returned."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.mcp_wire import INITIALIZE
from support.timing import Deadline

from agentflow.runtime.durable.temporal_client import END_PAUSE_ENV

FLOWC = Path(sys.executable).parent / "flowc"

PAIR = 'len(count_by(big)) + len(split(t, ","))'
#: minutes of evaluation when nothing ends it (each pair: a count_by and a split of 1M items)
BUSY = f"""/// Busy.
flow busy
input {{ n: int }}
output int

stage s -> int {{
  let xs = range(100000)
  let big = xs + xs + xs + xs + xs + xs + xs + xs + xs + xs
  let t = join(big, ",")
  return {" + ".join([PAIR] * 60)}
}}
"""

ONE = """/// One.
flow one
output int

stage main {
  return 1
}
"""


class _Lines:
    """The server's stdout lines, read on a thread (a missing reply fails, never hangs)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[dict] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            with self.cond:
                self.lines.append(json.loads(raw))
                self.cond.notify_all()

    def reply(self, rid: int, timeout: float = 60) -> dict:
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                found = [m for m in self.lines if m.get("id") == rid]
                if found:
                    return found[0]
                left = end - time.monotonic()
                assert left > 0, f"no reply to {rid}: {self.lines}"
                self.cond.wait(left)


def _status(served: Path) -> str | None:
    """The status of the durable run of `busy` in the served directory's database (the
    server's own thread count moves with the engine's threads)."""
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    database = runs.database_for(load_config(served / "flow.toml"))
    found = asyncio.run(runs.list_runs(database))
    return next((r.status for r in found if r.plan == "busy"), None)


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def _send(proc: subprocess.Popen, message: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()


def _call(rid: int, name: str, arguments: dict) -> dict:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def _answered_while_workflow_code_runs(proc: subprocess.Popen, lines: _Lines, mark: Path) -> None:
    """While the run's workflow code holds its loop (the end pause, 3 s), the server answers
    another request at once: the workflow code does not run on the server's loop.  Then the
    pause is let go, now and at every later run's end."""
    wait = Deadline(60)
    while not mark.exists():
        assert not wait.expired(), "the run never came to its end"
        time.sleep(0.01)
    seen = time.monotonic()
    _send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert lines.reply(3)["result"]["tools"]
    # on the server's loop, the reply would wait for the pause to end (3 s)
    assert time.monotonic() - seen < 2.5, time.monotonic() - seen

    def let_go() -> None:
        while proc.poll() is None:
            with contextlib.suppress(FileNotFoundError):
                mark.unlink()
            time.sleep(0.01)

    threading.Thread(target=let_go, daemon=True).start()


@pytest.mark.parametrize("durable", [False, True, "temporal"], ids=["plain", "durable", "temporal"])
def test_a_cancelled_busy_evaluation_ends_and_holds_no_other_call_up(tmp_path, durable, request):
    d = tmp_path / "flows"
    d.mkdir()
    (d / "busy.flow").write_text(BUSY, encoding="utf-8")
    (d / "one.flow").write_text(ONE, encoding="utf-8")
    config = ""  # its database beside it
    if durable == "temporal":
        # the workflow code of a Temporal run runs on the loop of this process's worker (the
        # SDK's debug mode activates workflows inline): not the server's; the long evaluation
        # goes to an operation, on a thread, which the cancel reaches (temporal_engine.evaluate)
        server = request.getfixturevalue("temporal_server")
        config = (
            f'[durable]\nengine = "temporal"\naddress = "{server.address}"\n'
            f'task_queue = "busy{os.getpid()}"\n'
        )
    (d / "flow.toml").write_text(config, encoding="utf-8")
    # Temporal: the root of a run holds its workflow code at its end while this file exists
    # (a hook of the tests; at most 3 s)
    mark = tmp_path / "paused"
    env = {**os.environ, END_PAUSE_ENV: str(mark)} if durable == "temporal" else None
    proc = subprocess.Popen(
        [str(FLOWC), "serve", "--mcp", str(d), *(["--durable"] if durable else [])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=d,
        env=env,
    )
    try:
        lines = _Lines(proc)
        _send(proc, INITIALIZE)
        assert lines.reply(1)["result"]
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc, _call(2, "one", {}))
        if durable == "temporal":
            _answered_while_workflow_code_runs(proc, lines, mark)
        assert lines.reply(2)["result"]["structuredContent"] == {"result": 1}
        idle = _threads(proc.pid)
        _send(proc, _call(7, "busy", {"n": 1}))
        time.sleep(1.5)  # the run is evaluating by now (or about to: either way it must end)
        _send(
            proc,
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}},
        )
        _send(proc, _call(8, "one", {}))
        assert lines.reply(8)["result"]["structuredContent"] == {"result": 1}
        # the busy run ends (its thread goes): minutes of evaluation were left
        # (Temporal: the cancel reaches a workflow whose task an operation holds when the SDK
        # heartbeats that task, every 3.2 s)
        wait = Deadline(5 if durable != "temporal" else 12)
        while (_status(d) != "cancelled") if durable else (_threads(proc.pid) > idle):
            assert not wait.expired(), f"the cancelled run goes on evaluating ({_status(d)})"
            time.sleep(0.1)
        _send(proc, _call(9, "one", {}))
        assert lines.reply(9)["result"]["structuredContent"] == {"result": 1}
        assert not [m for m in lines.lines if m.get("id") == 7], "a cancelled call is answered"
    finally:
        proc.kill()
        proc.wait(10)
