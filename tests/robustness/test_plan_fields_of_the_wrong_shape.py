"""Plan fields holding a value of the wrong shape (a mapping or list where a name is expected),
as the plan fuzzer (``support.fuzz``, ``bench/fuzz.py plans``) produces them: each gives a
positioned load error, never a traceback."""

from __future__ import annotations

import pytest

from agentflow.errors import PlanLoadError
from agentflow.ir.loader import load_plan_text


def _problems(text: str) -> list[str]:
    with pytest.raises(PlanLoadError) as exc:
        load_plan_text(text, "p.yaml")
    return [str(p) for p in exc.value.errors]


@pytest.mark.parametrize("entry", ["{}", "[tool_error]", "1"])
def test_try_on_entry_that_is_not_a_name_is_a_positioned_error(entry):
    errs = _problems(
        "version: 1\nname: a\nsteps:\n  - id: E0\n    tool_name: try\n    input:\n"
        "      do: {tool_name: value, input: {value: 1}}\n"
        f"      'on': [{entry}, tool_error]\n"
        "      catch: {tool_name: value, input: {value: 2}}\n"
    )
    assert len(errs) == 1
    assert errs[0].startswith("p.yaml:8:14: steps[0].input.on[0]: `on` lists ")
    assert errs[0].endswith(", which is not an error code")
