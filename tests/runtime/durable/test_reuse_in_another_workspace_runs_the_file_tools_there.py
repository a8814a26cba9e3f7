"""``--reuse`` in another workspace: a file tool's call is an operation on that workspace, so a
run reusing one started elsewhere makes it again there (break14: the recorded `write_file` was
taken, the run said ok and the new workspace had no file); in the same workspace it is reused."""

from __future__ import annotations

import agentflow
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
flow w "write"
stage s -> json {
  let r = write_file(path: "out.txt", content: "hello")
  let back = read_file(path: "in.txt")
  return { r: r, back: back }
}
"""


async def test_a_reused_file_tool_runs_again_in_another_workspace_not_in_the_same(tmp_path):
    flow = tmp_path / "w.flow"
    flow.write_text(FLOW)
    database = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    first_ws, second_ws = tmp_path / "one", tmp_path / "two"
    for ws, text in ((first_ws, "first"), (second_ws, "second")):
        ws.mkdir()
        (ws / "in.txt").write_text(text)
    try:
        first = await agentflow.run(
            flow, {}, workspace=first_ws, durable=True, run_id="w-1", database=database
        )
        assert first.status == "ok", first.error
        second = await agentflow.run(
            flow, {}, workspace=second_ws, durable=True, run_id="w-2", database=database,
            reuse="w-1",
        )  # fmt: skip
        assert second.status == "ok", second.error
        assert (second_ws / "out.txt").read_text() == "hello"
        assert second.output["back"] == "second"
        (first_ws / "out.txt").unlink()
        same = await agentflow.run(
            flow, {}, workspace=first_ws, durable=True, run_id="w-3", database=database,
            reuse="w-1",
        )  # fmt: skip
        assert same.status == "ok", same.error
        assert not (first_ws / "out.txt").exists()  # reused: not made again
        assert same.output["back"] == "first"
    finally:
        shutdown()
