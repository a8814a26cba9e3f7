"""Signature help, the hover of a tool's parameter and the outline's tool detail spell a type
that is an alias's by the alias's name (``Sev``), as the checker's messages do
(compiler/type_names.py), never the structure it stands for (``"low" | "high"``)."""

from __future__ import annotations

from agentflow.lsp.analysis import analyze

SOURCE = """\
flow s
type Sev = "low" | "high"
type Pair = { a: int, b: int }
extern tool mark(level: Sev, p: Pair, note?: Sev) -> Pair
input { s: Sev, p: Pair }
fn rank(s: Sev, p: Pair) -> int = 1
stage a -> int {
  let m = mark(level: input.s, p: input.p)
  return rank(input.s, input.p) + m.a
}
"""


def test_hover_of_a_tool_parameter_names_its_alias():
    a = analyze(SOURCE, "s.flow")
    shown = {}
    for needle in ("level: input", "p: input.p)"):
        got = a.hover(SOURCE.index(needle) + 1)
        assert got is not None
        shown[needle] = got[0]
    assert "(parameter of mark) level: Sev\n" in shown["level: input"]
    assert "(parameter of mark) p: Pair\n" in shown["p: input.p)"]
    assert '"low"' not in "".join(shown.values()) and "a: int" not in "".join(shown.values())


def test_signature_help_names_aliases_of_tools_and_functions():
    a = analyze(SOURCE, "s.flow")
    tool = a.signature_help(SOURCE.index("mark(level") + len("mark("))
    fn = a.signature_help(SOURCE.index("rank(input") + len("rank("))
    assert tool is not None and fn is not None
    assert tool.params == ["level: Sev", "p: Pair", "note?: Sev"]
    assert tool.label.endswith("-> Pair")
    assert fn.label == "rank(s: Sev, p: Pair) -> int"


def test_outline_detail_of_a_tool_names_its_aliases():
    a = analyze(SOURCE, "s.flow")
    [tool] = [s for s in a.symbols() if s.name == "mark"]
    assert tool.detail == "mark(level: Sev, p: Pair, note?: Sev) -> Pair"
