"""Hover on a name whose type is inferred — a `let` without annotation, a loop variable, an
accumulator, a name read in a `match` arm, a function parameter's use, a field access, a
`catch … as e` — shows its type in the names the program wrote (docs/editors.md): an alias as
declared (`Sev`, not the union it stands for), an imported type under the name this file gives
it (`Level` for `Severity as Level`, `Case` for `Ticket as Case`), an `Outcome<…>` and a
generic library function's result instantiated with those names."""

from __future__ import annotations

import pytest
from support.lsp_editor import editing, position

from agentflow.lsp.client import LspClient

LIB = """\
type Severity = "low" | "medium" | "high"
type Ticket { title: text, severity: Severity }
"""

MAIN = """\
import { Ticket as Case, Severity as Level } from "./lib.flow"
type Sev = "a" | "b"
type Pair = { sev: Sev, level: Level }
type Text = text
type Box { sev: Sev, lvl: Level?, pair: Pair, note: Text }
input { box: Box, cases: Case[], lvls: Level[] }
extern tool lookup(q: text) -> text
fn worst(l: Level, m: Level) -> Level = if l == "high" then l else m
stage pair -> Pair { return input.box.pair }
stage s -> int {
  let lv = input.box.lvl
  let sv = input.box.sev
  let first = input.cases[0]
  let sevs = map input.cases as c { c.severity }
  let kept = filter input.lvls as d where d != "low"
  let outs = map input.lvls as x tolerate 1 { worst(x, "low") }
  let u = unique(input.lvls)
  let p = pair
  let obj = { k: sv, n: 1 }
  let why = lookup(q: "x") catch as e { e.message }
  let n = input.box.note
  let picked = match sv { "a" => sv, _ => sv }
  let total = reduce input.lvls as y, acc = 0 { acc + len(y) }
  return len(sevs) + len(kept) + len(outs) + len(u) + len(why) + len(n) + total
}
"""


@pytest.fixture(scope="module")
def editor(tmp_path_factory):
    files = {"lib.flow": LIB, "main.flow": MAIN}
    with editing(tmp_path_factory.mktemp("inferred"), files) as session:
        yield session


def hover_at(c: LspClient, uri: str, needle: str, delta: int = 0) -> str | None:
    got = c.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": position(MAIN, needle, delta)},
    )
    if got is None:
        return None
    value: str = got["contents"]["value"]
    return value.split("\n")[1]  # the first line in the code fence


@pytest.mark.parametrize(
    ("needle", "delta", "shown"),
    [
        ("lv =", 0, "(let) lv: Level?"),
        ("sv =", 0, "(let) sv: Sev"),
        ("first =", 0, "(let) first: Case"),
        ("c.severity", 0, "(loopvar) c: Case"),
        ("c.severity", 2, "(field) severity: Level"),
        ("sevs =", 0, "(let) sevs: Level[]"),
        ("d !=", 0, "(loopvar) d: Level"),
        ("kept =", 0, "(let) kept: Level[]"),
        ("outs =", 0, "(let) outs: Outcome<Level>[]"),
        ("u =", 0, "(let) u: Level[]"),
        ("p =", 0, "(let) p: Pair"),
        ("obj =", 0, "(let) obj: { k: Sev, n: int }"),
        ("e.message", 0, "(error) e: Error"),
        ("n = input", 0, "(let) n: text"),  # an alias of `text` is not every text
        ("l else", 0, "(param) l: Level"),
        ("picked =", 0, "(let) picked: Sev"),
        ("sv, _ =>", 0, '(let) sv: "a"'),  # narrowed by its arm
        ("y)", 0, "(loopvar) y: Level"),
        ("input.box.pair", 10, "(field) pair: Pair"),
        ("sev: Sev, lvl", 0, "(field) sev: Sev"),
    ],
)
def test_an_inferred_type_is_shown_in_the_names_the_program_wrote(editor, needle, delta, shown):
    c, uri = editor
    assert hover_at(c, uri, needle, delta) == shown


def test_a_generic_library_call_hovers_what_it_gives_here(editor):
    """`unique<T>(xs: T[]) -> T[]` called on a `Level[]`: the hover says it gives `Level[]`."""
    c, uri = editor
    got = c.request(
        "textDocument/hover", {"textDocument": {"uri": uri}, "position": position(MAIN, "unique(")}
    )
    shown = got["contents"]["value"]
    assert shown.startswith("```flow\n(function) unique<T>(xs: T[]")
    assert "here it gives `Level[]`" in shown
    got = c.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": position(MAIN, "len(sevs)")},
    )
    assert "here it gives" not in got["contents"]["value"]  # `len` is not generic


def test_completion_and_the_outline_show_types_by_the_names_written(editor):
    """The details of field completions and of the outline's stages and `let`s spell types as
    hover does."""
    c, uri = editor
    symbols = c.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    by_name = {s["name"]: s for s in symbols}
    assert by_name["pair"]["detail"] == "Pair"
    lets = {s["name"]: s.get("detail") for s in by_name["s"]["children"]}
    assert lets["sv"] == "Sev" and lets["sevs"] == "Level[]" and lets["lv"] == "Level?"
    typing = uri.replace("main.flow", "typing.flow")
    text = MAIN.replace("let lv = input.box.lvl", "let lv = input.box.")
    c.open(typing, text)
    at = position(text, "input.box.", len("input.box."))
    got = c.request("textDocument/completion", {"textDocument": {"uri": typing}, "position": at})
    details = {i["label"]: i.get("detail") for i in got["items"]}
    assert details["sev"] == "Sev" and details["lvl"] == "Level?" and details["pair"] == "Pair"
