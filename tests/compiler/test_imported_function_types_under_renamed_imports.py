"""An imported function keeps its parameter and result types when a type of its signature is
known by another name: renamed by the importing file (``import { rank, Sev as Level }``) or by
the file that declares the function (docs/reference/programs.md "Renaming an import")."""

from __future__ import annotations

from agentflow import api

LIB = (
    'type Sev = "low" | "high"\n'
    "type Box { v: int }\n"
    'fn base(s: Sev) -> int = match s { "high" => 2, "low" => 1 }\n'
    "fn rank(s: Sev) -> int = base(s) * 10\n"
    "fn mk(x: int) -> Box = { v: x }\n"
)


def _check(tmp_path, main: str, name: str = "main.flow") -> list[str]:
    (tmp_path / "lib.flow").write_text(LIB)
    path = tmp_path / name
    path.write_text(main)
    return [
        f"{d.code}: {d.message} | {d.hint}"
        for d in api.check(str(path)).diagnostics
        if d.severity == "error"
    ]


def test_an_argument_of_a_function_whose_parameter_type_is_renamed_is_checked_in_its_name(
    tmp_path,
):
    main = 'import { rank, Sev as Level } from "./lib.flow"\ninput { t: text }\n'
    assert _check(tmp_path, main + "stage a -> int { return rank(input.t) }\n") == [
        "type-mismatch: argument `s` of `rank`: expected `Level`, found `text` "
        "| pass a `Level` as `s`"
    ]
    assert _check(tmp_path, main + "stage a -> int { return rank(5) }\n") == [
        "type-mismatch: argument `s` of `rank`: expected `Level`, found `int` "
        "| `to_text(x)` turns a number into text"
    ]


def test_the_signature_note_names_the_renamed_type_as_the_importing_file_does(tmp_path):
    (tmp_path / "lib.flow").write_text(LIB)
    path = tmp_path / "main.flow"
    path.write_text(
        'import { rank, Sev as Level } from "./lib.flow"\ninput { t: text }\n'
        "stage a -> int { return rank(input.t) }\n"
    )
    [d] = api.check(str(path)).diagnostics
    assert [n.message for n in d.notes] == ["`rank(s: Level) -> int`"]


def test_the_result_of_a_function_whose_result_type_is_renamed_keeps_its_type(tmp_path):
    main = (
        'import { mk, Box as Crate } from "./lib.flow"\ninput { t: text }\n'
        "stage a -> int {\n  let s: int = mk(1)\n  return s\n}\n"
    )
    assert _check(tmp_path, main) == [
        "type-mismatch: expected `int`, found `Crate` | give a value of the expected type, or "
        "change the type it is checked against"
    ]


def test_a_type_the_declaring_file_renamed_keeps_the_checks_in_its_importers(tmp_path):
    (tmp_path / "types.flow").write_text('type Sev = "low" | "high"\n')
    (tmp_path / "lib4.flow").write_text(
        'import { Sev as Level } from "./types.flow"\n'
        'fn rank4(s: Level) -> int = match s { "high" => 2, "low" => 1 }\n'
    )
    main = tmp_path / "main.flow"
    main.write_text(
        'import { rank4 } from "./lib4.flow"\ninput { t: text }\n'
        "stage a -> int { return rank4(input.t) }\n"
    )
    [d] = api.check(str(main)).diagnostics
    assert d.message == "argument `s` of `rank4`: expected `Sev`, found `text`"
    other = tmp_path / "other.flow"
    other.write_text(
        'import { rank4 } from "./lib4.flow"\nimport { Sev as Grade } from "./types.flow"\n'
        "input { t: text }\nstage a -> int { return rank4(input.t) }\n"
    )
    [d] = api.check(str(other)).diagnostics
    assert d.message == "argument `s` of `rank4`: expected `Grade`, found `text`"
    assert d.hint == "pass a `Grade` as `s`"


def test_a_function_called_with_its_renamed_type_runs(tmp_path):
    (tmp_path / "lib.flow").write_text(LIB)
    path = tmp_path / "main.flow"
    path.write_text(
        'import { rank, Sev as Level } from "./lib.flow"\ninput { t: Level }\n'
        "stage a -> int { return rank(input.t) }\n"
    )
    assert api.check(str(path)).diagnostics == []
    assert api.run_sync(path, {"t": "high"}, workspace=str(tmp_path)).output == 20
