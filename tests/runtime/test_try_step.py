"""The `try` control step of hand-written plans: `do`'s result, or on a failure with a listed
code `catch`'s result with `error` in scope and a `step_caught` event; retries come first; codes
are checked at load."""

from __future__ import annotations

import pytest

from agentflow.errors import PlanLoadError
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.executor import run_plan
from agentflow.runtime.tools.catalog import Catalog

PLAN = """
version: 1
name: t
steps:
  - id: E0
    tool_name: try
    input:
      do:
        tool_name: user__flaky
        input: {{ n: "{{{{ input.n }}}}" }}
        retry: {{ attempts: 2, on: [transient], backoff: {{ initial: 1ms }} }}
      {on}
      catch: {{ tool_name: value, input: {{ value: "caught {{{{ error.code }}}} at {{{{ error.step }}}}" }} }}
"""


class Flaky:
    def __init__(self, failures: int, code: str = "transient"):
        self.failures, self.code, self.calls = failures, code, 0

    def __call__(self, n: int) -> str:
        from agentflow.errors import RunError

        self.calls += 1
        if self.calls <= self.failures:
            raise RunError(self.code, f"call {self.calls} failed")
        return f"ok after {self.calls}"


async def _run(flaky: Flaky, on: str = ""):
    catalog = Catalog()
    catalog.register_function("user__flaky", flaky)
    events: list = []
    plan = load_plan_text(PLAN.format(on=on), "t.plan.yaml")
    res = await run_plan(plan, {"n": 1}, catalog=catalog, sinks=[CallbackSink(events.append)])
    return res, [e for e in events if e.kind == "step_caught"]


async def test_retries_run_before_the_catch():
    flaky = Flaky(failures=1)
    res, caught = await _run(flaky)
    assert res.status == "ok" and res.output == "ok after 2"
    assert caught == []


async def test_a_failure_after_the_retries_is_caught_with_its_error():
    flaky = Flaky(failures=5)
    res, caught = await _run(flaky)
    assert flaky.calls == 3  # the first call and its two retries
    assert res.status == "ok" and res.output == "caught transient at E0/do"
    assert caught[0].path == "E0" and caught[0].data["error"]["code"] == "transient"


async def test_only_the_listed_codes_are_caught():
    res, caught = await _run(Flaky(failures=5, code="tool_error"), on="on: [timeout, transient]")
    assert res.status == "error" and res.error["code"] == "tool_error" and caught == []
    res, caught = await _run(Flaky(failures=5, code="tool_error"), on="on: [tool_error]")
    assert res.status == "ok" and res.output == "caught tool_error at E0/do"


@pytest.mark.parametrize(
    ("on", "problem"),
    [
        ("on: [deadline_exceeded]", "`deadline_exceeded` stops the run and cannot be caught"),
        ("on: [time_out]", "`on` lists 'time_out', which is not an error code"),
        ("on: []", "`on` must be a non-empty list of error codes"),
    ],
)
def test_codes_are_checked_at_load(on, problem):
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(PLAN.format(on=on), "t.plan.yaml")
    assert problem in str(info.value) and "t.plan.yaml:12:" in str(info.value)


def test_the_console_shows_the_failure_and_that_it_was_caught():
    import io

    from agentflow.runtime.events import ConsoleSink
    from agentflow.runtime.executor import run_plan_sync

    catalog = Catalog()
    catalog.register_function("user__flaky", Flaky(failures=5, code="tool_error"))
    buf = io.StringIO()
    plan = load_plan_text(PLAN.format(on=""), "t.plan.yaml")
    res = run_plan_sync(plan, {"n": 1}, catalog=catalog, sinks=[ConsoleSink(buf)])
    assert res.status == "ok"
    out = buf.getvalue()
    assert "✗ E0/do" in out and "↪ E0 caught tool_error: call 1 failed" in out and "✓ E0 " in out
