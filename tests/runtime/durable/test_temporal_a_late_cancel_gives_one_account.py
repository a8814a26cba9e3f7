"""A `flowc cancel` that lands as a Temporal run finishes gives one account (docs/durable.md "A
cancel that comes late"): the root claims its end in workflow code (temporal_engine.py
``claim_end``) and says how it ended only once that claim is in the history; a cancel request
the server received while the claiming workflow task ran is ordered after the claim, so the run
keeps its end and `flowc cancel` says it has already finished.  It used to say `run ok` on the
console and in the trace, then the server refused the workflow's completion (the request had
arrived meanwhile) and `--json`, `flowc runs` and `runs show` said `cancelled`.

A real `flowc run` on a real dev server; the request lands in exactly that workflow task through
a hook of the tests (``_AGENTFLOW_TEMPORAL_END_PAUSE=FILE``: the root creates FILE as it comes to
its claim and waits there, its task open, until FILE is gone)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path

import pytest
from support.durable_questions import start_flowc

from agentflow.errors import InputError

FLOW = """\
flow late "a cancel as the run ends"
extern tool user__inc(n: int) -> int
stage s -> int {
  let a = user__inc(n: 1)
  let b = a * 2
  return b + 1
}
"""

TOOLS = '''\
from agentflow import tool


@tool
def inc(n: int) -> int:
    """n + 1."""
    return n + 1
'''


def _events(trace: Path) -> list[dict]:
    return [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]


def test_a_cancel_request_that_reaches_the_claiming_task_finds_the_run_finished_everywhere(
    tmp_path, temporal_server
):
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs
    from agentflow.runtime.durable import temporal_client as tc
    from agentflow.runtime.durable import temporal_manage as tm

    (tmp_path / "late.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text(
        '[tools]\nmodules = ["tools.py"]\n\n[durable]\nengine = "temporal"\n'
        f'address = "{temporal_server.address}"\ntask_queue = "late{os.getpid()}"\n'
    )
    url = runs.database_for(load_config(tmp_path / "flow.toml"))
    pause = tmp_path / "pause"
    env = {**os.environ, tc.END_PAUSE_ENV: str(pause), "NO_COLOR": "1"}
    run = start_flowc(
        tmp_path, "run", "late.flow", "--durable", "--run-id", "late", "--json",
        "--trace", "t.jsonl", env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not pause.exists():  # the root is at its end, its workflow task open
        assert run.poll() is None, run.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "the run never came to its end"
        time.sleep(0.01)

    async def cancel_in_the_task() -> bool:
        client = await tc.client_for(url)
        await client.get_workflow_handle("late").cancel()  # accepted, held for the open task
        pause.unlink()
        return await tm._cancel_won(client, "late")

    assert asyncio.run(cancel_in_the_task()) is False  # the root's claim came first
    with pytest.raises(InputError, match="has already (finished|ended)"):
        asyncio.run(tm.cancel(url, "late"))  # and `flowc cancel` says so
    out, err_bytes = run.communicate(timeout=120)
    err = err_bytes.decode()
    assert run.returncode == 0, err[-2000:]
    assert "run ok in " in err and "cancelled" not in err, err[-2000:]
    result = json.loads(out)
    assert (result["status"], result["output"]) == ("ok", 5), result
    ends = [e for e in _events(tmp_path / "t.jsonl") if e["kind"] == "run_finished"]
    assert [(e["data"]["status"], e["data"]["output"]) for e in ends] == [("ok", 5)], ends
    shown = asyncio.run(tm.show_run(url, "late")).to_dict()
    assert (shown["status"], shown["output"], shown.get("error")) == ("ok", 5, None), shown
    (listed,) = [r for r in asyncio.run(tm.list_runs(url)) if r.run_id == "late"]
    assert listed.status == "ok"


def test_a_late_signal_in_the_roots_last_task_leaves_one_run_finished(
    tmp_path, temporal_server, monkeypatch
):
    """A signal (here a late answer) that reaches the server while the root's last workflow
    task runs makes the server refuse that task's completion (``UnhandledCommand``), and the
    next attempt runs the root again from its history: the run's end is said by the first
    attempt only.  It used to be said again by the next attempt — to the sinks of whichever
    process took it (a ``flowc worker --trace``'s, or as here this process's own: the run's
    runtime is gone once its root returned).  The hook ``_AGENTFLOW_TEMPORAL_LAST_PAUSE=FILE``
    holds the root in its last task; the run and its worker are this process."""

    import agentflow.api
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs
    from agentflow.runtime.durable import temporal_client as tc
    from agentflow.runtime.durable import temporal_engine as te
    from agentflow.runtime.events import CallbackSink

    (tmp_path / "late.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text(
        '[tools]\nmodules = ["tools.py"]\n\n[durable]\nengine = "temporal"\n'
        f'address = "{temporal_server.address}"\ntask_queue = "last{os.getpid()}"\n'
    )
    url = runs.database_for(load_config(tmp_path / "flow.toml"))
    pause = tmp_path / "pause"
    monkeypatch.setenv(tc.LAST_PAUSE_ENV, str(pause))
    sent: list[BaseException | None] = []
    done = threading.Event()

    def signal_in_the_last_task() -> None:
        async def send() -> None:
            client = await tc.client_for(url)
            await client.get_workflow_handle("last").signal(
                tc.MESSAGE_SIGNAL, {"topic": "late", "value": 1, "token": "t"}
            )

        try:
            deadline = time.monotonic() + 120
            while not pause.exists():  # the root is in its last task, open
                assert time.monotonic() < deadline and not done.is_set(), "no last task"
                time.sleep(0.01)
            asyncio.run(send())
            sent.append(None)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            sent.append(e)
        finally:
            pause.unlink(missing_ok=True)

    own: list = []
    later: list = []  # what a later attempt of the root says (this process's worker sinks)
    te.set_process_sinks([CallbackSink(later.append)])
    helper = threading.Thread(target=signal_in_the_last_task, daemon=True)
    helper.start()
    try:
        result = asyncio.run(
            agentflow.api.run(
                tmp_path / "late.flow", {}, config=tmp_path / "flow.toml", workspace=tmp_path,
                durable=True, run_id="last", sinks=[CallbackSink(own.append)],
            )
        )  # fmt: skip
    finally:
        te.set_process_sinks([])
        done.set()
        helper.join(timeout=10)
    assert sent == [None], sent
    assert (result.status, result.output) == ("ok", 5), result.error
    ends = [e for e in [*own, *later] if e.kind == "run_finished"]
    assert [(e.data["status"], e.data["output"]) for e in ends] == [("ok", 5)], ends
