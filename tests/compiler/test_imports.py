"""`import { T } from "./x.flow"` (docs/reference/programs.md "import", docs/decisions.md
"Imports"): imported types are checked in their own file and compiled into the importing plan;
each mistake is one diagnostic with its code, span, message and hint."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentflow.api import compile_source
from agentflow.compiler.api import check_file, check_source

SHARED = """\
/// how bad it is
type Severity = "low" | "medium" | "high"
type Priority = 1 | 2 | 3
/// a reported problem
type Ticket {
  title: text
  severity: Severity
  priority: Priority?
}
extern type Handle
stage count -> int { return 1 }
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def check(root: Path, files: dict[str, str], main: str = "main.flow"):
    write(root, files)
    return check_file(root / main)


def only(result) -> tuple[str, str, int, int, str | None]:
    """The one diagnostic: code, message, line, column, hint."""
    assert len(result.diagnostics) == 1, [(d.code, d.message) for d in result.diagnostics]
    d = result.diagnostics[0]
    return d.code, d.message, d.span.line, d.span.column, d.hint


def test_imported_types_check_and_compile_into_a_self_contained_plan(tmp_path):
    main = (
        'import { Ticket, Severity } from "./shared.flow"\n'
        "input Ticket\n"
        "stage triage -> Severity {\n"
        '  return if input.severity == "high" then "high" else "low"\n'
        "}\n"
        "stage rank -> int { return input.priority ?? 0 }\n"
    )
    result = check(tmp_path, {"shared.flow": SHARED, "main.flow": main})
    assert result.ok, result.diagnostics
    plan = compile_source(main, str(tmp_path / "main.flow"))
    text = plan.to_yaml()
    # the imported types are in the plan (its input contract, with their docs); the other file
    # is not referred to
    schema = plan.plan["input_schema"]
    assert schema["description"] == "a reported problem"
    assert schema["properties"]["severity"] == {"enum": ["low", "medium", "high"]}
    assert "shared" not in text


def test_a_file_without_imports_reads_no_other_file(tmp_path):
    result = check_source("type T { a: int }\nstage s -> T { return { a: 1 } }\n", "x.flow")
    assert result.ok and result.imports is None


def test_imports_are_transitive_and_a_type_imported_twice_is_one_type(tmp_path):
    files = {
        "lib/base.flow": "type Id = text\ntype Ref { id: Id }\n",
        "lib/tickets.flow": 'import { Ref } from "./base.flow"\ntype Ticket { ref: Ref }\n',
        "main.flow": 'import { Ticket } from "./lib/tickets.flow"\n'
        'import { Ref } from "./lib/base.flow"\n'
        "input Ticket\n"
        "stage s -> Ref { return input.ref }\n",
    }
    result = check(tmp_path, files)
    assert result.ok, result.diagnostics
    # `Id` came with `Ref` (the contracts need it) but was not imported by name
    assert set(result.type_decls) == {"Ticket", "Ref", "Id"}


def test_an_extern_type_can_be_imported(tmp_path):
    main = (
        'import { Handle } from "./shared.flow"\n'
        "extern tool db__open(url: text) -> Handle\n"
        'stage s -> Handle { return db__open(url: "x") }\n'
    )
    assert check(tmp_path, {"shared.flow": SHARED, "main.flow": main}).ok


def test_a_type_brought_only_by_another_is_not_a_name_of_the_importer(tmp_path):
    main = 'import { Ticket } from "./shared.flow"\nstage s -> Priority { return 1 }\n'
    code, message, line, col, hint = only(
        check(tmp_path, {"shared.flow": SHARED, "main.flow": main})
    )
    assert (code, line, col) == ("unknown-type", 2, 12)
    assert message == "`Priority` is not imported (`Ticket` from `./shared.flow` refers to it)"
    assert hint == 'import it too: `import { Ticket, Priority } from "./shared.flow"`'


@pytest.mark.parametrize(
    "path, message, hint",
    [
        (
            "https://example.com/x.flow",
            "an import is a file of this project, not a URL: `https://example.com/x.flow`",
            "copy the file beside this one",
        ),
        ("/etc/x.flow", "an import path is relative to the importing file: `/etc/x.flow`", "start"),
        ("shared.flow", "an import path starts with `./` or `../`: `shared.flow`", 'write `"./'),
        ("./shared", "an import names a `.flow` file: `./shared`", "write the file's whole name"),
    ],
)
def test_an_import_path_is_relative_and_names_a_flow_file(tmp_path, path, message, hint):
    main = f'import {{ Ticket }} from "{path}"\nstage s -> Ticket {{ return {{ title: "t" }} }}\n'
    got = only(check(tmp_path, {"shared.flow": SHARED, "main.flow": main}))
    assert got[:4] == ("invalid-import-path", message, 1, 24)
    assert got[4].startswith(hint)


def test_a_path_without_dot_slash_hints_only_a_path_that_exists(tmp_path):
    main = (
        'import { Ticket } from "types/shared.flow"\nstage s -> Ticket { return { title: "t" } }\n'
    )
    files = {"types/shared.flow": SHARED, "flows/main.flow": main}
    assert only(check(tmp_path, files, "flows/main.flow"))[4] == 'write `"../types/shared.flow"`'
    files["flows/other.flow"] = main.replace("types/", "nowhere/")
    hint = only(check(tmp_path, files, "flows/other.flow"))[4]
    assert hint is not None and hint.startswith("say where it is from this file's directory")


def test_a_single_quoted_path_hints_double_quotes(tmp_path):
    main = "import { Ticket } from './shared.flow'\nstage s -> int { return 1 }\n"
    code, message, _line, _col, hint = only(check(tmp_path, {"main.flow": main}))
    assert (code, message) == ("syntax-error", "unexpected character `'`")
    assert hint == 'a string is written in double quotes: `"./shared.flow"`'


def test_a_missing_file_suggests_the_nearest_one_relative_to_the_importer(tmp_path):
    main = 'import { Ticket } from "./shraed.flow"\nstage s -> int { return 1 }\n'
    got = only(check(tmp_path, {"shared.flow": SHARED, "main.flow": main}))
    assert got == (
        "import-not-found",
        "cannot import `./shraed.flow`: no such file",
        1,
        24,
        'did you mean `"./shared.flow"`?',
    )
    # the path is relative to the importing file, not to the current directory
    files = {"a/shared.flow": SHARED, "a/main.flow": 'import { Ticket } from "./shared.flow"\n'}
    assert check(tmp_path, files, "a/main.flow").ok


def test_a_directory_is_not_a_file(tmp_path):
    (tmp_path / "dir.flow").mkdir()
    main = 'import { T } from "./dir.flow"\n'
    assert only(check(tmp_path, {"main.flow": main}))[:2] == (
        "import-not-found",
        "cannot import `./dir.flow`: it is a directory",
    )


def test_an_unknown_name_a_stage_and_a_re_export_are_unknown_imports(tmp_path):
    files = {
        "shared.flow": SHARED,
        "again.flow": 'import { Ticket } from "./shared.flow"\ntype Local = int\n',
        "main.flow": 'import { Tiket } from "./shared.flow"\n'
        'import { count } from "./shared.flow"\n'
        'import { Ticket } from "./again.flow"\n',
    }
    result = check(tmp_path, files)
    got = [(d.code, d.message, d.span.line, d.hint) for d in result.diagnostics]
    assert got == [
        (
            "unknown-import",
            "`./shared.flow` declares no type `Tiket`",
            1,
            "did you mean `Ticket`?",
        ),
        (
            "unknown-import",
            "`count` is a stage of `./shared.flow`: only types can be imported",
            2,
            "import the types it works with, or call that flow as the tool `plan__shared`",
        ),
        (
            "unknown-import",
            "`Ticket` is not declared in `./again.flow`, which imports it from `./shared.flow`",
            3,
            'import it from the file that declares it: `import { Ticket } from "./shared.flow"`',
        ),
    ]


def test_name_clashes_are_import_conflicts(tmp_path):
    files = {
        "shared.flow": SHARED,
        "other.flow": "type Ticket { id: int }\n",
        "main.flow": 'import { Ticket } from "./shared.flow"\n'
        'import { Ticket } from "./other.flow"\n'
        "type Severity = int\n",
    }
    result = check(tmp_path, files)
    got = [(d.code, d.message, d.span.line, d.span.column) for d in result.diagnostics]
    assert got == [
        (
            "import-conflict",
            "`Ticket` from `./shared.flow` refers to its type `Severity`, which is also declared "
            "in this file",
            1,
            10,
        ),
        (
            "import-conflict",
            f"`Ticket` is imported from `./other.flow` but is also imported from "
            f"`{tmp_path / 'shared.flow'}`",
            2,
            10,
        ),
    ]
    [note] = result.diagnostics[0].notes
    assert (note.span.line, note.span.column) == (3, 6)


def test_an_explicit_import_of_a_declared_name_is_one_conflict(tmp_path):
    main = 'import { Ticket, Priority } from "./shared.flow"\ntype Priority = int\n'
    got = only(check(tmp_path, {"shared.flow": SHARED, "main.flow": main}))
    assert got[:4] == (
        "import-conflict",
        "`Priority` is imported from `./shared.flow` but is also declared in this file",
        1,
        18,
    )


def test_cycles_are_reported_at_each_import_and_never_loop(tmp_path):
    files = {
        "a.flow": 'import { B } from "./b.flow"\ntype A { b: B? }\n',
        "b.flow": 'import { C } from "./c.flow"\ntype B { c: C? }\n',
        "c.flow": 'import { A } from "./a.flow"\ntype C { a: A? }\n',
        "self.flow": 'import { S } from "./self.flow"\ntype S = int\n',
    }
    code, message, line, col, _hint = only(check(tmp_path, files, "a.flow"))
    assert (code, line, col) == ("import-cycle", 1, 19)
    assert message == "`./b.flow` is part of an import cycle: a.flow → b.flow → c.flow → a.flow"
    assert only(check(tmp_path, files, "self.flow"))[:2] == (
        "import-cycle",
        "a file cannot import itself",
    )
    # a file outside the cycle that imports one of it: the cycle is that file's error
    files["user.flow"] = 'import { S } from "./self.flow"\n'
    assert only(check(tmp_path, files, "user.flow"))[:2] == (
        "import-error",
        "`./self.flow` has 1 error",
    )


def test_an_error_in_the_imported_file_is_reported_once_at_the_import(tmp_path):
    files = {
        "broken.flow": "type Ticket { title: txt }\ntype Other = Nope\n",
        "main.flow": 'import { Ticket } from "./broken.flow"\n'
        'stage s -> Ticket { return { title: "a" } }\n',
    }
    code, message, line, col, hint = only(check(tmp_path, files))
    assert (code, message, line, col) == ("import-error", "`./broken.flow` has 2 errors", 1, 24)
    assert hint == f"fix the errors of that file (`flowc check {tmp_path / 'broken.flow'}`)"
    [note] = check(tmp_path, files).diagnostics[0].notes
    assert note.message.startswith("error[unknown-type]: unknown type `txt`")
    assert (note.span.file, note.span.line, note.span.column) == (
        str(tmp_path / "broken.flow"),
        1,
        22,
    )


def test_names_imported_from_a_file_with_errors_are_accepted_everywhere(tmp_path):
    """`Verdict` is reserved, so t.flow's own `Verdict` fails and `R.v` falls back to the
    built-in verification type: before, the importer got `not-schema-generatable` and two
    `type-mismatch` besides its `import-error` (docs/diagnostics.md "import-error")."""
    files = {
        "t.flow": 'type Verdict = "yes" | "no"\ntype R { v: Verdict, n: float }\n',
        "main.flow": 'import { R } from "./t.flow"\ninput R\nstage s -> R { return input }\n'
        'test "x" {\n  input { v: "yes", n: 1 }\n  expect s.v == "yes"\n}\n',
    }
    assert only(check(tmp_path, files))[:2] == ("import-error", "`./t.flow` has 2 errors")


def test_a_file_importing_itself_is_told_so(tmp_path):
    files = {"self.flow": 'import { S } from "./self.flow"\ntype S = int\n'}
    code, message, _line, _col, hint = only(check(tmp_path, files, "self.flow"))
    assert (code, message) == ("import-cycle", "a file cannot import itself")
    assert hint is not None and hint.startswith("this file imports itself: remove the import")


def test_a_name_that_failed_to_import_is_not_reported_again(tmp_path):
    main = 'import { Ticket } from "./missing.flow"\ninput Ticket\nstage s -> Ticket { return input }\n'
    assert only(check(tmp_path, {"main.flow": main}))[0] == "import-not-found"


def test_the_flow_header_may_follow_the_imports_only(tmp_path):
    main = 'import { Ticket } from "./shared.flow"\nflow f "d"\ninput Ticket\n'
    result = check(tmp_path, {"shared.flow": SHARED, "main.flow": main})
    assert result.ok and result.flow_name == "f"
    late = 'import { Ticket } from "./shared.flow"\ninput Ticket\nflow f "d"\n'
    got = only(check(tmp_path, {"main.flow": late}))
    assert got[:3] == (
        "syntax-error",
        "the `flow` header must be the first item of the file (after its imports)",
        3,
    )


@pytest.mark.parametrize(
    "text, message, hint",
    [
        (
            'import Ticket from "./x.flow"\n',
            "expected `{`, found the name `Ticket`",
            'name the types in braces: `import { Ticket } from "./file.flow"`',
        ),
        (
            'import { Ticket } "./x.flow"\n',
            "expected `from`, found a string",
            'write `from` before the file: `} from "./x.flow"`',
        ),
        (
            'import { Ticket } from "${x}.flow"\n',
            "an import path cannot contain `${…}` interpolation",
            'write the path as a plain string: `import { T } from "types.flow"`',
        ),
    ],
)
def test_import_syntax_errors_say_how_to_write_it(text, message, hint):
    [d] = check_source(text, "main.flow").diagnostics
    assert (d.code, d.message, d.hint) == ("syntax-error", message, hint)


def test_a_name_imported_twice_is_a_duplicate(tmp_path):
    main = 'import { Ticket, Severity } from "./shared.flow"\nimport { Severity } from "./shared.flow"\n'
    got = only(check(tmp_path, {"shared.flow": SHARED, "main.flow": main}))
    assert got == ("duplicate-definition", "`Severity` is imported twice", 2, 10, "remove this one")


def test_the_names_of_a_half_typed_import_are_not_reported_where_they_are_used():
    text = "import { Ticket, Sev\ninput Ticket\nstage s -> Ticket { return input }\n"
    [d] = check_source(text, "main.flow").diagnostics
    assert d.code == "syntax-error"


def test_an_imported_files_warnings_are_its_own_not_the_importers(tmp_path):
    """docs/reference/programs.md "An imported file's warnings are its own": checked on its own
    the imported file has its warning; the importer's check does not repeat it (its errors
    would be one `import-error`)."""
    files = {
        "lib.flow": 'type Level = "a" | "b"?\ntype Ticket { title: text, level: Level }\n',
        "main.flow": 'import { Ticket } from "./lib.flow"\ninput Ticket\n'
        "stage s -> text { return input.title }\n",
    }
    assert check(tmp_path, files).diagnostics == []
    [d] = check_file(tmp_path / "lib.flow").diagnostics
    assert (d.code, d.severity, d.span.line) == ("optional-union-member", "warning", 1)
