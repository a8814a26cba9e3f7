"""A whole number past 64 bits is refused at the one front door of values (`--input` text, a
parsed input given to `agentflow.run`), with the float to write for a `number` — which a
`number` input then takes — and a float for an `int` is still refused
(docs/reference/cli.md "Input", docs/decisions.md "Edges of flowc test, unions and inputs")."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import agentflow
from agentflow.cli import main
from agentflow.errors import InputError

FLOW = """\
input { x: number, n: int }
stage s -> number {
  return input.x + input.n
}
"""
RANGE = "is outside the range of an int (-9223372036854775808 to 9223372036854775807)"


def test_the_message_gives_the_float_a_number_takes_and_the_float_runs(tmp_path):
    flow = tmp_path / "nums.flow"
    flow.write_text(FLOW, encoding="utf-8")
    big = '{"x": 100000000000000000000, "n": 1}'
    result = CliRunner().invoke(main, ["run", str(flow), "--input", big])
    assert result.exit_code == 1, result.output
    assert (
        f"--input: input is not valid JSON: `100000000000000000000` (21 digits) {RANGE}"
        "; for a `number`, write it as a float: `1e+20` (about 16 significant digits)"
    ) in result.output
    result = CliRunner().invoke(main, ["run", str(flow), "--input", big.replace("100000000000000000000", "1e20")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "1e+20"
    # a parsed value: the same message, at its path; an `int` is refused a float
    with pytest.raises(InputError) as refused:
        agentflow.run_sync(flow, {"x": -(10**21), "n": 1})
    assert str(refused.value) == (
        f"input.x: `-1000000000000000000000` (22 digits) {RANGE}; for a `number`, write it "
        "as a float: `-1e+21` (about 16 significant digits)"
    )
    with pytest.raises(InputError, match="`input.n` is 1e\\+20, but the flow's input type wants `int`"):  # fmt: skip
        agentflow.run_sync(flow, {"x": 1, "n": 1e20})


def test_a_whole_number_past_the_largest_float_is_too_large_for_a_number_too():
    from agentflow.runtime.extract import NonJsonNumber, json_number_problem, loads_value

    with pytest.raises(NonJsonNumber, match="; it is too large for a `number` too$"):
        loads_value("1" + "0" * 400)
    assert json_number_problem({"n": 10**400}) == (
        f"input.n: `10000000000000000000…` (401 digits) {RANGE}; it is too large for a `number` too"
    )
