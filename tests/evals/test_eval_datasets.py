"""Datasets of an eval (docs/reference/evals.md "Datasets"): JSON Lines and YAML read with each
value's place, every problem a diagnostic of the checker's codes at its line and column —
reported by `flowc check` and `flowc eval` alike, before anything runs — and the `eval` block
through `flowc fmt`."""

from __future__ import annotations

from click.testing import CliRunner

from agentflow import api
from agentflow.cli import main
from agentflow.compiler.fmt import format_source
from agentflow.evals.dataset import read_dataset

FLOW = """\
input { title: text, tags: text[] }
type Out { ok: bool }
use agent "a" as a
stage s -> Out {
  return agent(a) { task "t ${input.title}" tools none expect Out }
}
eval "q" {
  dataset "cases.yaml"
  score ok = output.ok == expected.ok
}
"""


def _problems(diags):
    return [(d.code, d.span.line, d.span.column, d.message) for d in diags]


def test_yaml_cases_are_checked_at_the_place_of_each_value(tmp_path):
    (tmp_path / "q.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "cases.yaml").write_text(
        "cases:\n"
        "  - name: fine\n"
        "    input: { title: a, tags: [x] }\n"
        "    expected: { ok: true }\n"
        "  - name: bad tag\n"
        "    input:\n"
        "      title: b\n"
        "      tags: [x, 3]\n"
        "  - name: typo\n"
        "    inptu: { title: c, tags: [] }\n"
        "  - name: fine\n"
        "    input: { title: d, tags: [] }\n"
        "    expected: { ok: maybe }\n",
        encoding="utf-8",
    )
    result = api.check(tmp_path / "q.flow")
    shown = _problems(result.errors)
    assert shown == [
        (
            "type-mismatch",
            8,
            17,
            "`input.tags[1]` is 3, but the flow's input type wants `text` here",
        ),
        ("invalid-value", 9, 5, "this case has no `input`"),
        (
            "unknown-field",
            10,
            5,
            "a case has no field `inptu` (its fields: name, input, expected, tags, metadata)",
        ),
        ("duplicate-definition", 11, 11, 'two cases are named "fine"'),
        (
            "type-mismatch",
            13,
            21,
            '`expected.ok` is "maybe", but the flow\'s output type wants `bool` here',
        ),
    ]
    assert all(d.span.file.endswith("cases.yaml") for d in result.errors)
    assert next(d for d in result.errors if d.code == "unknown-field").hint == (
        "did you mean `input`?"
    )
    # `flowc check` shows them with the dataset's lines, and exits 1
    out = CliRunner().invoke(main, ["check", str(tmp_path / "q.flow")])
    assert out.exit_code == 1
    assert "      tags: [x, 3]" in out.output


def test_a_line_that_is_not_json_and_a_file_that_is_not_a_list(tmp_path):
    lines = tmp_path / "cases.jsonl"
    lines.write_text('{"input": {}}\n\n// a comment\n{"input": {"a": 1,}}\n[1, 2]\n', "utf-8")
    ds = read_dataset(lines)
    assert [c.name for c in ds.cases] == ["cases.jsonl:1"]
    assert _problems(ds.diagnostics) == [
        (
            "syntax-error",
            4,
            19,
            "not a JSON value: Expecting property name enclosed in double quotes",
        ),
        (
            "invalid-value",
            5,
            1,
            "a case is an object with `input` (and `name`, `expected`, `tags`, `metadata`)",
        ),
    ]
    doc = tmp_path / "cases.yaml"
    doc.write_text("name: one\ninput: {}\n", encoding="utf-8")
    assert _problems(read_dataset(doc).diagnostics) == [
        ("invalid-value", 1, 1, "a dataset is a list of cases (or an object whose `cases` is one)")
    ]
    doc.write_text("- input: {a: [1, 2}\n", encoding="utf-8")
    ((code, line, _, message),) = _problems(read_dataset(doc).diagnostics)
    assert (code, line) == ("syntax-error", 1) and message.startswith("not YAML:")
    missing = read_dataset(tmp_path / "nothing.jsonl")
    assert [d.code for d in missing.diagnostics] == ["invalid-value"]
    assert missing.diagnostics[0].message.startswith("cannot read the dataset")


def test_an_eval_block_formats_canonically_and_stays_the_same_program():
    messy = (
        'stage s -> int { return 1 }\neval   "q"   {\n    dataset    "c.jsonl"\n'
        "  expect int\n     score exact = output==expected   threshold  80%\n"
        '  judge tone "is ${output} fine?"\n}\n'
    )
    tidy = format_source(messy)
    assert tidy == (
        "stage s -> int {\n  return 1\n}\n"
        'eval "q" {\n  dataset "c.jsonl"\n  expect int\n'
        "  score exact = output == expected threshold 80%\n"
        '  judge tone "is ${output} fine?"\n}\n'
    )
    assert format_source(tidy) == tidy


def test_a_dataset_the_eval_block_names_but_that_is_missing_is_reported_where_it_is_named(
    tmp_path,
):
    (tmp_path / "f.flow").write_text(
        "input { n: int }\n"
        "stage d -> int { return input.n * 2 }\n"
        'eval "e" {\n'
        '  dataset "missing.jsonl"\n'
        "  expect int\n"
        "  score ok = d == expected\n"
        "}\n",
        encoding="utf-8",
    )
    report = api.evaluate(tmp_path / "f.flow", cache=None)
    (problem,) = report.diagnostics
    assert problem.code == "invalid-value"
    assert problem.message == f"no dataset file {str(tmp_path / 'missing.jsonl')!r}"
    assert (problem.span.file, problem.span.line, problem.span.column) == (
        str(tmp_path / "f.flow"),
        4,
        11,
    )
    assert "relative to the `.flow` file's directory" in (problem.hint or "")
    assert report.runs == []
