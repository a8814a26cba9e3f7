"""A `type-mismatch` whose value is a failure's code (`e.code` of a `catch`, of every run-time
code it can carry) names it shortly, "the error code (one of the run-time codes)", rather than
listing the long literal union; a short union of codes is listed
(docs/reference/errors-as-values.md)."""

from __future__ import annotations

from agentflow.compiler.api import check_source

_FLOW = """input { n: int }
use agent "writer" as writer
stage s -> int {
  return try {
    agent(writer) {
      task "w"
      expect int
    }
  } catch CLAUSE as e { e.code }
}
"""


def _messages(text: str) -> list[str]:
    return [
        d.message for d in check_source(text, "c.flow").diagnostics if d.code == "type-mismatch"
    ]


def test_the_code_of_any_caught_failure_is_named_not_listed() -> None:
    assert _messages(_FLOW.replace("CLAUSE ", "")) == [
        "expected `int`, found the error code (one of the run-time codes)"
    ]


def test_an_operator_on_the_code_names_it_shortly_too() -> None:
    text = _FLOW.replace("CLAUSE ", "").replace("{ e.code }", "{ -e.code }")
    [message] = _messages(text)
    assert message == "`-` needs a number, found the error code (one of the run-time codes)"


def test_a_short_union_of_codes_is_listed() -> None:
    text = 'input { c: "timeout" | "failed" }\nstage s -> int {\n  return input.c\n}\n'
    assert _messages(text) == ['expected `int`, found `"timeout" | "failed"`']
