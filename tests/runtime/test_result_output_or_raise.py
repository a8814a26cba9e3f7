"""``RunResult.output_or_raise()``: the output of a run that ended ok, else its error raised
(docs/reference/python-api.md "RunResult"); ``usage`` stays a plain dict at run time."""

from __future__ import annotations

import pytest

from agentflow.errors import ErrorInfo, ExitError, RunError
from agentflow.runtime.result import RunResult


def test_the_output_of_an_ok_run_is_returned_and_a_failed_runs_error_raised():
    assert RunResult(status="ok", output=[1]).output_or_raise() == [1]
    assert RunResult(status="exited", output=None).output_or_raise() is None
    failed: RunResult[int] = RunResult(
        status="error", error=ErrorInfo("tool_error", "boom", "E0", "f.flow:3:5")
    )
    with pytest.raises(RunError) as e:
        failed.output_or_raise()
    assert (e.value.code, str(e.value), e.value.step_path) == ("tool_error", "boom", "E0")
    own = RunResult(status="error", error=ErrorInfo("no_stock", "sold out"))
    with pytest.raises(ExitError, match="sold out"):
        own.output_or_raise()


def test_usage_is_a_plain_dict_at_run_time():
    usage = RunResult(status="ok").usage
    assert type(usage) is dict and usage["inferences"] == 0
