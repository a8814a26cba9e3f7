"""A tool call's `timeout` and `retry` clauses at run time (docs/reference/tools.md "Timeout and
retry", docs/spec/RUNTIME.md §2): real `.flow` programs compiled and run through `agentflow.run`
with Python tools in a real catalog — a tool that fails transiently once succeeds with `retry`;
one that sleeps past its `timeout` fails with code `timeout` soon after the bound (scaled by the
machine's measured contention, tests/support/timing.py); a durable run records each attempt at
the call's step path; and the reference's `test` blocks (stubbed tools with `retry`) pass."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from support.durable_questions import recorded_operations
from support.paths import DOCS
from support.timing import Stretch

import agentflow
from agentflow import api
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.tools.catalog import Catalog

FLOW = """\
extern tool user__flaky(n: int) -> int
extern tool user__slow(n: int) -> int
input { n: int }

stage fetched -> int {
  return {STAGE}
}
"""


def _flow(tmp_path: Path, call: str) -> Path:
    path = tmp_path / "calls.flow"
    path.write_text(FLOW.replace("{STAGE}", call), encoding="utf-8")
    return path


def _catalog(calls: list[int], *, fail_first: bool = False, slow_first: bool = False) -> Catalog:
    def user__flaky(n: int) -> int:
        calls.append(n)
        if fail_first and len(calls) == 1:
            raise ConnectionError("connection reset by peer")
        return 2 * n

    async def user__slow(n: int) -> int:
        calls.append(n)
        if slow_first and len(calls) > 1:
            return 3 * n
        await asyncio.sleep(30)
        return n

    cat = Catalog()
    cat.register_function("user__flaky", user__flaky)
    cat.register_function("user__slow", user__slow)
    return cat


def test_a_tool_that_fails_transiently_once_succeeds_with_retry(tmp_path: Path) -> None:
    calls: list[int] = []
    events: list = []
    flow = _flow(tmp_path, "user__flaky(n: input.n) retry { attempts: 2 }")
    result = api.run_sync(
        flow,
        {"n": 21},
        workspace=tmp_path,
        catalog=_catalog(calls, fail_first=True),
        sinks=[CallbackSink(events.append)],
    )
    assert result.status == "ok" and result.output == 42, result.error
    assert calls == [21, 21]
    (retry,) = [e for e in events if e.kind == "retry"]
    assert retry.data["attempt"] == 1 and retry.data["code"] == "transient"


def test_without_retry_the_same_transient_failure_fails_the_step(tmp_path: Path) -> None:
    calls: list[int] = []
    flow = _flow(tmp_path, "user__flaky(n: input.n)")
    result = api.run_sync(
        flow, {"n": 1}, workspace=tmp_path, catalog=_catalog(calls, fail_first=True)
    )
    assert result.status == "error" and result.error["code"] == "transient"
    assert calls == [1]


def test_a_tool_that_sleeps_past_its_timeout_fails_with_code_timeout(tmp_path: Path) -> None:
    calls: list[int] = []
    flow = _flow(tmp_path, "user__slow(n: input.n) timeout 200ms")
    with Stretch() as clock:
        result = api.run_sync(flow, {"n": 1}, workspace=tmp_path, catalog=_catalog(calls))
    assert result.status == "error" and result.error["code"] == "timeout", result.error
    assert result.error["source"] == "calls.flow:6:10"  # the call in the user's file
    assert calls == [1]
    assert clock.took < clock.bound(5)  # the 30 s sleep was cut at the bound, not waited out


def test_an_attempt_cut_by_its_timeout_is_retried_when_timeout_is_listed(tmp_path: Path) -> None:
    calls: list[int] = []
    flow = _flow(
        tmp_path, "user__slow(n: input.n) timeout 200ms retry { attempts: 1, on: [timeout] }"
    )
    result = api.run_sync(
        flow, {"n": 5}, workspace=tmp_path, catalog=_catalog(calls, slow_first=True)
    )
    assert result.status == "ok" and result.output == 15, result.error
    assert calls == [5, 5]


TOOLS = '''\
import os


def flaky(n: int) -> int:
    """Fails with a reset connection the first time, then doubles ``n``."""
    mark = os.path.join(os.path.dirname(os.path.abspath(__file__)), "failed-once")
    if not os.path.exists(mark):
        open(mark, "w").close()
        raise ConnectionError("connection reset by peer")
    return 2 * n
'''


def test_a_durable_run_records_each_attempt_at_the_calls_step_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import dbos_engine
    from agentflow.runtime.durable.database import database_for, open_database

    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\nentry_points = false\n')
    flow = _flow(tmp_path, "user__flaky(n: input.n) retry { attempts: 1, on: [transient] }")
    monkeypatch.chdir(tmp_path)
    config = load_config(str(tmp_path / "flow.toml"))
    url = database_for(config)
    open_database(url, executor_id="test", queues=[])
    try:
        result = asyncio.run(
            agentflow.run(flow, {"n": 21}, config=config, durable=True, run_id="retried")
        )
        assert result.status == "ok" and result.output == 42, result.error
        tool_ops = [n for n in recorded_operations(tmp_path) if "/tool:" in n]
        assert tool_ops == ["E0/tool:user__flaky#1", "E0/tool:user__flaky#2"]
        shown = asyncio.run(api.show_durable_run(url, "retried"))
        steps = [s for s in shown.steps if "user__flaky" in str(s)]
        assert len(steps) == 2 and "error" in str(steps[0]) and "error" not in str(steps[1]), steps
    finally:
        dbos_engine.shutdown()


STUBBED_STEP = """\
extern tool user__fetch_page(url: text) -> text
input { url: text }

stage page -> text {
  let page = user__fetch_page(url: input.url) timeout 10s retry { attempts: 2 }
  return "${page}!"
}

test "a call with clauses is a step `stub step` replaces by its name" {
  input { url: "https://example.com" }
  stub step page returns "<html>"
  expect output == "<html>!"
}
"""


def test_the_tools_reference_test_blocks_and_a_stubbed_step_pass(tmp_path: Path) -> None:
    text = (DOCS / "reference" / "tools.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```flow\n(.*?)```", text, re.S) if 'test "' in b]
    assert blocks
    for i, block in enumerate([*blocks, STUBBED_STEP]):
        (tmp_path / f"example{i}.flow").write_text(block, encoding="utf-8")
    report = agentflow.run_tests(tmp_path)
    assert report.ok, [(o.name, o.failures) for o in report.outcomes if not o.passed]
    assert report.passed >= 3
