"""A Temporal run's ``usage.by_step`` and ``by_stage`` count the model calls made in its child
units (here a ``parallel map``'s items, each a child workflow; a unit below a unit reports to
it, and so up to the root), as a plain run's and
a DBOS run's do (docs/spec/RUNTIME.md §1 ``usage``): each unit counts its steps' calls in a
``StepUsage`` of its own and reports them with its result, and the unit above it adds them to
its own (temporal_engine ``collect``).  They used to be missing: a unit's executor had no
``StepUsage``, so a map of agents showed its calls in ``usage.inferences`` and none by step.
The run and its worker are this process; the model is a scripted server on loopback."""

from __future__ import annotations

import asyncio
import os

from agentflow.testing.chat_server import answer

FLOW = """\
flow usage "a map of agents"
use agent "worker" as w
type A { a: int }
stage s -> A[] {
  parallel map [1, 2, 3] as x limit 3 {
    agent(w) {
      task "Give ${x}."
      expect A
    }
  }
}
"""


def test_a_maps_items_as_child_units_count_their_calls_by_step_and_stage(
    tmp_path, chat_server, temporal_server, monkeypatch
):
    import agentflow.api

    chat_server.script(lambda request: answer({"a": 1}))
    monkeypatch.setenv("SCRIPTED_API_KEY", "test-key")
    (tmp_path / "u.flow").write_text(FLOW)
    plain_toml = tmp_path / "plain.toml"
    plain_toml.write_text(chat_server.config_text(retries=0))
    durable_toml = tmp_path / "flow.toml"
    durable_toml.write_text(
        chat_server.config_text(retries=0)
        + f'\n[durable]\nengine = "temporal"\naddress = "{temporal_server.address}"\n'
        f'task_queue = "usage{os.getpid()}"\n'
    )

    def run(config, **kw):
        return asyncio.run(
            agentflow.api.run(tmp_path / "u.flow", {}, config=config, workspace=tmp_path, **kw)
        )

    plain = run(plain_toml)
    durable = run(durable_toml, durable=True, run_id="usage")
    assert (plain.status, durable.status) == ("ok", "ok"), (plain.error, durable.error)
    assert plain.usage["inferences"] == durable.usage["inferences"] == 3
    by_step = durable.usage["by_step"]
    assert len(by_step) == 3, by_step  # one agent step in each of the three items
    assert sum(e["inferences"] for e in by_step.values()) == 3, by_step
    assert by_step == plain.usage["by_step"]
    assert durable.usage["by_stage"] == plain.usage["by_stage"], durable.usage
    assert durable.usage["by_stage"]["s"]["inferences"] == 3
