"""A durable run of a `loop` records each round (docs/durable.md, docs/reference/control.md
"loop"): the evaluator-optimizer example (examples/patterns/evaluator-optimizer.flow), run by a
real `flowc run --durable` against the scripted model server, killed with SIGKILL while the critic
of round 3 is answering, then resumed (`api.resume_run`, what `flowc resume` runs) — rounds 1 and 2 are not asked again (requests
counted at the server).  Then `--reuse` of that run by an edited flow asks the model only for the
calls the edit changed, round by round, and `flowc runs show` names the rounds' steps."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time

from click.testing import CliRunner
from support.chat_server import TEST_API_KEY, answer
from support.durable_questions import model_records
from support.paths import EXAMPLES

import agentflow
from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

_DRAFT = re.compile(r"\b(v\d+)\b")


def _user(body: dict) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def _what(body: dict) -> str:
    """A request in a word: ``write``, ``critic v2`` (the draft reviewed), ``revise v2``."""
    task = _user(body)
    if "Write a short piece" in task:
        return "write"
    draft = _DRAFT.search(task.split("\n", 1)[1]).group(1)
    return f"critic {draft}" if "Approve this draft" in task else f"revise {draft}"


def test_a_loop_killed_in_round_3_resumes_without_repeating_rounds_1_and_2(
    tmp_path, chat_server, monkeypatch
):
    slow = {"critic v3": 1}  # the first review of v3 is slow: the run is killed while it waits

    def model(body: dict) -> object:
        what = _what(body)
        if what == "write":
            return answer({"text": "v1"})
        if what.startswith("revise"):
            n = int(what.rsplit("v", 1)[1])
            return answer({"text": f"v{n + 1}"})
        reply = answer({"approved": what == "critic v4", "notes": "tighter"})
        if slow.get(what):
            slow[what] -= 1
            reply.delay = 5.0
        return reply

    chat_server.script(model)
    chat_server.write_config(tmp_path)
    flow = tmp_path / "evaluator-optimizer.flow"
    flow.write_text((EXAMPLES / "patterns" / "evaluator-optimizer.flow").read_text())
    env = {**os.environ, "SCRIPTED_API_KEY": TEST_API_KEY, "NO_COLOR": "1"}
    flowc = [sys.executable, "-m", "agentflow"]
    args = ["--input", '{"topic": "tea"}']
    run = subprocess.Popen(
        [*flowc, "run", "--durable", "--run-id", "loop-1", flow.name, *args],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while run.poll() is None and time.monotonic() < deadline:
        if "critic v3" in [_what(r) for r in chat_server.requests]:
            break
        time.sleep(0.01)
    asked = [_what(r) for r in chat_server.requests]
    assert asked[-1:] == ["critic v3"], run.communicate()[1].decode()[-3000:]
    # the record of the call before it (written behind that call: runtime/durable/items.py)
    # committed, while the critic's reply is 5 s away: only the critic is in flight at the kill
    while run.poll() is None and time.monotonic() < deadline and model_records(tmp_path) < 5:
        time.sleep(0.01)
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert asked == ["write", "critic v1", "revise v1", "critic v2", "revise v2", "critic v3"]

    chat_server.requests.clear()
    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "flow.toml"
    try:
        resumed = asyncio.run(agentflow.api.resume_run("loop-1", config=config))
        assert resumed.status == "ok", resumed.error
        assert resumed.output == {"text": "v4", "approved": True, "rounds": 4}
        # only round 3's review (in flight at the kill) and what came after it reached the model
        assert [_what(r) for r in chat_server.requests] == ["critic v3", "revise v3", "critic v4"]

        # --reuse through the loop: an edited revise prompt asks again only the revisions
        flow.write_text(flow.read_text().replace('"Revise:\\n', '"Revise it:\\n'))
        chat_server.requests.clear()
        again = agentflow.run_sync(
            flow, {"topic": "tea"}, config=config, durable=True, run_id="loop-2", reuse="loop-1"
        )
        shown = CliRunner().invoke(main, ["runs", "show", "loop-1"])
    finally:
        shutdown()
    assert again.status == "ok", again.error
    assert again.output == {"text": "v4", "approved": True, "rounds": 4}
    assert [_what(r) for r in chat_server.requests] == ["revise v1", "revise v2", "revise v3"]
    # `flowc runs show` names each round's steps as the .flow does (round 3: two model calls,
    # each under the agent that made it)
    assert shown.exit_code == 0, shown.output
    assert "revise › round 3 › agent(critic) › model chat" in shown.stdout, shown.stdout
    assert "revise › round 3 › next = agent(writer) › model chat" in shown.stdout, shown.stdout
