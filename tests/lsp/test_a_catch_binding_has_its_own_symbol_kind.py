"""The failure `catch … as err` binds (after an expression or a `try { … }` block) is declared
with its own symbol kind, ``error``, not a loop variable's: the checker's references carry it, and
hover, references, rename and go to definition all follow the one kind (docs/editors.md)."""

from __future__ import annotations

from agentflow.compiler.api import check_source
from agentflow.lsp.analysis import analyze

SOURCE = """\
flow t
extern tool fetch(url: text) -> text
input { xs: text[] }
stage s -> text {
  let got = try {
    fetch(url: "a")
  } catch on [failed, tool_error] as err {
    err.message
  }
  let other = fetch(url: got) catch as oops { "none" }
  return other
}
stage t -> text[] { map input.xs as x { x } }
"""


def _at(needle: str, delta: int = 0) -> int:
    return SOURCE.index(needle) + delta


def test_the_checker_declares_a_catch_binding_with_the_error_kind() -> None:
    result = check_source(SOURCE)
    assert not [d for d in result.diagnostics if d.severity == "error"]
    kinds = {(sym.name, sym.kind) for sym in result.references.values()}
    assert ("err", "error") in kinds and ("x", "loopvar") in kinds
    assert not any(name == "err" and kind == "loopvar" for name, kind in kinds)


def test_hover_names_a_catch_binding_by_its_kind_used_or_not() -> None:
    a = analyze(SOURCE, "c.flow")
    assert a.hover(_at("err.message"))[0] == "```flow\n(error) err: Error\n```"
    assert a.hover(_at("err {"))[0] == "```flow\n(error) err: Error\n```"
    # never read in its fallback: the declaration still hovers as the caught error
    assert a.hover(_at("oops"))[0] == "```flow\n(error) oops: Error\n```"
    assert a.hover(_at("x {"))[0] == "```flow\n(loopvar) x: text\n```"


def test_references_and_rename_of_a_catch_binding_follow_its_kind() -> None:
    a = analyze(SOURCE, "c.flow")
    spans = a.references(_at("err.message"))
    assert spans is not None
    assert sorted(s.start for s in spans) == [_at("err {"), _at("err.message")]
    target = a.rename_target(_at("err {"))
    assert target is not None and target[1] == "err"
    assert a.rename_problem(_at("err {"), "failure") is None
    assert sorted(s.start for s in a.references_for_rename(_at("err.message"))) == [
        _at("err {"),
        _at("err.message"),
    ]
    assert a.definition(_at("err.message")).start == _at("err {")
