"""On Temporal (and DBOS), the items a `parallel map`'s failure stops say why as on a plain run:
``aborted: another item or branch failed first`` (control.SIBLING_FAILED), not "the run was
cancelled (flowc cancel)" — no one ran `flowc cancel` — nor, for an item that is one tool call
(a local activity of the parent), a ``tool_error`` "... was stopped with its worker".  Root
cause: the SDK's await of an operation or a child catches the awaiting task's cancellation and
drops its message; a child unit only saw that it was cancelled (temporal_engine ``_settled``,
``_cancelled``); DBOS cancelled a child unit's task with no message ("cancelled"; now
``cancel_child`` passes it on).  The run and its worker are this process, on the session's
dev server (Temporal) or a SQLite database (DBOS)."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

TOOLS = """\
import asyncio


async def work(i: int, wait: int) -> int:
    if i == 1:
        await asyncio.sleep(0.2)
        raise RuntimeError("boom")
    await asyncio.sleep(wait if i == 0 else 0)
    return i
"""

#: items of one call (local activities of the root: item 0 is in its call) and of several
#: (child workflows, waiting on a timer: a child in a local activity takes the cancel only
#: when its workflow task is heartbeated, 3.2 s later)
FLOWS = {
    "one_call": """\
flow ff "fail fast"
extern tool user__work(i: int, wait: int) -> int
stage s -> int[] {
  parallel map [0, 1, 2] as x limit 3 {
    user__work(i: x, wait: 30)
  }
}
""",
    "child_units": """\
flow ff "fail fast"
extern tool user__work(i: int, wait: int) -> int
stage s -> int[] {
  parallel map [0, 1, 2] as x limit 3 {
    let a = user__work(i: x, wait: 0)
    sleep 30s
    let b = user__work(i: a, wait: 0)
    b
  }
}
""",
}


def _stopped(trace) -> dict[str, str]:
    """Each step that ended aborted → its message."""
    out = {}
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("kind") != "step_finished":
            continue
        data = event.get("data") or event
        error = data.get("error") or {}
        message = data.get("aborted") or (error.get("message") if error.get("code") else None)
        if message and error.get("code") != "tool_error":
            out[event["path"]] = message
        elif error.get("code") == "tool_error" and "boom" not in error.get("message", ""):
            out[event["path"]] = error["message"]
    return out


@pytest.mark.parametrize(
    ("engine", "shape"),
    [("temporal", "child_units"), ("temporal", "one_call"), ("dbos", "child_units")],
)
def test_the_items_a_failure_stops_say_so_on_a_durable_run_as_on_a_plain_run(
    tmp_path, request, engine, shape
):
    import agentflow.api

    (tmp_path / "ff.flow").write_text(FLOWS[shape])
    (tmp_path / "tools.py").write_text(TOOLS)
    tools = '[tools]\nmodules = ["tools.py"]\n'
    (tmp_path / "plain.toml").write_text(tools)
    durable_config = f'\n[durable]\ndatabase = "{tmp_path / "db.sqlite"}"\n'
    if engine == "temporal":
        server = request.getfixturevalue("temporal_server")
        durable_config = (
            f'\n[durable]\nengine = "temporal"\naddress = "{server.address}"\n'
            f'task_queue = "ff{shape}{os.getpid()}"\n'
        )
    (tmp_path / "flow.toml").write_text(tools + durable_config)

    def run(config: str, trace: str, **kw):
        return asyncio.run(
            agentflow.api.run(
                tmp_path / "ff.flow", {}, config=tmp_path / config, workspace=tmp_path,
                trace=str(tmp_path / trace), **kw,
            )
        )  # fmt: skip

    plain = run("plain.toml", "plain.jsonl")
    durable = run("flow.toml", "durable.jsonl", durable=True, run_id=f"ff-{engine}-{shape}")
    assert plain.status == durable.status == "error", (plain.error, durable.error)
    assert durable.error.code == "tool_error" and "boom" in durable.error.message
    said = _stopped(tmp_path / "durable.jsonl")
    assert said == _stopped(tmp_path / "plain.jsonl"), said
    assert set(said.values()) == {"another item or branch failed first"}, said
    assert "E0/do.0" in said, said
