"""A misspelt agent alias gets the declared alias it was cut from as "did you mean" (and so a
quick fix), in `agent(wri)` and in `stub agent crit`; a stub's hint lists only aliases that
are declared, never the broken one (docs/diagnostics.md "unknown-name",
"unknown-stub-target")."""

from __future__ import annotations

from agentflow.compiler.api import check_source
from agentflow.lsp.analysis import analyze

_FLOW = """input { n: int }
use agent "writer" as writer
use agent "critic" as critic
stage s -> text {
  return agent(wri) {
    task "write"
    expect text
  }
}
test "t" {
  input { n: 1 }
  stub agent crit returns "x"
  expect output == "x"
}
"""


def _errors(text: str) -> list[tuple[str, str, str | None]]:
    return [
        (d.code, d.message, d.hint)
        for d in check_source(text, "a.flow").diagnostics
        if d.severity == "error"
    ]


def test_a_misspelt_agent_alias_is_told_the_declared_alias_before_declaring_a_new_one() -> None:
    assert ("unknown-name", "unknown agent `wri`", "did you mean `writer`?") in _errors(_FLOW)


def test_a_stub_of_a_misspelt_alias_suggests_a_declared_alias_not_the_broken_call() -> None:
    [stub] = [e for e in _errors(_FLOW) if e[0] == "unknown-stub-target"]
    assert stub == (
        "unknown-stub-target",
        "no agent call of this flow uses the alias `crit`",
        "did you mean `critic`?",
    )


def test_the_stub_lists_only_the_declared_aliases_called() -> None:
    text = _FLOW.replace("agent(wri)", "agent(writer)").replace("crit ", "zzz ")
    [stub] = [e for e in _errors(text) if e[0] == "unknown-stub-target"]
    assert stub[2] == "agent aliases called: writer"
    both = text.replace(
        "    expect text\n  }\n", '    expect text\n  } + agent(wri) { task "x" }\n'
    )
    hints = [e[2] for e in _errors(both) if e[0] == "unknown-stub-target"]
    assert hints == ["agent aliases called: writer"]


def test_the_did_you_mean_of_a_misspelt_alias_is_a_quick_fix() -> None:
    text = (
        _FLOW.replace("crit ", "critic ")
        .replace("wri)", "wri) ")
        .replace('use agent "critic" as critic\n', "")
    )
    a = analyze(text, "q.flow")
    [d] = [d for d in a.result.diagnostics if d.code == "unknown-name"]
    (fix,) = a.fixes(d)
    [(start, end, new)] = fix.edits
    assert (text[start:end], new) == ("wri", "writer")


def test_the_alias_a_misspelt_call_meant_is_not_also_unused() -> None:
    unused = [
        d.message.split("`")[1]
        for d in check_source(_FLOW, "a.flow").diagnostics
        if d.code == "unused-alias"
    ]
    assert unused == ["critic"]
