"""A refused answer is said in the `.flow`'s types, never JSON Schema's (``"maybe" is not of
type "boolean"``): ``bool``, ``int``, an inline object's fields, the name of the ``expect``
type — at the one place every answer is checked (``check_answer``: the terminal, ``--answer``,
``flowc answer``, the ui form) (docs/reference/control.md "ask")."""

from __future__ import annotations

from agentflow import api
from agentflow.runtime.hooks import check_answer

FLOW = """\
type Plan { name: text, steps: int }
stage s -> text {
  let ok = ask "Proceed?" expect bool
  let n = ask "How many?" expect int
  let p = ask "Plan?" expect Plan
  let ps = ask "Plans?" expect Plan[]
  return "x"
}
"""


def _asks(tmp_path):
    flow = tmp_path / "asks.flow"
    flow.write_text(FLOW, encoding="utf-8")
    return {s.meta["name"]: s.input for s in api.load(flow).steps if s.tool_name == "ask"}


def test_a_wrong_answer_names_the_flows_type(tmp_path):
    asks = _asks(tmp_path)

    def said(name, value):
        return check_answer(value, asks[name]["schema"], asks[name].get("choices"))

    assert said("ok", "maybe") == '`answer` is "maybe", but the ask\'s type wants `bool` here'
    assert said("n", 2.5) == "`answer` is 2.5, but the ask's type wants `int` here"
    assert said("p", {"name": "a"}) == (
        "`answer` lacks the required field `steps` of the ask's type `Plan`"
    )
    assert said("p", {"name": 1, "steps": 2}) == (
        "`answer.name` is 1, but the ask's type wants `text` here"
    )
    assert said("ps", [{"name": "a", "steps": "b"}]) == (
        '`answer[0].steps` is "b", but the ask\'s type wants `int` here'
    )
    for name, value in (("ok", "maybe"), ("n", 2.5), ("p", 3), ("ps", {})):
        problem = said(name, value)
        assert "boolean" not in problem and "integer" not in problem and "object" not in problem
