"""The graph (and so the report, which draws it) shows object keys and named arguments as the
`.flow` writes them: a key spelled like one of the plan's scope names (``item``,
``accumulator``, ``round``) is never taken for the loop variable the compiler renamed
(ir/names.py ``in_source_terms``)."""

from __future__ import annotations

from agentflow import api
from agentflow.ir.names import in_source_terms

FLOW = """\
input { xs: int[] }

stage s -> int {
  let r = reduce input.xs as x, acc = {accumulator: 0, item: 0} { { accumulator: acc.accumulator + x, item: x } }
  let m = map input.xs as x { {item: x, index: x} }
  let l = loop up to 3 as r, st = {n: 0, round: 0} { {n: st.n + 1, round: 0} }
  return r.accumulator + len(m) + l.n
}
"""


def test_the_graph_keeps_object_keys_named_like_scope_names(tmp_path):
    flow = tmp_path / "keys.flow"
    flow.write_text(FLOW)
    shown = api.graph(flow)
    assert "{accumulator: acc.accumulator + x, item: x}" in shown
    assert "{item: x, index: x}" in shown
    assert "as r, st = {n: 0, round: 0}" in shown
    assert "{n: st.n + 1, round: 0}" in shown
    assert "{acc:" not in shown and "{x: x" not in shown and ", r: 0" not in shown


def test_in_source_terms_renames_values_but_not_keys_or_named_arguments():
    names = {"item": "t", "accumulator": "acc", "E0": "tickets"}
    assert in_source_terms("{item: item, accumulator : accumulator}", names) == (
        "{item: t, accumulator : acc}"
    )
    assert in_source_terms("f(item, round: item)", names) == "f(t, round: t)"
    assert in_source_terms("{a: E0,\n item: [item]}", names) == "{a: tickets,\n item: [t]}"
    assert in_source_terms('"${ {item: item} }"', names) == '"${ {item: t} }"'
