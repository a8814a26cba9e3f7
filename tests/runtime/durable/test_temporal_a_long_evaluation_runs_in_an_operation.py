"""On Temporal, an evaluation that does more than a work budget runs in an operation
(temporal_engine ``TemporalEngine.evaluate``; docs/reference/expressions.md "Evaluation ends
when the run must"): workflow code reads no clock, so a long evaluation there could end at its
deadline only when it returned, and one that held a workflow task past its 4 s timeout was
run again by every new attempt of the task (a 6.3 s evaluation took 31.6 s).  Now the work an
evaluation does is counted at the evaluator's checkpoints (elements walked: a function of the
data alone), and past the budget it is evaluated again in a local activity, on a thread, where
the real clock ends it at its step's deadline and its result is recorded.

Checked here: the output, and a failure's error, are the plain run's; the history holds the evaluations as operations
and replays without a nondeterminism error (temporalio's ``Replayer``), deciding the same; a
deadline ends an evaluation of
tens of seconds at once.  The run and its worker are this process, on the session's dev
server; the budget is made small so the evaluations are short."""

from __future__ import annotations

import asyncio
import os

from support.timing import Stretch

FLOW = """\
flow busy "long evaluations"
stage s -> int {
  let xs = range(0, 20000)
  let pairs = zip(xs, xs)
  let small = len([1, 2, 3])
  let n = len(count_by(pairs, "first")) + len(group_by(pairs, "second")) + small
  return n
}
"""

#: a long evaluation that fails: the error comes back from the operation as the plain run's
FAILING = FLOW.replace(
    'len(group_by(pairs, "second")) + small', 'len(group_by(pairs, "second")) % (len(xs) - 20000)'
)

#: 100,000 pairs, then 300 `count_by` calls: tens of seconds of evaluation in one `let`
SLOW = (
    "deadline 1s\n\nstage busy -> int {\n  let xs = range(0, 100000)\n"
    "  let pairs = zip(xs, xs)\n  let n = sum(["
    + ", ".join(['len(count_by(pairs, "first"))'] * 300)
    + "])\n  return n\n}\n"
)


def _config(tmp_path, server, name: str) -> None:
    (tmp_path / "flow.toml").write_text(
        f'[durable]\nengine = "temporal"\naddress = "{server.address}"\n'
        f'task_queue = "{name}{os.getpid()}"\n'
    )


def _run(tmp_path, flow: str, **kw):
    import agentflow.api

    return asyncio.run(
        agentflow.api.run(
            tmp_path / flow, {}, config=tmp_path / "flow.toml", workspace=tmp_path, **kw
        )
    )


async def _history(url: str, run_id: str):
    from agentflow.runtime.durable import temporal_engine as te

    client = await te.client_for(url)
    return client, await client.get_workflow_handle(run_id).fetch_history()


async def _replay(client, history) -> None:
    from temporalio.worker import Replayer

    from agentflow.runtime.durable.temporal_workflows import RunWorkflow, UnitWorkflow

    replayer = Replayer(
        workflows=[RunWorkflow, UnitWorkflow],
        data_converter=client.data_converter,
        debug_mode=True,
    )
    await replayer.replay_workflow(history)


def test_a_long_evaluation_runs_as_an_operation_gives_the_plain_output_and_replays(
    tmp_path, temporal_server, monkeypatch
):
    import agentflow.api
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs
    from agentflow.runtime.durable import temporal_engine as te

    (tmp_path / "busy.flow").write_text(FLOW)
    plain = asyncio.run(agentflow.api.run(tmp_path / "busy.flow", {}, workspace=tmp_path))
    assert plain.status == "ok", plain.error
    _config(tmp_path, temporal_server, "evalop")
    monkeypatch.setattr(te, "EVAL_WORK_BUDGET", 10_000)  # 20,000 pairs are past it
    durable = _run(tmp_path, "busy.flow", durable=True, run_id="evalop")
    assert durable.status == "ok", durable.error
    assert durable.output == plain.output == 40003

    (tmp_path / "failing.flow").write_text(FAILING)
    plain_error = asyncio.run(agentflow.api.run(tmp_path / "failing.flow", {}, workspace=tmp_path))
    durable_error = _run(tmp_path, "failing.flow", durable=True, run_id="evalop-error")
    assert plain_error.error.code == "arithmetic", plain_error.error
    assert durable_error.error == plain_error.error  # code, message, place, `.flow` source

    url = runs.database_for(load_config(tmp_path / "flow.toml"))

    async def check() -> None:
        client, history = await _history(url, "evalop")
        markers = [
            e.marker_recorded_event_attributes
            for e in history.events
            if e.HasField("marker_recorded_event_attributes")
        ]
        text = " ".join(str(m.details) for m in markers)
        # the `let`s (one value step, E0, as compiled) went past the budget; the output, `E0`,
        # stayed in the workflow
        assert text.count("/eval#") == 1 and "E0/eval#1" in text, text[:2000]
        # the same decisions on replay: the evaluation goes past the budget again and takes
        # its recorded result (no nondeterminism error; a replay that decided otherwise would
        # wait for an operation that is not in the history: bounded here)
        asked: list[str] = []
        step = te.TemporalEngine.step

        async def noted(self, name, fn):
            asked.append(name)
            return await step(self, name, fn)

        monkeypatch.setattr(te.TemporalEngine, "step", noted)
        await asyncio.wait_for(_replay(client, history), 60)
        assert [n for n in asked if "/eval#" in n] == ["E0/eval#1"], asked

    asyncio.run(check())


def test_a_deadline_ends_a_long_evaluation_on_temporal_as_on_a_plain_run(tmp_path, temporal_server):
    (tmp_path / "slow.flow").write_text(SLOW)
    _config(tmp_path, temporal_server, "evaldl")
    with Stretch() as clock:
        durable = _run(tmp_path, "slow.flow", durable=True, run_id="evaldl")
    assert durable.status == "error", durable.output
    assert durable.error.code == "deadline_exceeded", durable.error
    # before: the evaluation ran to its end (tens of seconds; each attempt of the workflow task
    # again) and only then did the run see its deadline
    assert clock.took < clock.bound(5), clock.took
