"""User functions at run time (docs/reference/programs.md "User functions"): calls in a `let`,
a text interpolation, a `filter` condition and a `map` body run with the parameters bound;
nested calls whose body reads its parameter twice cost their calls; a failure inside a body
names the function and the call in the `.flow`'s terms, keeping its code; a durable run gives
the same value."""

from __future__ import annotations

from agentflow import api

SOURCE = """\
type Severity = "low" | "medium" | "high"
type Ticket { title: text, severity: Severity, n: int }
input Ticket[]

fn rank(s: Severity) -> int = if s == "high" then 3 else if s == "medium" then 2 else 1
fn label(t: Ticket, prefix: text) -> text = "${prefix}: ${upper(t.title)}"
fn twice(x: int) -> int = x + x
fn share(t: Ticket) -> number = 10 / t.n

stage main -> json {
  let top = rank(input[0].severity)
  let urgent = filter input as t where rank(t.severity) >= 2
  let labels = map input as t { return label(t, "P${rank(t.severity)}") }
  let big = twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(top))))))))))))
  return { top: top, urgent: urgent[*].title, labels: labels, big: big, share: share(input[0]) }
}
"""

TICKETS = [
    {"title": "disk full", "severity": "high", "n": 4},
    {"title": "typo", "severity": "low", "n": 1},
]


def _run(tmp_path, tickets, **options):  # type: ignore[no-untyped-def]
    plan = api.compile_source(SOURCE, "tickets.flow").plan
    return api.run_sync(
        api.plan_from_data(plan, "tickets.flow"), tickets, workspace=str(tmp_path), **options
    )


def test_functions_run_in_a_let_an_interpolation_a_filter_and_a_map_body(tmp_path):
    result = _run(tmp_path, TICKETS)
    assert result.error is None
    assert result.output == {
        "top": 3,
        "urgent": ["disk full"],
        "labels": ["P3: DISK FULL", "P1: TYPO"],
        "big": 3 * 2**12,
        "share": 2.5,
    }


def test_a_failure_inside_a_function_names_it_and_the_call_as_written(tmp_path):
    result = _run(tmp_path, [{"title": "x", "severity": "low", "n": 0}])
    assert result.error is not None
    assert result.error.code == "arithmetic"
    assert result.error.message.startswith(
        "in function `share`, called as `share(input[0])`: `10 / t.n`: division by zero"
    )
    assert "E0" not in result.error.message


def test_a_library_failure_inside_a_function_keeps_its_code_and_names_the_caller(tmp_path):
    source = (
        "input { items: text[] }\n"
        "fn first(xs: text[], n: int) -> text[] = take(xs, n)\n"
        "stage s -> json {\n"
        "  let picked = map [1] as k { return first(input.items, k - 2) }\n"
        "  return picked\n}\n"
    )
    plan = api.plan_from_data(api.compile_source(source, "lib.flow").plan, "lib.flow")
    result = api.run_sync(plan, {"items": ["a"]}, workspace=str(tmp_path))
    assert result.error is not None and result.error.code == "invalid_argument"
    assert "in function `first`, called as `first(input.items, k - 2)`" in result.error.message


def test_a_durable_run_evaluates_functions_the_same(tmp_path):
    result = _run(tmp_path, TICKETS, durable=True, database=str(tmp_path / "db.sqlite"))
    assert result.error is None
    assert result.output["labels"] == ["P3: DISK FULL", "P1: TYPO"]
    assert result.output["big"] == 3 * 2**12


def test_test_blocks_call_functions_in_inputs_expectations_and_inlined_stages(tmp_path):
    flow = tmp_path / "ranks.flow"
    flow.write_text(
        "input { s: text }\n"
        'fn rank(s: text) -> int = if s == "high" then 3 else 1\n'
        "stage main -> int { return rank(input.s) }\n"
        'test "ranks" {\n  input { s: "high" }\n  expect main == rank("high")\n'
        "  expect rank(input.s) == 3\n}\n"
    )
    report = api.run_tests(str(flow), cache=str(tmp_path / "cache"))
    assert [(o.name, o.passed, o.failures) for o in report.outcomes] == [("ranks", True, [])]


def test_a_parameter_named_like_a_compiled_scope_name_is_quoted_as_the_body_writes_it(tmp_path):
    source = (
        "input int[]\n"
        "fn per(item: int) -> number = 10 / item\n"
        "stage main -> json {\n  return map input as t { return per(t) }\n}\n"
    )
    plan = api.plan_from_data(api.compile_source(source, "it.flow").plan, "it.flow")
    result = api.run_sync(plan, [0], workspace=str(tmp_path))
    assert result.error is not None
    assert "in function `per`, called as `per(t)`: `10 / item`: division by zero" in (
        result.error.message
    )


def test_a_failure_inside_a_function_called_from_an_inlined_let_is_placed_at_the_let(tmp_path):
    source = (
        "input { n: int }\n"
        "fn inv(n: int) -> number = 1 / n\n"
        "stage a -> text {\n"
        "  let p = inv(input.n)\n"
        "  let z = 1\n"
        '  return "${p} ${z}"\n}\n'
    )
    plan = api.plan_from_data(api.compile_source(source, "inv.flow").plan, "inv.flow")
    error = api.run_sync(plan, {"n": 0}, workspace=str(tmp_path)).error
    assert error is not None and error.code == "arithmetic"
    assert (error.source, error.where.get("label")) == ("inv.flow:4:11", "a › p")


def test_the_caret_of_an_error_inside_a_function_is_on_the_call_as_written():
    lines = ["stage a -> text {", "  let p = inv(input.n)", "}"]
    message = "in function `inv`, called as `inv(input.n)`: `1 / n`: division by zero"
    assert api.expression_position(lines, 2, message) == (2, 11, len("inv(input.n)"))
