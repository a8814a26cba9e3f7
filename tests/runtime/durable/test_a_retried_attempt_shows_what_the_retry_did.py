"""A tool attempt that raised a plain Python exception shows in ``flowc runs show`` with the
code the run failed it with — the one its retry policy decided by — not ``failed``: a
``ConnectionError`` the step's ``retry`` took as ``transient`` is ``retried [transient]``, the
``ValueError`` that ended the step ``error [tool_error]`` (docs/reference/cli.md "flowc runs
show"). (A real durable run on SQLite in ``tmp_path``, in this process.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner

import agentflow
from agentflow import api
from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
flow flaky
extern tool user__flaky(n: int) -> int
stage s -> int {
  let v = user__flaky(n: 3) retry { attempts: 3, on: [transient] }
  return v
}
"""

TOOLS = '''\
import pathlib

def flaky(n: int) -> int:
    """A ConnectionError, then a ValueError."""
    count = pathlib.Path("count.txt")
    calls = int(count.read_text()) if count.exists() else 0
    count.write_text(str(calls + 1))
    if calls == 0:
        raise ConnectionError("network down")
    raise ValueError("bad value")
'''


def test_each_attempt_shows_the_code_the_retry_policy_saw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "flaky.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\nentry_points = false\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    try:
        result = asyncio.run(
            agentflow.run(tmp_path / "flaky.flow", {}, durable=True, run_id="flaky-1")
        )
        assert result.status == "error" and result.error["code"] == "tool_error"
        url = api.durable_database()
        info = asyncio.run(api.show_durable_run(url, "flaky-1"))
        shown = [(s["status"], s["error"]["code"], s["error"]["message"]) for s in info.steps]
        assert shown == [
            ("retried", "transient", "user__flaky: ConnectionError: network down"),
            ("error", "tool_error", "user__flaky: ValueError: bad value"),
        ]
        assert all(s["error"]["step_path"] == "E0" for s in info.steps)
        text = CliRunner().invoke(main, ["runs", "show", "flaky-1"]).stdout
        lines = [ln for ln in text.splitlines() if ln.startswith("  ") and "user__flaky" in ln]
        assert [ln.split()[0] for ln in lines] == ["retried", "error"], text
        assert lines[0].endswith("[transient]") and lines[1].endswith("[tool_error]"), text
    finally:
        shutdown()


MAP_FLOW = """\
flow flakymap
extern tool user__flaky(n: int) -> int
stage s -> int[] {
  let v = map [1, 2] as n { user__flaky(n: n) retry { attempts: 3, on: [transient] } }
  return v
}
"""

MAP_TOOLS = '''\
import pathlib

def flaky(n: int) -> int:
    """Each n: a ConnectionError first; then n 1 returns, n 2 raises a ValueError."""
    count = pathlib.Path(f"count{n}.txt")
    calls = int(count.read_text()) if count.exists() else 0
    count.write_text(str(calls + 1))
    if calls == 0:
        raise ConnectionError("network down")
    if n == 2:
        raise ValueError("bad value")
    return n
'''


def test_a_page_that_ends_between_two_attempts_shows_the_first_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A map item's attempts are item records, of which a page reads only the first ones:
    the failed attempt on the last line of a page is ``retried`` when its next attempt is on
    the next page, as in the whole listing, and the last failed attempt stays ``error``."""
    (tmp_path / "flakymap.flow").write_text(MAP_FLOW)
    (tmp_path / "tools.py").write_text(MAP_TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\nentry_points = false\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    try:
        result = asyncio.run(
            agentflow.run(tmp_path / "flakymap.flow", {}, durable=True, run_id="fm-1")
        )
        assert result.status == "error" and result.error["code"] == "tool_error"
        url = api.durable_database()
        whole = asyncio.run(api.show_durable_run(url, "fm-1", limit=None))
        statuses = [s["status"] for s in whole.steps]
        assert statuses == ["retried", "done", "retried", "error"], whole.steps
        for offset in range(len(statuses)):  # every page boundary, one step a page
            one = asyncio.run(api.show_durable_run(url, "fm-1", limit=1, offset=offset))
            assert [s["status"] for s in one.steps] == [statuses[offset]], (offset, one.steps)
        text = CliRunner().invoke(main, ["runs", "show", "fm-1", "--limit", "1"]).stdout
        lines = [ln for ln in text.splitlines() if ln.startswith("  ") and "user__flaky" in ln]
        assert [ln.split()[0] for ln in lines] == ["retried"], text
    finally:
        shutdown()
