"""One mistake, one diagnostic (docs/diagnostics.md "duplicate-definition",
"unknown-stub-target"): a `fn` refused for taking a library function's name leaves its calls
unchecked against the library's signature; a type imported twice under two names leaves the
second name without an `unknown-type`; a stub of an unknown tool leaves `calls.T` without an
`unknown-field`, and its hint says how to declare the tool."""

from __future__ import annotations

from pathlib import Path

from agentflow.compiler.api import check_file, check_source


def _codes(text: str) -> list[tuple[str, str, str | None]]:
    return [(d.code, d.message, d.hint) for d in check_source(text, "o.flow").diagnostics]


def test_a_fn_taking_a_library_name_is_one_duplicate_definition_not_a_mismatch_per_call() -> None:
    text = "input { n: int }\nfn len(x: int) -> int = x\nstage s -> int {\n  return len(1)\n}\n"
    assert [c[0] for c in _codes(text)] == ["duplicate-definition"]


def test_a_type_imported_under_a_second_name_is_one_duplicate_definition(tmp_path: Path) -> None:
    (tmp_path / "x.flow").write_text("type Item { a: int }\n")
    main = tmp_path / "main.flow"
    main.write_text(
        'import { Item, Item as Thing } from "./x.flow"\ninput { t: Thing }\n'
        "stage s -> int {\n  return input.t.a\n}\n"
    )
    diags = check_file(main).diagnostics
    assert [d.code for d in diags] == ["duplicate-definition"]


def test_a_stub_of_an_unknown_tool_is_one_diagnostic_that_hints_at_extern_tool() -> None:
    text = (
        "input { n: int }\nstage s -> int {\n  return input.n\n}\n"
        'test "t" {\n  input { n: 1 }\n  stub tool nope returns 1\n  expect calls.nope == 0\n}\n'
    )
    assert _codes(text) == [
        (
            "unknown-stub-target",
            "`nope` is not a tool of this flow",
            "declare it: `extern tool nope(…) -> …` (docs/reference/tools.md)",
        )
    ]


def test_calls_of_a_tool_never_stubbed_nor_declared_is_still_an_unknown_field() -> None:
    text = (
        "input { n: int }\nstage s -> int {\n  return input.n\n}\n"
        'test "t" {\n  input { n: 1 }\n  expect calls.nope == 0\n}\n'
    )
    assert [c[0] for c in _codes(text)] == ["unknown-field"]
