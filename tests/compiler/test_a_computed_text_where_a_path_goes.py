"""A computed `text` where a `path` is expected — `read_file(path: input.name)`, a `let` typed
`path` — is a `type-mismatch` whose hint says how to have a path: declare where it comes from
as one (an input field, an agent's `expect`), or write it as a path string `"${…}"`, which the
checker takes as a path (docs/reference/types.md "Assignability")."""

from __future__ import annotations

from agentflow.compiler.api import check_source

HINT = (
    "a computed `text` is not known to be a `path`: declare where it comes from as one "
    "(`input { file: path }`, an agent's `expect { file: path }`), or write it as a path string, "
    '`"${…}"`'
)


def test_a_tool_argument_and_a_typed_let_say_how_to_have_a_path():
    src = (
        "input { name: text }\nstage s -> text {\n  let p: path = input.name\n"
        "  return read_file(path: input.name) + p\n}\n"
    )
    ds = check_source(src, "s.flow").diagnostics
    assert [(d.code, d.message, d.hint) for d in ds] == [
        ("type-mismatch", "expected `path`, found `text`", HINT),
        ("type-mismatch", "expected `path`, found `text`", HINT),
    ]


def test_the_path_string_the_hint_gives_checks_clean():
    src = 'input { name: text }\nstage s -> text {\n  return read_file(path: "${input.name}")\n}\n'
    assert check_source(src, "s.flow").diagnostics == []
