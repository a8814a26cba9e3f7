"""Issue 31 item 4: every run-time error a `.flow` expression raises names the expression in the
`.flow`'s own terms — never a compiled step id (``E0``), nor the scope names lowering binds
(``item``, ``accumulator``, ``input.env.…``) where the user wrote other names.

The programs are generated: each failing expression (one per error code the evaluator and the
library raise) is placed in each way a value reaches it (a ``let`` bound to a tool's result, a
stage's value, a ``map``'s item, a ``reduce``'s item and state, a ``filter``'s gate, a
``loop``'s round and state, a body the compiler outlines into a sub-plan), and run; every
identifier the message quotes must appear in the `.flow` source (or be a library function).
"""

from __future__ import annotations

import itertools
import re

import pytest

from agentflow import api
from agentflow.core.functions import FUNCTIONS
from agentflow.ir.loader import load_plan_data

#: failing expressions over a text ``{t}``: (error code, expression)
FAILURES = {
    "bad_path": 'len(split({t}, ",")[7])',
    "parse_error": "parse_int({t})",
    "invalid_argument": 'len(take(split({t}, ","), 0 - 1))',
    "arithmetic": "len({t}) % (len({t}) - len({t}))",
}

#: how the text reaches the failing expression: (.flow stages with ``{fail}`` where the
#: expression goes and ``{t}`` where the text is read), the value type of the last stage
CONTEXTS = {
    "a let bound to a tool's result": (
        "stage reading -> int {\n"
        '  let ticket = read_file(path: "notes.txt")\n'
        "  let n = {fail}\n"
        "  return n\n"
        "}",
        "ticket",
    ),
    "a stage's value": (
        'stage ticket -> text {\n  return read_file(path: "notes.txt")\n}\n'
        "stage after -> int {\n  return {fail}\n}",
        "ticket",
    ),
    "a map item": (
        "stage each -> int[] {\n  map input.lines as line {\n    return {fail}\n  }\n}",
        "line",
    ),
    "a map item in an outlined body": (
        "stage each -> int[] {\n  map input.lines as line {\n"
        '    let copy = read_file(path: "notes.txt")\n'
        "    let n = {fail}\n"
        "    return n + len(copy)\n  }\n}",
        "line",
    ),
    "a reduce's item and state": (
        "stage total -> int {\n  reduce input.lines as line, sum = 0 {\n"
        "    return sum + {fail}\n  }\n}",
        "line",
    ),
    "a filter's gate": (
        "stage kept -> text[] {\n  filter input.lines as line where {fail} > 0\n}",
        "line",
    ),
    "a loop's round and state": (
        "stage rounds -> int {\n  loop up to 2 as turn, best = 0 {\n"
        "    return best + {fail}\n  }\n}",
        "input.lines[turn]",
    ),
}

#: the parameter names of the library functions (``take``'s `n`), which messages may name
PARAMETERS = {p for f in FUNCTIONS.values() for p in re.findall(r"(\w+)\??:", f.signature)}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUOTED = re.compile(r"`([^`]*)`")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _program(context: str, code: str) -> str:
    stages, text = CONTEXTS[context]
    fail = FAILURES[code].replace("{t}", text)
    body = stages.replace("{fail}", fail)
    return f"flow gen\ninput {{ lines: text[] }}\n\n{body}\n"


CASES = list(itertools.product(CONTEXTS, FAILURES))


@pytest.mark.parametrize(("context", "code"), CASES, ids=[f"{c}-{k}" for c, k in CASES])
def test_a_run_time_error_names_only_what_the_flow_wrote(tmp_path, context, code):
    source = _program(context, code)
    (tmp_path / "notes.txt").write_text("x,y", encoding="utf-8")
    compiled = api.compile_source(source, "gen.flow")
    plan = load_plan_data(compiled.plan, "gen.flow")
    result = api.run_sync(plan, {"lines": ["a,b", "c"]}, workspace=str(tmp_path))
    assert result.status == "error", (source, result.output)
    error = result.error
    assert error is not None and error.code == code, (source, error)
    message = error.message
    assert not re.search(r"\bE\d+\b", message), (source, message)
    written = set(_IDENT.findall(_STRING.sub('""', source)))
    for quoted in _QUOTED.findall(message):
        for word in _IDENT.findall(_STRING.sub('""', quoted)):
            assert word in written or word in FUNCTIONS or word in PARAMETERS, (word, message)


BUDGETED_AGENT = """\
flow gen
input { lines: text[] }
use agent "sre" as sre
stage each -> text[] {
  map input.lines as line {
    agent(sre) {
      task "Summarise ${line}"
      expect text
      budget { inferences: 0 }
    }
  }
}
"""


def test_an_agents_budget_is_named_by_its_place_in_the_flow(tmp_path):
    # `the agent step E0/do.0 budget of 0 inference(s)`: now the agent's place, as progress
    # lines name it, and its `budget`'s line
    compiled = api.compile_source(BUDGETED_AGENT, "gen.flow")
    plan = load_plan_data(compiled.plan, "gen.flow")
    result = api.run_sync(plan, {"lines": ["a"]}, workspace=str(tmp_path), model="test")
    assert result.status == "error" and result.error.code == "budget_exceeded", result.error
    message = result.error.message
    assert not re.search(r"\bE\d+\b", message), message
    assert message.startswith("the `each › item 0 › agent(sre)` budget of 0 inference(s)"), message
    assert "its `budget`, gen.flow:6:5" in message
