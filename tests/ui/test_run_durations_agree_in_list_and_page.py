"""``flowc ui`` says how long a run took as ``flowc run`` does (``run ok in 9.47s``), in the
run list and on the run's page alike: the time the run's process measured (its outcome's
``duration_ms``), never the difference of a SQLite row's whole-second times printed with two
decimals (``9.00 s`` beside ``9.47 s``).  The durable listing reads that time and the
millisecond start the run recorded (docs/reference/cli.md "flowc ui")."""

from __future__ import annotations

import asyncio
import re

from agentflow import api, api_durable
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.runtime.durable.runs import RunInfo
from agentflow.ui.pages import run_page, runs_page

FLOW = """\
flow quick
stage a -> int {
  return 1
}
"""


def _listed_duration(page: str) -> str:
    cell = re.search(r'<td data-label="duration" class="num">([^<]*)</td>', page)
    assert cell is not None
    return cell[1]


def test_the_run_list_and_the_run_page_show_the_duration_flowc_run_says(tmp_path):
    flow = tmp_path / "quick.flow"
    flow.write_text(FLOW, encoding="utf-8")
    # row times as SQLite keeps them (whole seconds), the measured time beside them
    info = RunInfo("r1", "ok", "quick", 100.0, 109.0, duration_ms=9470)
    spec = {"plan_text": "", "plan_file": str(flow)}
    assert _listed_duration(runs_page([info], {})) == "9.47s"
    assert "duration 9.47s" in run_page(info, spec, "csrf-token")
    unmeasured = RunInfo("r2", "ok", "quick", 100.0, 125.73)  # a run that recorded none
    assert _listed_duration(runs_page([unmeasured], {})) == "25.73s"


def test_a_listed_durable_run_carries_its_measured_duration_and_exact_start(tmp_path):
    flow = tmp_path / "quick.flow"
    flow.write_text(FLOW, encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    try:

        async def go():
            result = await api.run(
                flow, {}, durable=True, database=url, run_id="quick-1", workspace=tmp_path
            )
            (listed,) = await api_durable.list_durable_runs(url)
            return result, listed, await api_durable.show_durable_run(url, "quick-1")

        result, listed, shown = asyncio.run(go())
        assert result.ok
    finally:
        shutdown()
    assert listed.duration_ms == shown.duration_ms == result.duration_ms
    assert listed.created_at == shown.created_at and listed.created_at % 1 != 0
