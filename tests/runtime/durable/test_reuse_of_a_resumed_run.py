"""``flowc run --reuse R edited.flow`` takes every unchanged step of R at every depth — the
items of a map, recorded as child units (``R/E0/do.N``), and what they did inside — also when R
was killed with SIGKILL and finished by ``flowc resume``: after a one-line edit of a later
stage's prompt, only that stage reaches the model (requests counted at the scripted model server)
and no tool runs (calls counted by the tool itself)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.chat_server import TEST_API_KEY, answer, tool_calls

ITEMS = 4  # the acceptance measurement of issue 28 ran this with 20

FLOW = """\
flow reviews
input { xs: int[] }

type Found {
  x: int
  v: int
}

type Judgement {
  ok: bool
  count: int
}

extern tool user__note(n: int) -> int

use agent "worker" as worker
use agent "judge" as judge

stage found -> Found[] {
  parallel map input.xs as x limit 5 {
    let first = user__note(n: x)
    return agent(worker) {
      task "Process item ${x} (first step gave ${first})."
      tools [user__note]
      expect Found
      max_iterations 3
    }
  }
}

stage verdict -> Judgement {
  return agent(judge) {
    task "Judge the findings: ${found}"
    tools none
    expect Judgement
  }
}
"""

TOOLS = """\
import os, time


def note(n: int) -> int:
    \"\"\"Count the call in the log; return 2n.\"\"\"
    with open(os.environ["NOTE_LOG"], "a") as f:
        f.write(f"{n}\\n")
    time.sleep(0.02)
    return 2 * n
"""

_ITEM = re.compile(r"Process item (\d+)")


def model(body: dict) -> object:
    """The worker: round 1 calls user__note(1000 + x), round 2 answers; the judge answers."""
    messages = body["messages"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    found = _ITEM.search(user)
    if found is None:
        return answer({"ok": True, "count": user.count('"x"')})
    x = int(found.group(1))
    results = [m for m in messages if m["role"] == "tool"]
    if not results:
        return tool_calls(("user__note", {"n": 1000 + x}, f"call_{x}"))
    return answer({"x": x, "v": int(results[-1]["content"])})


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


def _tool_calls(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_reuse_of_a_killed_and_resumed_run_reruns_only_the_edited_stage(tmp_path, chat_server):
    project = tmp_path
    (project / "reviews.flow").write_text(FLOW)
    (project / "tools.py").write_text(TOOLS)
    (project / "flow.toml").write_text(
        chat_server.config_text() + '\n[tools]\nmodules = ["tools.py"]\n'
    )
    log = project / "notes.log"
    env = {**os.environ, "SCRIPTED_API_KEY": TEST_API_KEY, "NOTE_LOG": str(log), "NO_COLOR": "1"}
    chat_server.script(model)
    xs = json.dumps({"xs": list(range(1, ITEMS + 1))})

    first = subprocess.Popen(
        _flowc("run", "--durable", "--run-id", "rev-1", "reviews.flow", "--input", xs),
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while (
        first.poll() is None and len(chat_server.requests) < ITEMS and time.monotonic() < deadline
    ):
        time.sleep(0.01)
    assert first.poll() is None, first.communicate()[1].decode()[-3000:]
    first.send_signal(signal.SIGKILL)
    first.wait()
    resumed = subprocess.run(
        _flowc("resume", "rev-1"), cwd=project, env=env, capture_output=True, timeout=240
    )
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    assert json.loads(resumed.stdout) == {"ok": True, "count": ITEMS}

    # one line of the later stage's prompt edited
    (project / "reviews.flow").write_text(FLOW.replace("Judge the findings", "Judge all findings"))
    chat_server.requests.clear()
    calls = _tool_calls(log)
    reused = subprocess.run(
        _flowc("run", "--reuse", "rev-1", "--run-id", "rev-2", "reviews.flow", "--input", xs),
        cwd=project, env=env, capture_output=True, timeout=240,
    )  # fmt: skip
    assert reused.returncode == 0, reused.stderr.decode()[-3000:]
    assert json.loads(reused.stdout) == {"ok": True, "count": ITEMS}
    asked = [next(m["content"] for m in r["messages"] if m["role"] == "user")
             for r in chat_server.requests]  # fmt: skip
    assert len(asked) == 1 and asked[0].startswith("Judge all findings"), asked[:3]
    assert _tool_calls(log) == calls
