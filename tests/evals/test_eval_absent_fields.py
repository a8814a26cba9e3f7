"""An absent optional field reads as `null` in eval scorers and `test` expectations as it does in
a stage (docs/reference/types.md "Objects", docs/reference/evals.md): one expression language,
one way of reading fields, wherever it is evaluated."""

from __future__ import annotations

from agentflow import api
from agentflow.compiler.api import check_source
from agentflow.compiler.lower_expressions import absent_reads_null
from agentflow.compiler.lowering import lower
from agentflow.grammar import ast
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.expressions import evaluate

FLOW = """\
type Item { id: int, note: text? }
type Meta { x: int }
type Out { n: int, note: text?, items: Item[], meta: Meta? }
input { n: int, tag: text? }
stage make -> Out {
  return { n: input.n, items: [{ id: 1 }, { id: 2, note: "two" }] }
}
eval "absent" {
  expect { value: int?, meta: Meta? }
  score input_tag = input.tag == null
  score output_note = output.note == null
  score expected_value = expected.value == null
  score nested = expected.meta.x == null and output.meta.x == null
  score projected = output.items[*].note == [null, "two"]
  score stage_read = (make.note ?? "none") == "none"
  score interpolated = "${output.note}/${expected.value}" == "null/null"
  score present = expected.value == null or expected.value == output.n * 2
}
"""


def _no_model(monkeypatch):
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)


def test_scorers_read_absent_optional_fields_of_input_output_expected_as_null(
    tmp_path, monkeypatch
):
    _no_model(monkeypatch)
    (tmp_path / "o.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(
        '{"name": "without", "input": {"n": 2}, "expected": {}}\n'
        '{"name": "with", "input": {"n": 2, "tag": null}, "expected": {"value": 4}}\n',
        encoding="utf-8",
    )
    report = api.evaluate(tmp_path / "o.flow", [tmp_path / "cases.jsonl"], cache=None)
    assert report.errors == []
    failed = {
        run.case: {k: s.reason for k, s in run.scores.items() if not s.passed}
        for run in report.runs
    }
    # every scorer evaluated (none "could not be evaluated"); only those that read the given
    # value are false, their reason the values compared (a literal side left out)
    assert failed == {
        "without": {},
        "with": {
            "expected_value": "expected.value is 4",
            "interpolated": '"${output.note}/${expected.value}" is "null/4"',
        },
    }


def test_the_issue_s_eval_scores_a_case_without_the_optional_field(tmp_path, monkeypatch):
    _no_model(monkeypatch)
    (tmp_path / "opt.flow").write_text(
        "input { n: int }\n"
        "stage double -> int { return input.n * 2 }\n"
        'eval "opt" { dataset "cases.jsonl"  expect { value: int? }'
        "  score exact = output == expected.value }\n",
        encoding="utf-8",
    )
    (tmp_path / "cases.jsonl").write_text(
        '{"name":"with","input":{"n":2},"expected":{"value":4}}\n'
        '{"name":"without","input":{"n":2},"expected":{}}\n',
        encoding="utf-8",
    )
    report = api.evaluate(tmp_path / "opt.flow", cache=None)
    scores = {r.case: (r.scores["exact"].score, r.scores["exact"].reason) for r in report.runs}
    # 4 == null is false: scored 0, not "could not be evaluated" (the reason: the values)
    assert scores == {"with": (1.0, None), "without": (0.0, "output is 4; expected.value is null")}


def test_test_expectations_read_absent_optional_fields_as_null(tmp_path):
    (tmp_path / "t.flow").write_text(
        "type Out { n: int, note: text? }\n"
        "input { n: int, tag: text? }\n"
        "stage s -> Out { return { n: input.n } }\n"
        'test "absent" {\n'
        "  input { n: 1 }\n"
        "  expect output.note == null\n"
        "  expect input.tag == null\n"
        '  expect (s.note ?? "-") == "-"\n'
        "}\n",
        encoding="utf-8",
    )
    report = api.run_tests(tmp_path / "t.flow")
    assert [(o.passed, o.failures) for o in report.outcomes] == [(True, [])]


def test_a_table_test_reads_a_case_s_absent_field_as_null_in_its_input_and_stubs(tmp_path):
    (tmp_path / "t.flow").write_text(
        "input { n: int, note: text? }\n"
        'use agent "w" as w\n'
        'stage s -> text { return agent(w) { task "${input.note}" tools none expect text } }\n'
        'test "table" map [{ n: 1, note: "x" }, { n: 2 }] as case {\n'
        "  input { n: case.n, note: case.note }\n"
        '  stub agent w returns case.note ?? "none"\n'
        '  expect output == (case.note ?? "none")\n'
        "}\n",
        encoding="utf-8",
    )
    report = api.run_tests(tmp_path / "t.flow")
    assert [(o.name, o.passed, o.failures) for o in report.outcomes] == [
        ("table[0]", True, []),
        ("table[1]", True, []),
    ]
    explored = api.explore(tmp_path / "t.flow", 2)  # `--explore` runs the tests' inputs
    assert (explored.error, explored.runs, explored.failures) == (None, 2, [])


def test_the_rewrite_reads_as_the_lowered_plan_does():
    # the stage's expression, evaluated from the checked AST with absent_reads_null, and the
    # plan's template the lowering printed for it, give the same value on the same input
    src = (
        "type M { x: int }\n"
        "input { a: int?, m: M?, ms: { k: text? }[] }\n"
        "stage s -> json {\n"
        '  return [input.a, input.m.x, input.ms[*].k, "${input.a}", input.a ?? 7]\n'
        "}\n"
    )
    result = check_source(src, "s.flow")
    assert result.ok, result.diagnostics
    stage = result.stages[0]
    ret = stage.body.stmts[-1]
    assert isinstance(ret, ast.ReturnStmt)
    rewritten = absent_reads_null(ret.value, result)
    assert rewritten is not ret.value  # a copy: the checked tree is left as it was
    value = evaluate(rewritten, {"input": {"ms": [{}, {"k": "b"}]}})
    assert value == [None, None, [None, "b"], "null", 7]
    plan = lower(result, file="s.flow")
    ran = api.run_sync(load_plan_data(plan, "s.flow"), {"ms": [{}, {"k": "b"}]})
    assert ran.output == value
