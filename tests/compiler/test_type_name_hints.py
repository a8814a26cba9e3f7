"""Hints for names and type names users of other languages type first:
`unknown-type` hints (docs/spec/LANGUAGE.md §3 names), `flowc schema` did-you-mean / declared
list."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.compiler.api import check_file, check_source
from agentflow.core.diagnostics import foreign_type_hint, generic_type_hint

HERE = Path(__file__).parent

TEXT = "agentflow's string type is `text`"
INT = "agentflow's integer type is `int`"
BOOL = "agentflow's boolean type is `bool`"
NUMBER = "agentflow's floating-point type is `number` (`int` for whole numbers)"
OBJECT = (
    "agentflow's object types are `{ field: T, … }` or a named `type`; "
    "`map<T>` has text keys and `T` values; `json` is any JSON value"
)
LIST = "agentflow's list type is `T[]` (e.g. `text[]`)"
NULL = "agentflow's null type is `null`; `T?` is a `T` that may be null"


@pytest.mark.parametrize(
    "name, hint",
    [
        ("string", TEXT),
        ("str", TEXT),
        ("String", TEXT),
        ("integer", INT),
        ("Integer", INT),
        ("long", INT),
        ("boolean", BOOL),
        ("Boolean", BOOL),
        ("Bool", "did you mean `bool`?"),  # case-only: the did-you-mean is closer
        ("float", NUMBER),
        ("double", NUMBER),
        ("dict", OBJECT),
        ("object", OBJECT),
        ("Map", OBJECT),
        ("array", LIST),
        ("list", LIST),
        ("List", LIST),
        ("any", "agentflow's type for any JSON value is `json`"),
        ("None", NULL),
        ("Strin", TEXT),  # a misspelt foreign name
        ("Txt", None),
    ],
)
def test_unknown_type_hint(name: str, hint: str | None):
    result = check_source(
        f"type A {{ x: {name} }}\nstage s -> A {{\n  return input\n}}\n", "t.flow"
    )
    [d] = [d for d in result.diagnostics if d.code == "unknown-type"]
    if name == "Txt":
        assert d.hint == "did you mean `text`?" or (d.hint or "").startswith("declare it (")
    else:
        assert d.hint == hint, d.hint


def test_declared_type_beats_the_foreign_hint():
    src = "type Record { a: int }\ntype A { x: record }\nstage s -> A {\n  return input\n}\n"
    [d] = check_source(src, "t.flow").diagnostics
    assert d.code == "unknown-type" and d.hint == "did you mean `Record`?"


def test_hints_in_the_foreign_types_case():
    result = check_file(HERE / "check" / "foreign_types.flow")
    hints = {d.span.line: d.hint for d in result.diagnostics}
    assert hints[5] == TEXT and hints[6] == INT and hints[10] == LIST
    assert hints[13] == "did you mean `Record`?" and hints[14] == "did you mean `int`?"


def test_helpers():
    assert foreign_type_hint("text") is None and foreign_type_hint("Foo") is None
    assert generic_type_hint("Vec", ["String"]) == "agentflow writes a list as `text[]`"
    assert generic_type_hint("Foo", ["int"]) is None


# -- flowc schema ----------------------------------------------------------------------------


@pytest.fixture
def flow(tmp_path: Path) -> Path:
    p = tmp_path / "r.flow"
    p.write_text(
        "type Ranking { items: text[] }\ntype Issue { id: int }\nextern type Handle\n"
        "stage s -> Ranking {\n  return input\n}\n",
        encoding="utf-8",
    )
    return p


@pytest.mark.parametrize(
    "name, tail",
    [
        ("Rankin", "no type `Rankin`; did you mean `Ranking`?"),
        ("ranking", "no type `ranking`; did you mean `Ranking`?"),
        ("Zzz", "no type `Zzz`; declared types: `Issue`, `Ranking`"),
    ],
)
def test_schema_unknown_type_name(flow: Path, name: str, tail: str):
    res = CliRunner().invoke(main, ["schema", str(flow), name])
    assert res.exit_code == 1
    assert res.stderr.strip() == f"error: {flow}: {tail}"  # as every CLI error begins


def test_schema_file_without_types(tmp_path: Path):
    p = tmp_path / "n.flow"
    p.write_text("stage s -> int {\n  return 1\n}\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["schema", str(p), "X"])
    assert res.exit_code == 1 and res.stderr.strip().endswith("it declares no types")


@pytest.mark.parametrize(("written", "meant"), [("Txt", "text"), ("Itn", "int"), ("Jsn", "json")])
def test_a_misspelt_builtin_type_in_another_case_gets_did_you_mean(written, meant):
    src = f'use agent "w" as w\nstage s -> text {{\n  return agent(w) {{\n    task "go"\n    expect {written}\n  }}\n}}\n'
    (d,) = [d for d in check_source(src, "t.flow").diagnostics if d.code == "unknown-type"]
    assert d.message == f"unknown type `{written}`"
    assert d.hint == f"did you mean `{meant}`?"
