"""`import { Ticket as Case } from "./x.flow"` (docs/reference/programs.md "Renaming an
import", docs/decisions.md "Imports: renaming, libraries, the language server's project"): a
renamed type is this file's `Case` everywhere — its uses, the plan's contracts, the types other
imported types refer to — with the structure it has in its own file; each clash of names is one
diagnostic with a hint that names a way out."""

from __future__ import annotations

from pathlib import Path

from agentflow.api import compile_source, gen_python
from agentflow.compiler.api import check_file
from agentflow.compiler.fmt import format_source
from agentflow.grammar.parser import parse_module, parse_module_lalr

SHARED = """\
/// how bad it is
type Severity = "low" | "medium" | "high"
/// a reported problem
type Ticket {
  title: text
  severity: Severity
}
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")


def diags(root: Path, files: dict[str, str], main: str = "main.flow") -> list[tuple]:
    write(root, files)
    return [
        (d.code, d.message, d.span.line, d.span.column, d.hint)
        for d in check_file(root / main).diagnostics
    ]


def test_a_renamed_type_is_the_files_name_in_uses_and_in_the_plans_contracts(tmp_path):
    main = (
        'import { Ticket as Case } from "./common.flow"\n'
        "type Ticket { id: int }\n"  # the name is free again
        "type Batch { cases: Case[], first: Ticket }\n"
        "input Batch\n"
        "stage pick -> Case { return input.cases[0] }\n"
    )
    assert diags(tmp_path, {"common.flow": SHARED, "main.flow": main}) == []
    plan = compile_source(main, str(tmp_path / "main.flow")).plan
    defs = plan["input_schema"]["$defs"]
    # the user's name is the contract's name; the record keeps its structure and its doc
    assert set(defs) == {"Case", "Ticket"}
    assert defs["Case"]["description"] == "a reported problem"
    assert defs["Case"]["properties"]["severity"] == {"enum": ["low", "medium", "high"]}
    assert defs["Ticket"]["properties"] == {"id": {"type": "integer"}}
    assert "common" not in compile_source(main, str(tmp_path / "main.flow")).to_yaml()
    # the generated client's models carry the same names
    module = gen_python(tmp_path / "main.flow", tmp_path / "client.py")
    assert "class Case(" in module and "class Ticket(" in module


def test_renaming_a_type_another_import_refers_to_renames_it_there_too(tmp_path):
    """`Ticket`'s field of type `Severity` is a `Level` here: one declaration, one name."""
    main = (
        'import { Ticket, Severity as Level } from "./common.flow"\n'
        "type Severity { code: int }\n"
        "input Ticket\n"
        "stage s -> Level { return input.severity }\n"
        "stage t -> Severity { return { code: 1 } }\n"
    )
    assert diags(tmp_path, {"common.flow": SHARED, "main.flow": main}) == []
    plan = compile_source(main, str(tmp_path / "main.flow")).plan
    assert plan["input_schema"]["properties"]["severity"] == {"enum": ["low", "medium", "high"]}


def test_a_type_renamed_in_an_imported_file_is_known_by_its_own_name_further_on(tmp_path):
    files = {
        "common.flow": SHARED,
        "mid.flow": 'import { Ticket as Case } from "./common.flow"\n'
        "type Wrapper { case: Case, n: int }\n",
        "main.flow": 'import { Wrapper } from "./mid.flow"\n'
        'import { Ticket } from "./common.flow"\n'
        "input Wrapper\n"
        "stage s -> Ticket { return input.case }\n",
    }
    assert diags(tmp_path, files) == []
    plan = compile_source(files["main.flow"], str(tmp_path / "main.flow")).plan
    assert plan["input_schema"]["properties"]["case"] == {"$ref": "#/$defs/Ticket"}
    # the mid file's name is its own: importing `Case` from it names where it is declared
    files["main.flow"] = 'import { Case } from "./mid.flow"\n'
    [(code, message, line, col, hint)] = diags(tmp_path, files)
    assert (code, line, col) == ("unknown-import", 1, 10)
    assert message == (
        "`Case` is not declared in `./mid.flow`, which imports it from `./common.flow` "
        "(where it is `Ticket`)"
    )
    assert hint == (
        'import it from the file that declares it: `import { Ticket as Case } from "./common.flow"`'
    )


def test_a_type_asked_by_its_own_name_of_a_file_that_renamed_it_names_its_file(tmp_path):
    # mid imports `Ticket as Case`: it offers neither name, and asking it for `Ticket` says
    # under which name it has it and where `Ticket` is declared
    files = {
        "common.flow": SHARED,
        "mid.flow": 'import { Ticket as Case } from "./common.flow"\n',
        "main.flow": 'import { Ticket } from "./mid.flow"\nstage s -> Ticket { return input }\n',
    }
    [(code, message, line, col, hint)] = diags(tmp_path, files)
    assert (code, line, col) == ("unknown-import", 1, 10)
    assert message == (
        "`Ticket` is not declared in `./mid.flow`, which imports it from `./common.flow` as "
        "`Case`: a file offers only what it declares, and a renaming is its own"
    )
    assert (
        hint == 'import it from the file that declares it: `import { Ticket } from "./common.flow"`'
    )


def test_the_import_hint_of_a_renamed_type_is_relative_to_the_importing_file(tmp_path):
    files = {
        "common.flow": SHARED,
        "mid.flow": 'import { Ticket as Case } from "./common.flow"\n',
        "sub/main.flow": 'import { Case } from "../mid.flow"\nstage s -> int { return 1 }\n',
    }
    (tmp_path / "sub").mkdir()
    [(_code, _message, _line, _col, hint)] = diags(tmp_path, files, "sub/main.flow")
    assert hint == (
        "import it from the file that declares it: "
        '`import { Ticket as Case } from "../common.flow"`'
    )


def test_a_type_brought_by_a_renamed_import_hints_the_import_as_written(tmp_path):
    main = 'import { Ticket as Case } from "./common.flow"\nstage s -> Severity { return "low" }\n'
    [(code, message, line, col, hint)] = diags(tmp_path, {"common.flow": SHARED, "main.flow": main})
    assert (code, line, col) == ("unknown-type", 2, 12)
    assert message == "`Severity` is not imported (`Case` from `./common.flow` refers to it)"
    assert hint == 'import it too: `import { Ticket as Case, Severity } from "./common.flow"`'


def test_as_clashes_are_one_diagnostic_each_with_a_name_to_use(tmp_path):
    files = {"common.flow": SHARED, "billing.flow": "type Ticket { amount: int }\n"}
    # a renamed import onto a declared name
    files["main.flow"] = 'import { Ticket as Case } from "./common.flow"\ntype Case { id: int }\n'
    [(code, message, line, col, hint)] = diags(tmp_path, files)
    assert (code, line, col) == ("import-conflict", 1, 20)
    assert message == (
        "`Ticket` is imported from `./common.flow` as `Case`, but `Case` is also declared in "
        "this file"
    )
    assert hint == "choose another name after `as`: `Ticket as CommonTicket`"
    # two files' `Ticket`: the hint says how to keep both
    files["main.flow"] = (
        'import { Ticket } from "./common.flow"\nimport { Ticket } from "./billing.flow"\n'
    )
    [(code, message, line, col, hint)] = diags(tmp_path, files)
    assert (code, line, col) == ("import-conflict", 2, 10)
    assert hint == "import it from one file only, or rename one import: `Ticket as BillingTicket`"
    files["main.flow"] = (
        'import { Ticket } from "./common.flow"\n'
        'import { Ticket as BillingTicket } from "./billing.flow"\n'
        'input BillingTicket\nstage s -> Ticket { return { title: "x", severity: "low" } }\n'
    )
    assert diags(tmp_path, files) == []
    # a type another import refers to, clashing: the hint renames it
    files["main.flow"] = 'import { Ticket } from "./common.flow"\ntype Severity = int\n'
    [(code, _m, line, col, hint)] = diags(tmp_path, files)
    assert (code, line, col) == ("import-conflict", 1, 10)
    assert hint is not None and (
        '`import { Ticket, Severity as CommonSeverity } from "./common.flow"`' in hint
    )
    files["main.flow"] = (
        'import { Ticket, Severity as CommonSeverity } from "./common.flow"\ntype Severity = int\n'
    )
    assert diags(tmp_path, files) == []
    # one declaration under two names; a built-in name
    files["main.flow"] = (
        'import { Ticket as Case, Ticket as Other, Severity as text } from "./common.flow"\n'
    )
    got = diags(tmp_path, files)
    assert got == [
        (
            "duplicate-definition",
            "`Ticket` from `./common.flow` is imported twice, as `Case` and as `Other`",
            1,
            36,
            "a type has one name in a file: remove this one and write `Case` where you meant "
            "`Other`",
        ),
        (
            "import-conflict",
            "`text` is a built-in type: an import cannot take its name",
            1,
            55,
            "choose another name: `Severity as MyText`",
        ),
    ]


def test_as_parses_the_same_on_both_parser_paths_and_fmt_keeps_it():
    text = 'import {Ticket   as   Case,\n  Severity as Level, } from "./common.flow"\n'
    fast, d1 = parse_module(text, "m.flow")
    slow, d2 = parse_module_lalr(text, "m.flow")
    assert d1 == d2 == []
    for m in (fast, slow):
        [decl] = m.items
        assert [(n.name, local.name) for n, local in decl.pairs()] == [
            ("Ticket", "Case"),
            ("Severity", "Level"),
        ]
    assert format_source(text, "m.flow") == (
        'import {\n  Ticket as Case,\n  Severity as Level\n} from "./common.flow"\n'
    )


def test_an_as_without_a_name_hints_one(tmp_path):
    main = 'import { Ticket as } from "./common.flow"\n'
    [(code, message, line, col, hint)] = diags(tmp_path, {"common.flow": SHARED, "main.flow": main})
    assert (code, message, line, col) == ("syntax-error", "expected a name, found `}`", 1, 20)
    assert hint == "write the name this file gives `Ticket`: `Ticket as MyTicket`"
