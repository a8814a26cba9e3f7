"""``--reuse`` and ``redrive``: a durable run takes every step of an earlier run whose step path
and rendered input are unchanged, so only what an edit changed reaches the model (requests are
counted at the scripted model server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.chat_server import TEST_API_KEY, answer, status

import agentflow
from agentflow.errors import InputError
from agentflow.runtime.durable.dbos_engine import shutdown

FIVE = """\
flow five "Five stages"
input { topic: text }

use agent "writer" as writer

type Note {
  text: text
}

stage a -> Note {
  return agent(writer) {
    task "Stage a on ${input.topic}."
    tools none
    expect Note
  }
}

stage b -> Note {
  return agent(writer) {
    task "Stage b on ${input.topic}."
    tools none
    expect Note
  }
}

stage c -> Note {
  return agent(writer) {
    task "Stage c after ${a.text}."
    tools none
    expect Note
  }
}

stage d -> Note {
  return agent(writer) {
    task "Stage d after ${c.text}."
    tools none
    expect Note
  }
}

stage e -> Note {
  return agent(writer) {
    task "Stage e after ${b.text}."
    tools none
    expect Note
  }
}
"""


def writer(body: dict) -> object:
    """The model: notes the task it was given (so a changed prompt changes the answer)."""
    task = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return answer({"text": f"[{task[:40]}]"})


def _tasks(requests: list[dict]) -> list[str]:
    return sorted(
        next(m["content"] for m in r["messages"] if m["role"] == "user")[:7] for r in requests
    )


@pytest.fixture(params=["dbos", "temporal"])
def project(tmp_path, chat_server, monkeypatch, request):
    """The project on each engine (Temporal: one more section of flow.toml, a dev server)."""
    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    chat_server.write_config(tmp_path)
    if request.param == "temporal":
        server = request.getfixturevalue("temporal_server")
        with (tmp_path / "flow.toml").open("a") as f:
            f.write(
                f'\n[durable]\nengine = "temporal"\naddress = "{server.address}"\n'
                f'task_queue = "reuse-{tmp_path.name}"\n'
            )
    (tmp_path / "five.flow").write_text(FIVE)
    chat_server.script(writer)
    yield tmp_path
    shutdown()


async def test_reuse_on_an_edited_flow_asks_the_model_only_for_the_changed_stage_and_its_dependents(
    project, chat_server
):
    flow = project / "five.flow"
    config = project / "flow.toml"
    first = await agentflow.run(
        flow, {"topic": "caching"}, config=config, durable=True, run_id="five-1"
    )
    assert first.status == "ok", first.error
    assert _tasks(chat_server.requests) == [f"Stage {s}" for s in "abcde"]

    # edit one of the five stages: c (d reads c's result; a, b and e do not)
    flow.write_text(FIVE.replace("Stage c after", "Stage c, revised, after"))
    chat_server.requests.clear()
    second = await agentflow.run(
        flow, {"topic": "caching"}, config=config, durable=True, run_id="five-2", reuse="five-1"
    )
    assert second.status == "ok", second.error
    assert _tasks(chat_server.requests) == ["Stage c", "Stage d"]
    assert second.output["text"] == first.output["text"]  # e: reused, unchanged
    assert second.results["E2"] != first.results["E2"]
    assert second.results["E0"] == first.results["E0"]
    assert second.results["E4"] == first.results["E4"]
    # reused calls are free: only the two new inferences count
    assert second.usage["inferences"] == 2


def test_redrive_reruns_a_failed_run_from_its_failed_step(project, chat_server):
    """A run whose stage c failed (the model was down) is redriven: a, b are taken from it."""
    calls = {"n": 0}

    def flaky(body: dict) -> object:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if task.startswith("Stage c") and calls["n"] == 0:
            return status(400, {"error": {"message": "bad request", "type": "invalid_request"}})
        return writer(body)

    chat_server.script(flaky)
    env = {**os.environ, "SCRIPTED_API_KEY": TEST_API_KEY}
    failed = subprocess.run(
        [sys.executable, "-m", "agentflow", "run", "--durable", "--run-id", "red-1",
         "five.flow", "--input", '{"topic": "x"}'],
        cwd=project, env=env, capture_output=True, timeout=180,
    )  # fmt: skip
    assert failed.returncode == 1
    assert "model_error" in failed.stderr.decode()
    assert _tasks(chat_server.requests) == ["Stage a", "Stage b", "Stage c"]

    calls["n"] = 1  # the model is back
    chat_server.requests.clear()
    redriven = subprocess.run(
        [sys.executable, "-m", "agentflow", "redrive", "red-1"],
        cwd=project, env=env, capture_output=True, timeout=180,
    )  # fmt: skip
    assert redriven.returncode == 0, redriven.stderr.decode()[-2000:]
    assert "redrive of red-1" in redriven.stderr.decode()
    assert _tasks(chat_server.requests) == ["Stage c", "Stage d", "Stage e"]
    assert json.loads(redriven.stdout)["text"].startswith("[Stage e after [Stage b")


async def test_a_run_id_already_taken_is_refused_on_both_engines_not_answered_with_the_old_output(
    project, chat_server
):
    """A trial user's `flowc ask --durable --run-id kill-1 "another question"` printed kill-1's
    old answer: DBOS hands back the existing workflow for an id it knows, whatever the new
    input.  A caller-chosen id that names a run is refused on both engines (Temporal already
    did), the old run untouched; a new id runs."""
    flow = project / "five.flow"
    config = project / "flow.toml"
    first = await agentflow.run(
        flow, {"topic": "caching"}, config=config, durable=True, run_id="taken-1"
    )
    assert first.status == "ok", first.error
    chat_server.requests.clear()
    with pytest.raises(InputError, match="a durable run 'taken-1' exists already"):
        await agentflow.run(
            flow, {"topic": "another"}, config=config, durable=True, run_id="taken-1"
        )
    assert chat_server.requests == []  # nothing ran
    again = await agentflow.run(
        flow, {"topic": "another"}, config=config, durable=True, run_id="taken-2"
    )
    assert again.status == "ok", again.error
    assert again.output != first.output
