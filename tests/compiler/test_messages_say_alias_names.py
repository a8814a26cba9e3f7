"""The checker's messages say a type the program names by that name (docs/diagnostics.md,
"A type the program names is said by its name"): the checker resolves `type Sev = "low" |
"medium" | "high"` to the union it stands for, and a message says `Sev` where it used to spell
the union out — inside lists (`Sev[]`), optionals (`Sev?`) and inline objects too, under the
local name of a renamed import; a `type-mismatch` adds a note saying what the alias stands for.
An alias of a primitive and two aliases of one structure stay spelt out."""

from __future__ import annotations

from pathlib import Path

from agentflow.compiler.api import check_file, check_source
from agentflow.core.diagnostics import Diagnostic

SEV = 'type Sev = "low" | "medium" | "high"\n'


def _errors(src: str) -> list[Diagnostic]:
    return check_source(src, "a.flow").errors


def _one(src: str) -> Diagnostic:
    (d,) = _errors(src)
    return d


def test_a_mismatch_against_an_alias_names_it_and_notes_what_it_stands_for():
    d = _one(SEV + 'stage s -> Sev {\n  return "hgh"\n}\n')
    assert d.code == "type-mismatch"
    assert d.message == 'expected `Sev`, found `"hgh"`'
    assert [n.message for n in d.notes] == ['`Sev` is `"low" | "medium" | "high"`']


def test_a_found_value_of_an_alias_type_is_said_by_its_name():
    d = _one(SEV + "input { sev: Sev }\nstage s -> int {\n  return input.sev\n}\n")
    assert d.message == "expected `int`, found `Sev`"


def test_a_list_of_an_alias_is_said_as_the_alias_list():
    d = _one(SEV + "input { sevs: Sev[] }\nstage s -> int {\n  return input.sevs\n}\n")
    assert d.message == "expected `int`, found `Sev[]`"


def test_an_optional_alias_is_said_as_the_alias_optional():
    d = _one(SEV + "input { sev: Sev? }\nstage s -> int {\n  return input.sev\n}\n")
    assert d.message == "expected `int`, found `Sev?`"


def test_an_alias_of_an_inline_object_is_said_by_its_name():
    src = "type Pair = { a: int, b: int }\ninput { p: Pair }\nstage s -> text {\n"
    d = _one(src + "  return input.p\n}\n")
    assert d.message == "expected `text`, found `Pair`"


def test_an_argument_mismatch_names_the_alias_of_the_parameter():
    src = SEV + "fn label(s: Sev) -> text = s\nstage s -> text {\n  return label(1)\n}\n"
    d = _one(src)
    assert d.code == "type-mismatch"
    assert "`Sev`" in d.message and '"low" | "medium"' not in d.message


def test_a_return_of_a_function_names_the_alias_it_declares():
    d = _one(SEV + 'fn grade(n: int) -> Sev = "none"\n')
    assert d.code == "type-mismatch"
    assert d.message == "the body of `grade`: expected `Sev`, found `text`"
    assert d.hint is not None and "make the body's type `Sev`" in d.hint


def test_a_comparison_with_no_overlap_names_the_alias_and_its_hint_lists_the_values():
    src = SEV + 'input { sev: Sev }\nstage s -> bool {\n  return input.sev == "urgent"\n}\n'
    d = _one(src)
    assert d.code == "no-overlap"
    assert d.message == (
        'this comparison is always false: `Sev` and `"urgent"` have no value in common'
    )
    assert d.hint is not None and '"low", "medium" or "high"' in d.hint


def test_a_renamed_import_is_said_by_its_local_name(tmp_path: Path):
    (tmp_path / "shared.flow").write_text(SEV, encoding="utf-8")
    main = (
        'import { Sev as Level } from "./shared.flow"\n'
        "input { level: Level }\nstage s -> int {\n  return input.level\n}\n"
    )
    (tmp_path / "main.flow").write_text(main, encoding="utf-8")
    (d,) = check_file(tmp_path / "main.flow").errors
    assert d.message == "expected `int`, found `Level`"


def test_two_aliases_of_one_structure_stay_spelt_out():
    src = SEV + 'type Level = "low" | "medium" | "high"\ninput { sev: Sev }\n'
    d = _one(src + "stage s -> int {\n  return input.sev\n}\n")
    assert d.message == 'expected `int`, found `"low" | "medium" | "high"`'
    assert d.notes == []


def test_an_alias_of_a_primitive_is_not_said_for_every_value_of_that_primitive():
    src = "type Email = text\ninput { n: int }\nstage s -> Email {\n  return input.n\n}\n"
    assert _one(src).message == "expected `text`, found `int`"


def test_the_error_code_keeps_its_short_wording():
    src = (
        "input { n: int }\nstage s -> int {\n"
        '  let r = parse_int("x") catch as e { e.code }\n  return r\n}\n'
    )
    messages = [d.message for d in _errors(src)]
    assert any("the error code (one of the run-time codes)" in m for m in messages), messages
