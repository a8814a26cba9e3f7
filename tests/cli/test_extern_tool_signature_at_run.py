"""An `extern tool` declared with another signature than the tool has (`flowc check` warns
`extern-tool-signature`: "no call of it can pass") fails `flowc run` before any step runs as
`error[validation]` at the call, in the `.flow`'s terms: the tool, the argument it needs, the
parameter it lacks (docs/reference/errors.md "A tool declared with another signature")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow import api
from agentflow.cli import main
from agentflow.errors import RunError

TOOLS = """\
import agentflow

@agentflow.tool
def lookup_customer(email: str) -> dict:
    return {"email": email, "plan": "pro"}
"""

FLOW = """\
flow cust "customer lookup"
input { email: text }
type Customer { email: text, plan: text }
extern tool user__lookup_customer(mail: text) -> Customer

stage who -> Customer { return user__lookup_customer(mail: input.email) }
"""

MESSAGE = (
    "`user__lookup_customer` needs the argument `email` and has no parameter `mail` (its "
    "parameters: `email`): the `.flow` declares it with another signature than the tool has, "
    "so no call of it can pass; make its `extern tool user__lookup_customer(…)` match the tool"
)


def _project(tmp_path: Path) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\nentry_points = false\n')
    (tmp_path / "cust.flow").write_text(FLOW)
    return tmp_path / "cust.flow"


def test_flowc_run_reports_the_mismatch_as_a_run_error_at_the_call(tmp_path, monkeypatch):
    flow = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    got = CliRunner().invoke(main, ["run", flow.name, "--input", '{"email": "a@b.c"}'])
    assert got.exit_code == 1
    assert got.stderr.splitlines() == [
        f"error[validation] in who › user__lookup_customer(…) (step E0): {MESSAGE}",
        "  --> cust.flow:6:32",
        "   | stage who -> Customer { return user__lookup_customer(mail: input.email) }",
        "   |                                ^^^^^^^^^^^^^^^^^^^^^",
    ]


async def test_the_api_raises_the_run_error_with_its_code_place_and_step(tmp_path):
    flow = _project(tmp_path)
    with pytest.raises(RunError) as info:
        await api.run(flow, {"email": "a@b.c"}, config=tmp_path / "flow.toml", shape_cache=False)
    e = info.value
    assert (e.code, e.step_path, e.message) == ("validation", "E0", MESSAGE)
    assert e.source is not None and e.source.endswith("cust.flow:6:32")
    assert e.where == {"label": "who › user__lookup_customer(…)"}


async def test_a_call_that_fits_the_tool_still_runs(tmp_path):
    flow = _project(tmp_path)
    flow.write_text(FLOW.replace("(mail:", "(email:"))
    result = await api.run(
        flow, {"email": "a@b.c"}, config=tmp_path / "flow.toml", shape_cache=False
    )
    assert result.status == "ok" and result.output == {"email": "a@b.c", "plan": "pro"}
