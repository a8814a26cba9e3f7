"""A run-time error in a value the `.flow` wrote without ``return`` — the last expression of a
``map``, ``reduce`` or ``loop`` body, or of a stage — is placed by where it is
(``totals › item 1``, ``s › round 1``, ``s``), never ``› return``, which the user did not
write; a written ``return`` is still named so (docs/reference/expressions.md)."""

from __future__ import annotations

import pytest

from agentflow import api

BODIES = {
    "map": (
        "type Row { qty: text }\ninput { xs: Row[] }\n"
        "stage totals -> int[] {\n  return map input.xs as it { parse_int(it.qty) }\n}\n",
        {"xs": [{"qty": "1"}, {"qty": "x"}]},
        "totals › item 1",
    ),
    "map with return": (
        "input { xs: text[] }\n"
        "stage totals -> int[] {\n  return map input.xs as it {\n    return parse_int(it)\n  }\n}\n",
        {"xs": ["1", "x"]},
        "totals › item 1 › return",
    ),
    "reduce": (
        "input { xs: text[] }\nstage totals -> int {\n"
        "  let r = reduce input.xs as it, acc = 0 { acc + parse_int(it) }\n  return r\n}\n",
        {"xs": ["1", "x"]},
        "totals › item 1",
    ),
    "loop": (
        "input { xs: text[] }\nstage s -> int {\n"
        "  return loop up to 2 as round, acc = 0 { acc + parse_int(input.xs[round - 1]) }\n}\n",
        {"xs": ["1", "x"]},
        "s › round 2",
    ),
    "stage": (
        "input { xs: text[] }\nstage s -> int {\n  parse_int(input.xs[0])\n}\n",
        {"xs": ["x"]},
        "s",
    ),
    "stage after a step": (
        'input { xs: text[] }\nstage s -> int {\n  let t = read_file(path: "n.txt")\n'
        "  parse_int(t)\n}\n",
        {"xs": []},
        "s",
    ),
    "fn": (
        "input { xs: text[] }\nfn conv(t: text) -> int = parse_int(t)\n"
        "stage s -> int[] {\n  return map input.xs as it { conv(it) }\n}\n",
        {"xs": ["x"]},
        "s › item 0",
    ),
}


@pytest.mark.parametrize("case", list(BODIES))
def test_a_value_written_without_return_is_named_by_its_place(tmp_path, case):
    text, given, label = BODIES[case]
    (tmp_path / "n.txt").write_text("hello", encoding="utf-8")
    flow = tmp_path / "f.flow"
    flow.write_text(text, encoding="utf-8")
    result = api.run_sync(api.load(flow), given, workspace=str(tmp_path))
    assert result.status == "error"
    assert result.error.code == "parse_error", result.error
    assert result.error.to_dict()["label"] == label


def test_a_last_expression_computed_on_a_tools_result_quotes_the_lets_name(tmp_path):
    # the body's value is computed from the tool's result (its step's `select`): said with
    # the `let` the user wrote (`parse_int(t)`), never the plan's `result`
    (tmp_path / "n.txt").write_text("hello", encoding="utf-8")
    flow = tmp_path / "f.flow"
    flow.write_text(
        "input { xs: path[] }\nstage s -> int[] {\n  return map input.xs as it {\n"
        "    let t = read_file(path: it)\n    parse_int(t)\n  }\n}\n",
        encoding="utf-8",
    )
    result = api.run_sync(api.load(flow), {"xs": ["n.txt"]}, workspace=str(tmp_path))
    assert result.error.code == "parse_error", result.error
    assert result.error.message == '`parse_int(t)`: "hello" is not an integer'
