"""User functions and their parameters through the language server's protocol (docs/reference/
programs.md "User functions", docs/editors.md): find references and rename of a function (its
`fn`, every call, an `import` item) and of a parameter inside its body; hover and definition
at a parameter's declaration and at a use; completion of functions where an expression starts
and of a body's parameters while the body is being typed; a `parallel` block's branch names;
names read in `match` arms."""

from __future__ import annotations

import sys

import pytest

from agentflow.lsp.client import LspClient, LspError
from agentflow.lsp.positions import LineIndex

LIB = """\
type Severity = "low" | "medium" | "high"
/// how urgent a severity is
fn rank(s: Severity) -> int = if s == "high" then 3 else 1
fn twice(s: Severity, k: int) -> int = match s { "high" => rank(s) + k, _ => rank(s) * k }
stage own -> int {
  return rank("low") + twice("high", 2)
}
"""

MAIN = """\
import { rank, Severity } from "./lib.flow"
input { severity: Severity }
stage a -> int {
  let r = parallel { fast: rank(input.severity), slow: 2 }
  return r.fast + rank("high") + r.slow
}
stage b -> text {
  let k = "many"
  return match input.severity { "high" => k, _ => "${k}!" }
}
"""


def pos(text: str, needle: str, delta: int = 0, nth: int = 0) -> dict:
    """The LSP position of the ``nth`` ``needle`` (+ ``delta`` characters) in ``text``."""
    off = -1
    for _ in range(nth + 1):
        off = text.index(needle, off + 1)
    line, char = LineIndex(text, "utf-16").position(off + delta)
    return {"line": line, "character": char}


@pytest.fixture(scope="module")
def editor(tmp_path_factory):
    root = tmp_path_factory.mktemp("fns")
    (root / "lib.flow").write_text(LIB, encoding="utf-8")
    (root / "main.flow").write_text(MAIN, encoding="utf-8")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0})
    lib, main = (root / "lib.flow").as_uri(), (root / "main.flow").as_uri()
    for uri, text in ((lib, LIB), (main, MAIN)):
        c.open(uri, text)
        got = c.wait_notification(
            "textDocument/publishDiagnostics", lambda p, u=uri: p["uri"] == u, timeout=30
        )
        assert got["diagnostics"] == []
    try:
        yield c, lib, main
    finally:
        c.close()


def ask(c: LspClient, method: str, uri: str, at: dict, **extra: object) -> object:
    return c.request(method, {"textDocument": {"uri": uri}, "position": at, **extra})


def starts(locations: list[dict], uri: str) -> list[tuple[int, int]]:
    """The starts of the ``locations`` in ``uri`` as ``(line, character)``, in order."""
    return [
        (x["range"]["start"]["line"], x["range"]["start"]["character"])
        for x in locations
        if x["uri"] == uri
    ]


def at(text: str, needle: str, delta: int = 0, nth: int = 0) -> tuple[int, int]:
    p = pos(text, needle, delta, nth)
    return p["line"], p["character"]


def test_a_function_hovers_with_its_signature_and_doc_and_a_call_goes_to_its_fn(editor):
    c, lib, main = editor
    for uri, text, needle in ((lib, LIB, "rank(s: Severity)"), (main, MAIN, 'rank("high")')):
        shown = ask(c, "textDocument/hover", uri, pos(text, needle, 1))
        value = shown["contents"]["value"]
        assert value.startswith("```flow\n(function) fn rank(s: Severity) -> int\n```")
        assert "how urgent a severity is" in value
        assert shown["range"]["start"] == pos(text, needle)
        loc = ask(c, "textDocument/definition", uri, pos(text, needle, 2))
        assert (loc["uri"], loc["range"]["start"]) == (lib, pos(LIB, "rank(s: Severity)"))


def test_references_of_a_function_are_its_fn_and_every_call(editor):
    c, lib, _main = editor
    want = [
        at(LIB, "rank(s: Severity)"),
        at(LIB, "rank(s) + k"),
        at(LIB, "rank(s) * k"),
        at(LIB, 'rank("low")'),
    ]
    for where in (pos(LIB, "rank(s: Severity)", 1), pos(LIB, 'rank("low")', 2)):
        found = ask(c, "textDocument/references", lib, where, context={"includeDeclaration": True})
        assert starts(found, lib) == want
    found = ask(
        c,
        "textDocument/references",
        lib,
        pos(LIB, 'rank("low")'),
        context={"includeDeclaration": False},
    )
    assert starts(found, lib) == want[1:]


def test_references_of_an_imported_function_reach_its_fn_and_the_calls_of_its_file(editor):
    c, lib, main = editor
    for where in (pos(MAIN, "rank,"), pos(MAIN, 'rank("high")', 1)):
        found = ask(c, "textDocument/references", main, where, context={"includeDeclaration": True})
        assert starts(found, main) == [
            at(MAIN, "rank,"),
            at(MAIN, "rank(input"),
            at(MAIN, 'rank("high")'),
        ]
        assert sorted(starts(found, lib)) == [
            at(LIB, "rank(s: Severity)"),
            at(LIB, "rank(s) + k"),
            at(LIB, "rank(s) * k"),
            at(LIB, 'rank("low")'),
        ]


def test_references_of_a_function_reach_the_open_documents_importing_it(editor):
    c, lib, main = editor
    found = ask(
        c,
        "textDocument/references",
        lib,
        pos(LIB, "rank(s: Severity)"),
        context={"includeDeclaration": False},
    )
    assert starts(found, main) == [
        at(MAIN, "rank,"),
        at(MAIN, "rank(input"),
        at(MAIN, 'rank("high")'),
    ]


def test_renaming_a_function_rewrites_its_fn_every_call_and_its_importers(editor):
    c, lib, main = editor
    prepared = ask(c, "textDocument/prepareRename", lib, pos(LIB, "rank(s) + k", 1))
    assert prepared["placeholder"] == "rank"
    assert prepared["range"]["start"] == pos(LIB, "rank(s) + k")
    edit = ask(c, "textDocument/rename", lib, pos(LIB, "rank(s) + k"), newName="urgency")
    assert set(edit["changes"]) == {lib, main}
    for uri, text, want in (
        (lib, LIB, ["rank(s: Severity)", "rank(s) + k", "rank(s) * k", 'rank("low")']),
        (main, MAIN, ["rank,", "rank(input", 'rank("high")']),
    ):
        edits = edit["changes"][uri]
        assert {e["newText"] for e in edits} == {"urgency"}
        got = sorted((e["range"]["start"]["line"], e["range"]["start"]["character"]) for e in edits)
        assert got == [at(text, w) for w in want]


def test_a_function_rename_that_clashes_in_an_importer_is_refused(editor):
    c, lib, main = editor
    other = main.replace("main.flow", "other.flow")
    text = (
        'import { rank } from "./lib.flow"\n'
        "fn level(n: int) -> int = n\n"
        'stage b -> int { return level(rank("low")) }\n'
    )
    c.open(other, text)
    c.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == other, timeout=30)
    try:
        with pytest.raises(
            LspError, match="`other.flow` imports `rank` and already has a function named `level`"
        ):
            ask(c, "textDocument/rename", lib, pos(LIB, "rank(s: Severity)"), newName="level")
    finally:
        c.notify("textDocument/didClose", {"textDocument": {"uri": other}})
    # `import { rank, Severity }` would name `Severity` twice
    with pytest.raises(LspError, match="`main.flow` imports `rank` and already has a type named"):
        ask(c, "textDocument/rename", lib, pos(LIB, "rank(s: Severity)"), newName="Severity")


def edits(edit: dict, uri: str, text: str) -> str:
    """``text`` with the rename's edits for ``uri`` applied."""
    index = LineIndex(text, "utf-16")
    out = text
    for e in sorted(
        edit["changes"][uri],
        key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
        reverse=True,
    ):
        r = e["range"]
        start = index.offset(r["start"]["line"], r["start"]["character"])
        end = index.offset(r["end"]["line"], r["end"]["character"])
        out = out[:start] + e["newText"] + out[end:]
    return out


def test_a_type_rename_in_its_file_reaches_the_open_files_importing_it(editor):
    """Renaming `Severity` in lib.flow rewrites main.flow's `import { rank, Severity }` and its
    uses there; a file importing it `as Level` changes only the name in its braces."""
    c, lib, main = editor
    aliased = main.replace("main.flow", "aliased.flow")
    text = (
        'import { Severity as Level } from "./lib.flow"\n'
        "input { level: Level }\n"
        "stage a -> Level { return input.level }\n"
    )
    c.open(aliased, text)
    c.wait_notification(
        "textDocument/publishDiagnostics", lambda p: p["uri"] == aliased, timeout=30
    )
    try:
        edit = ask(c, "textDocument/rename", lib, pos(LIB, "Severity ="), newName="Urgency")
        assert "Severity" not in edits(edit, lib, LIB)
        assert edits(edit, main, MAIN) == MAIN.replace("Severity", "Urgency")
        assert edits(edit, aliased, text) == text.replace("Severity as", "Urgency as")
        # `import { rank, rank }` would name `rank` twice in main.flow
        with pytest.raises(
            LspError, match="`main.flow` imports `Severity` and already has a function named `rank`"
        ):
            ask(c, "textDocument/rename", lib, pos(LIB, "Severity ="), newName="rank")
    finally:
        c.notify("textDocument/didClose", {"textDocument": {"uri": aliased}})


@pytest.mark.parametrize(
    ("new", "why"),
    [
        ("twice", "a function named `twice` already exists"),
        ("upper", "`upper` is a library function"),
        ("map", "`map\\(…\\)` reads as the language's `map`"),
        ("if", "`if` is a reserved word"),
        ("2x", "`2x` is not a valid name"),
    ],
)
def test_a_function_rename_that_would_clash_is_refused(editor, new, why):
    c, lib, _main = editor
    with pytest.raises(LspError, match=why):
        ask(c, "textDocument/rename", lib, pos(LIB, "rank(s: Severity)"), newName=new)


@pytest.mark.parametrize("new", ["score", "model", "then", "tolerate", "stub", "none", "flow"])
def test_a_contextual_keyword_is_a_valid_new_name_for_a_function_parameter_or_let(editor, new):
    """Keywords other than the reserved ones are names wherever the grammar does not expect
    them (docs/reference/lexical.md): `flowc check` accepts each as a function, parameter or
    `let` name, so rename does too."""
    c, lib, main = editor
    for uri, text, at in (
        (lib, LIB, "rank(s: Severity)"),
        (lib, LIB, "k: int"),
        (main, MAIN, 'k = "many"'),
    ):
        edit = ask(c, "textDocument/rename", uri, pos(text, at), newName=new)
        assert edit["changes"][uri] and all(e["newText"] == new for e in edit["changes"][uri])


@pytest.mark.parametrize("new", ["input", "own"])
def test_a_parameter_may_take_the_name_of_a_flow_global(editor, new):
    """A function body sees neither `input` nor stages, so `flowc check` accepts a parameter
    named like one (`own` is a stage of lib.flow), and rename does too."""
    c, lib, _main = editor
    edit = ask(c, "textDocument/rename", lib, pos(LIB, "k: int"), newName=new)
    assert edits(edit, lib, LIB) == LIB.replace("k: int", f"{new}: int").replace(
        "+ k", f"+ {new}"
    ).replace("* k", f"* {new}")


@pytest.mark.parametrize("new", ["let", "if", "not", "null"])
def test_a_reserved_word_is_refused_as_a_new_name(editor, new):
    c, lib, main = editor
    for uri, text, at in (
        (lib, LIB, "rank(s: Severity)"),
        (lib, LIB, "k: int"),
        (main, MAIN, 'k = "many"'),
        (lib, LIB, "Severity ="),
    ):
        with pytest.raises(LspError, match=f"`{new}` is a reserved word"):
            ask(c, "textDocument/rename", uri, pos(text, at), newName=new)


def test_a_contextual_keyword_the_grammar_reads_there_is_refused(editor):
    """`map` starts an expression: `let map = …` does not parse, so the rename says so."""
    c, _lib, main = editor
    with pytest.raises(LspError, match="`map` is read as a keyword there"):
        ask(c, "textDocument/rename", main, pos(MAIN, 'k = "many"'), newName="map")


def test_an_imported_function_is_renamed_in_its_own_file(editor):
    c, _lib, main = editor
    assert ask(c, "textDocument/prepareRename", main, pos(MAIN, 'rank("high")')) is None
    with pytest.raises(LspError, match="is declared in .*lib.flow.: rename it there"):
        ask(c, "textDocument/rename", main, pos(MAIN, 'rank("high")'), newName="urgency")


def test_a_parameter_hovers_and_is_its_own_definition_at_its_declaration(editor):
    c, lib, _main = editor
    declared = pos(LIB, "k: int")
    shown = ask(c, "textDocument/hover", lib, declared)
    assert shown["contents"]["value"] == "```flow\n(param) k: int\n```"
    assert shown["range"]["start"] == declared
    assert ask(c, "textDocument/definition", lib, declared)["range"]["start"] == declared
    # from a use in a `match` arm, to the declaration
    use = pos(LIB, "* k")
    loc = ask(c, "textDocument/definition", lib, {**use, "character": use["character"] + 2})
    assert (loc["uri"], loc["range"]["start"]) == (lib, declared)


def test_references_and_rename_of_a_parameter_stay_in_its_body(editor):
    c, lib, _main = editor
    # `s` of `twice`: the subject of its `match` and the arms' arguments, not `rank`'s `s`
    want = [
        at(LIB, "s: Severity, k"),
        at(LIB, "s {"),
        at(LIB, "s) + k"),
        at(LIB, "s) * k"),
    ]
    found = ask(
        c,
        "textDocument/references",
        lib,
        pos(LIB, "s {"),
        context={"includeDeclaration": True},
    )
    assert starts(found, lib) == want
    edit = ask(c, "textDocument/rename", lib, pos(LIB, "s: Severity, k"), newName="level")
    got = sorted(
        (e["range"]["start"]["line"], e["range"]["start"]["character"])
        for e in edit["changes"][lib]
    )
    assert got == want
    with pytest.raises(LspError, match="`k` is already a parameter of `twice`"):
        ask(c, "textDocument/rename", lib, pos(LIB, "s {"), newName="k")


def test_completion_offers_functions_and_while_a_body_is_typed_its_parameters(editor):
    c, lib, _main = editor
    typing = LIB.replace("_ => rank(s) * k }", "_ => ")
    c.change(lib, typing, 2)
    got = ask(c, "textDocument/completion", lib, pos(typing, "_ => ", 5))
    items = {i["label"]: i for i in got["items"]}
    assert items["s"]["detail"] == "Severity" and items["k"]["detail"] == "int"
    assert items["rank"]["detail"] == "fn rank(s: Severity) -> int"
    assert items["rank"]["documentation"]["value"] == "how urgent a severity is"
    assert "twice" not in items  # a function may not call itself
    assert "input" not in items and "own" not in items  # a body is pure
    # in a stage: the functions with their signatures, no parameter
    typing = LIB.replace('return rank("low") + twice("high", 2)', "return ")
    c.change(lib, typing, 3)
    got = ask(c, "textDocument/completion", lib, pos(typing, "return ", 7))
    items = {i["label"]: i for i in got["items"]}
    assert items["twice"]["detail"] == "fn twice(s: Severity, k: int) -> int"
    assert "s" not in items and "k" not in items
    # a parameter's type in a header being typed; a new line after a whole `fn`: a new item
    typing = LIB.replace("k: int) -> int = match", "k: ) -> int = match")
    c.change(lib, typing, 4)
    got = ask(c, "textDocument/completion", lib, pos(typing, "k: ", 3))
    assert {"Severity", "int", "text"} <= {i["label"] for i in got["items"] if i["kind"] == 22}
    typing = LIB.replace("else 1\n", "else 1\n\n")
    c.change(lib, typing, 5)
    got = ask(c, "textDocument/completion", lib, pos(typing, "else 1\n", 7))
    assert {"stage", "fn", "type"} <= {i["label"] for i in got["items"]}
    assert "s" not in {i["label"] for i in got["items"]}
    c.change(lib, LIB, 6)


def test_a_parallel_branch_name_and_its_reads(editor):
    c, _lib, main = editor
    declared = pos(MAIN, "fast:")
    for where in (declared, pos(MAIN, "r.fast", 3)):
        shown = ask(c, "textDocument/hover", main, where)
        assert shown["contents"]["value"] == "```flow\n(branch) fast: int\n```"
        loc = ask(c, "textDocument/definition", main, where)
        assert (loc["uri"], loc["range"]["start"]) == (main, declared)
        found = ask(c, "textDocument/references", main, where, context={"includeDeclaration": True})
        assert starts(found, main) == [at(MAIN, "fast:"), at(MAIN, "r.fast", 2)]


def test_a_name_read_in_match_arms_is_found_hovered_and_renamed(editor):
    c, _lib, main = editor
    arm = pos(MAIN, "=> k", 3)
    assert ask(c, "textDocument/hover", main, arm)["contents"]["value"] == (
        "```flow\n(let) k: text\n```"
    )
    loc = ask(c, "textDocument/definition", main, arm)
    assert loc["range"]["start"] == pos(MAIN, "k = ")
    want = [at(MAIN, "k = "), at(MAIN, "=> k", 3), at(MAIN, "${k}", 2)]
    found = ask(c, "textDocument/references", main, arm, context={"includeDeclaration": True})
    assert starts(found, main) == want
    edit = ask(c, "textDocument/rename", main, arm, newName="plenty")
    got = sorted(
        (e["range"]["start"]["line"], e["range"]["start"]["character"])
        for e in edit["changes"][main]
    )
    assert got == want
