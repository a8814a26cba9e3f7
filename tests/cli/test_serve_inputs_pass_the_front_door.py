"""Every entry refuses the numbers `flowc run --input` refuses (docs/decisions.md "Numbers and
secrets at the front door", "Break-it fixes, stop 44"): an MCP client's arguments parsed by a
lenient JSON reader (`NaN`, `Infinity`, an integer past 64 bits), a dict given to
`agentflow.run`, an answer sent as data, a YAML dataset case. An outside tester got
`{"result": null}` for NaN, `x > 5` true for Infinity and a 31-digit int echoed back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.mcp_wire import INITIALIZE, next_reply

from agentflow import api
from agentflow.errors import InputError
from agentflow.runtime.hooks import check_answer

FLOWC = Path(sys.executable).parent / "flowc"

BIG = 'flow big "b"\ninput { n: int }\nstage s -> int { return input.n }\n'
GT = 'flow gt "g"\ninput { x: number }\nstage s -> bool { return input.x > 5 }\n'
INF = (
    "a number too large for a float (`1e999` …) or `Infinity` is not a JSON number; "
    "the largest is about 1.8e308"
)
NINF = INF.replace("`1e999`", "`-1e999`").replace("`Infinity`", "`-Infinity`")
RANGE = "is outside the range of an int (-9223372036854775808 to 9223372036854775807)"


def _as(f: str) -> str:
    """The hint of a whole number past 64 bits: the float a `number` takes instead."""
    return f"; for a `number`, write it as a float: `{f}` (about 16 significant digits)"


def test_serve_refuses_nan_infinity_and_ints_past_64_bits_as_input_does(tmp_path: Path) -> None:
    (tmp_path / "big.flow").write_text(BIG)
    (tmp_path / "gt.flow").write_text(GT)
    proc = subprocess.Popen(
        [str(FLOWC), "serve", "--mcp", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
        assert next_reply(proc)["id"] == 1
        proc.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        calls = [
            ("big", '{"n":1000000000000000000000000000000}', f"(31 digits) {RANGE}{_as('1e+30')}"),
            (
                "big",
                '{"n":9223372036854775808}',
                f"`9223372036854775808` (19 digits) {RANGE}{_as('9.223372036854776e+18')}",
            ),
            ("gt", '{"x":NaN}', "input.x: `NaN` is not a JSON number"),
            ("gt", '{"x":Infinity}', f"input.x: {INF}"),
            ("gt", '{"x":1e999}', f"input.x: {INF}"),
            ("gt", '{"x":-Infinity}', f"input.x: {NINF}"),
            ("gt", '{"x":6}', None),
        ]
        for n, (tool, arguments, refused) in enumerate(calls, 2):
            proc.stdin.write(
                f'{{"jsonrpc":"2.0","id":{n},"method":"tools/call",'
                f'"params":{{"name":"{tool}","arguments":{arguments}}}}}\n'
            )
            proc.stdin.flush()
            reply = next_reply(proc)
            assert reply["id"] == n, reply
            result = reply["result"]
            if refused is None:
                assert result["structuredContent"] == {"result": True}, reply
            else:
                assert result["isError"] is True, reply
                assert result["content"][0]["text"].endswith(refused), reply
    finally:
        proc.kill()
        proc.wait(10)


def test_run_with_a_dict_refuses_what_input_refuses(tmp_path: Path) -> None:
    (tmp_path / "gt.flow").write_text(GT)
    (tmp_path / "big.flow").write_text(BIG)
    with pytest.raises(InputError, match=r"^input\.x: `NaN` is not a JSON number$"):
        api.run_sync(str(tmp_path / "gt.flow"), {"x": float("nan")})
    with pytest.raises(InputError, match=r"^input\.n: `10000000000000000000…` \(31 digits\) is"):
        api.run_sync(str(tmp_path / "big.flow"), {"n": 10**30})
    assert api.run_sync(str(tmp_path / "gt.flow"), {"x": 1e308}).output is True


def test_an_answer_sent_as_data_is_held_to_the_same_numbers() -> None:
    schema = {"type": "number"}
    assert check_answer(float("inf"), schema, None) == f"answer: {INF}"
    assert check_answer({"n": 2**64}, None, None) == (
        f"answer.n: `18446744073709551616` (20 digits) {RANGE}{_as('1.8446744073709552e+19')}"
    )
    assert check_answer(1.5, schema, None) is None


def test_a_yaml_dataset_case_with_an_int_past_64_bits_is_its_diagnostic(tmp_path: Path) -> None:
    from agentflow.evals.dataset import read_dataset

    (tmp_path / "cases.yaml").write_text("- input: { n: 100000000000000000000000 }\n")
    got = read_dataset(tmp_path / "cases.yaml")
    assert not got.cases
    ((diag,),) = [got.diagnostics]
    assert diag.code == "invalid-value" and diag.message.startswith("the case.input.n: ")
