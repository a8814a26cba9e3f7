"""An input (or a declared tool result) that does not fit its type is said in the `.flow`'s terms,
through one front door (``agentflow.ir.mismatch``) for ``flowc run``, ``flowc eval``'s datasets,
``flowc serve`` and the api: which field, the type it should be in `.flow` syntax, a "did you
mean" for an unknown field beside a required one, one line per problem — never JSON Schema's
``'dir' is a required property`` (docs/reference/cli.md "An input that does not fit")."""

from __future__ import annotations

import sys
from pathlib import Path

from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client

from agentflow.cli import main

TODOS = """input { dir: path, depth: int? }

stage todos -> text[] {
  let hits = grep(pattern: "TODO", path: input.dir)
  return map hits as h { "${h.path}: ${h.text}" }
}

eval "all" {
  dataset "cases.jsonl"
  score some = len(output) >= 0
}
"""

FLOWC = Path(sys.executable).parent / "flowc"
SUPPORT = (
    "input { tickets: Ticket[] }\ntype Ticket { id: text }\nstage s -> int { len(input.tickets) }\n"
)
NOT_A_LIST = '`input.tickets` is "oops", but the flow\'s input type wants `Ticket[]` here'
MEANT = "`input` has no field `directory` in the flow's input type `{ dir: path, depth: int? }`"


def _cli(tmp_path: Path, monkeypatch, *args: str):
    (tmp_path / "todos.flow").write_text(TODOS, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text('{"name": "a", "input": {"directory": "p"}}\n')
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(main, list(args))


def test_run_names_the_field_and_suggests_the_required_one_it_meant(tmp_path, monkeypatch):
    res = _cli(tmp_path, monkeypatch, "run", "todos.flow", "--input", '{"directory": "project"}')
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [
        f"error: {MEANT}; did you mean `dir`?",
        "hint: `flowc schema todos.flow --input` prints the input it takes",
    ]
    assert "required property" not in res.stderr and "input_schema" not in res.stderr


def test_run_says_each_problem_on_its_own_line_with_the_flow_type_wanted(tmp_path, monkeypatch):
    given = '{"dir": 3, "depth": "deep", "colour": 1}'
    res = _cli(tmp_path, monkeypatch, "run", "todos.flow", "--input", given)
    assert res.exit_code == 1
    assert res.stderr.splitlines()[:4] == [
        "error: the input does not fit the flow's input type:",
        "  `input` has no field `colour` in the flow's input type `{ dir: path, depth: int? }`; "
        "its fields: depth, dir",
        '  `input.depth` is "deep", but the flow\'s input type wants `int?` here',
        "  `input.dir` is 3, but the flow's input type wants `path` here",
    ]


def test_an_eval_dataset_case_gets_the_same_words_as_a_run(tmp_path, monkeypatch):
    res = _cli(tmp_path, monkeypatch, "eval", "todos.flow", "--model", "test")
    assert res.exit_code == 1
    assert f"cases.jsonl:1:25: error[unknown-field]: {MEANT}" in res.stderr
    assert "hint: did you mean `dir`?" in res.stderr


def test_a_declared_tool_result_that_does_not_fit_names_the_declared_type(tmp_path, monkeypatch):
    (tmp_path / "tools.py").write_text("def count(n: int):\n    return 4\n", encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    (tmp_path / "c.flow").write_text(
        "extern tool user__count(n: int) -> { value: int }\n"
        "stage s -> int { return user__count(n: 1).value }\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["run", "c.flow"])
    assert res.exit_code == 1
    assert (
        "tool user__count returned a result that does not match its declared type: "
        "`result` is 4, but its declared type wants `{ value: int }` here"
    ) in res.stderr
    assert "$:" not in res.stderr


async def test_serve_answers_an_mcp_client_in_the_same_words(tmp_path):
    d = tmp_path / "flows"
    d.mkdir()
    (d / "todos.flow").write_text(TODOS.split("eval")[0], encoding="utf-8")
    (d / "support.flow").write_text(SUPPORT, encoding="utf-8")
    params = StdioServerParameters(command=str(FLOWC), args=["serve", "--mcp", str(d)])
    async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        done = await session.call_tool("todos", {"directory": "p"})
        named = await session.call_tool("support", {"tickets": "oops"})
    assert done.is_error
    assert done.content[0].text == f"{MEANT}; did you mean `dir`?"
    # the types the user named are said by name (test_input_errors_name_the_users_types.py)
    assert named.is_error and named.content[0].text == NOT_A_LIST
