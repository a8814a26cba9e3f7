"""An ``ask`` still waiting when its run is cancelled (``flowc cancel``) is a step the run
stopped, as ``flowc run`` says it (``✗ s › ok = ask … aborted``): ``flowc runs show`` lists
it ``interrupted`` with ``[aborted]``, and ``flowc ui``'s run page has it in its Steps table
and colours its node as failed with the ``aborted`` error — never "nothing recorded"
(docs/reference/ui.md)."""

from __future__ import annotations

import asyncio
import json
import re

from support.durable_questions import flowc_in, start_flowc, wait_asked

from agentflow import api, api_durable
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.ui.pages import durable_outcomes, run_page

FLOW = """\
flow confirm
stage s -> bool {
  let ok = ask "Proceed?" expect bool
  return ok
}
"""


def test_an_ask_waiting_when_its_run_is_cancelled_is_shown_aborted(tmp_path):
    (tmp_path / "confirm.flow").write_text(FLOW, encoding="utf-8")
    db = tmp_path / ".flowc" / "durable.sqlite"
    proc = start_flowc(tmp_path, "run", "confirm.flow", "--durable", "--run-id", "c1")
    try:
        wait_asked(db, "c1", proc)
        cancelled = flowc_in(tmp_path, "cancel", "c1")
        assert cancelled.exit_code == 0, cancelled.output
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "✗ s › ok = ask" in err.decode() and "aborted" in err.decode()

    shown = flowc_in(tmp_path, "runs", "show", "c1", "--json")
    (step,) = [s for s in json.loads(shown.stdout)["steps"] if s.get("kind") == "ask"]
    assert (step["label"], step["status"], step["error"]["code"]) == (
        "s › ok = ask",
        "interrupted",
        "aborted",
    )
    assert step["finished_at"] >= step["started_at"]
    listed = flowc_in(tmp_path, "runs", "show", "c1")
    assert re.search(r"interrupted .* s › ok = ask  \[aborted\]", listed.stdout), listed.stdout

    url = f"sqlite:///{db}"

    async def read():
        return (
            await api_durable.show_durable_run(url, "c1", values=True),
            await api_durable.recorded_run(url, "c1"),
        )

    try:
        info, spec = asyncio.run(read())
    finally:
        shutdown()
    page = run_page(info, spec, "csrf-token")
    row = re.search(r'<tr data-path="E0" data-status="interrupted">.*?</tr>', page, re.S)
    assert row is not None and "s › ok = ask" in row[0] and "<code>aborted</code>" in row[0]
    plan = api.load(tmp_path / "confirm.flow")
    (outcome,) = [o for o in durable_outcomes(plan, info).values() if o.error]
    assert outcome.status == "error" and outcome.error["code"] == "aborted"
    assert "nothing recorded" not in page
