"""``--reuse`` after ``[models]`` changed asks the new model: the model a role resolves to is
part of a model call's digest, as its request is (break14: `--reuse` took the old model's
answer for every unchanged prompt, so comparing a bigger model on a reused run compared
nothing); with the same model the call is reused."""

from __future__ import annotations

from support.chat_server import TEST_API_KEY, answer

import agentflow
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
flow one "x"
use agent "writer" as writer
type Note { text: text }
stage s -> Note {
  return agent(writer) { task "Say something." tools none expect Note }
}
"""


async def test_a_changed_model_is_asked_and_the_same_model_reused(
    tmp_path, chat_server, monkeypatch
):
    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    chat_server.script(lambda body: answer({"text": body["model"]}))
    flow = tmp_path / "one.flow"
    flow.write_text(FLOW)
    config = chat_server.write_config(tmp_path, model="small-model")
    try:
        first = await agentflow.run(flow, {}, config=config, durable=True, run_id="m-1")
        assert first.status == "ok" and first.output == {"text": "small-model"}, first.error
        chat_server.requests.clear()
        same = await agentflow.run(flow, {}, config=config, durable=True, run_id="m-2", reuse="m-1")
        assert same.output == {"text": "small-model"} and chat_server.requests == []
        chat_server.write_config(tmp_path, model="big-model")
        bigger = await agentflow.run(
            flow, {}, config=config, durable=True, run_id="m-3", reuse="m-1"
        )
        assert bigger.status == "ok", bigger.error
        assert bigger.output == {"text": "big-model"}
        assert len(chat_server.requests) == 1
    finally:
        shutdown()
