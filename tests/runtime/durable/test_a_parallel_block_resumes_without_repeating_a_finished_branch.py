"""A durable run of a `parallel { … }` block records each branch by its step path, which the
branch's name makes stable (`E0/style`, `E0/security`; docs/reference/control.md "parallel
blocks"): a real `flowc run --durable` (SQLite) against the scripted model server is killed with
SIGKILL while the `security` branch's agent is answering and after the `style` branch has
finished, then resumed (`api.resume_run`, what `flowc resume` runs) — the `style` agent is not
asked again (requests counted at the server), and the value holds both branches."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

from click.testing import CliRunner
from support.chat_server import TEST_API_KEY, answer
from support.durable_questions import model_records

import agentflow.api
from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
flow pr
input { diff: text }
use agent "reviewer" as style
use agent "reviewer" as security
type StyleReview { ok: bool }
type SecurityReview { risks: text[] }

stage review -> { style: StyleReview, security: SecurityReview, size: int } {
  parallel {
    style: agent(style) { task "Style of ${input.diff}" tools none expect StyleReview },
    security: agent(security) { task "Risks of ${input.diff}" tools none expect SecurityReview },
    size: input.diff.count,
  }
}
"""


def _what(body: dict) -> str:
    task = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return "style" if task.startswith("Style of") else "security"


def test_a_parallel_block_killed_mid_branch_resumes_without_asking_the_finished_branch_again(
    tmp_path, chat_server, monkeypatch
):
    slow = {"security": 1}  # the first security review is slow: the run is killed while it waits

    def model(body: dict) -> object:
        what = _what(body)
        reply = answer({"ok": True} if what == "style" else {"risks": ["eval"]})
        if slow.get(what):
            slow[what] -= 1
            reply.delay = 5.0
        return reply

    chat_server.script(model)
    chat_server.write_config(tmp_path)
    flow = tmp_path / "pr.flow"
    flow.write_text(FLOW)
    env = {**os.environ, "SCRIPTED_API_KEY": TEST_API_KEY, "NO_COLOR": "1"}
    flowc = [sys.executable, "-m", "agentflow"]
    run = subprocess.Popen(
        [*flowc, "run", "--durable", "--run-id", "par-1", flow.name, "--input", '{"diff": "abc"}'],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    # both branches asked (they run side by side), and the style branch's answer recorded
    while run.poll() is None and time.monotonic() < deadline:
        asked = sorted(_what(r) for r in chat_server.requests)
        if asked == ["security", "style"] and model_records(tmp_path) >= 1:
            break
        time.sleep(0.01)
    assert run.poll() is None, run.communicate()[1].decode()[-3000:]
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert sorted(_what(r) for r in chat_server.requests) == ["security", "style"]

    chat_server.requests.clear()
    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    monkeypatch.chdir(tmp_path)
    try:
        resumed = asyncio.run(agentflow.api.resume_run("par-1", config=tmp_path / "flow.toml"))
        shown = CliRunner().invoke(main, ["runs", "show", "par-1"])
    finally:
        shutdown()
    assert resumed.status == "ok", resumed.error
    assert resumed.output == {"style": {"ok": True}, "security": {"risks": ["eval"]}, "size": 3}
    # only the branch in flight at the kill reached the model again
    assert [_what(r) for r in chat_server.requests] == ["security"]
    # `flowc runs show` names each branch's steps as the .flow does
    assert shown.exit_code == 0, shown.output
    assert "review › parallel › style › agent(style) › model chat" in shown.stdout, shown.stdout
    assert "review › parallel › security › agent(security)" in shown.stdout, shown.stdout
