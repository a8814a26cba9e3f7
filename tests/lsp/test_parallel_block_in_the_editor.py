"""A `parallel { … }` block in the editor (docs/reference/control.md "parallel blocks"): hover
on `parallel` gives the block's type, its branches, how many run at once and what a failure
does; hover on a branch's name gives that branch's type."""

from __future__ import annotations

from agentflow.lsp.analysis import analyze

SOURCE = """\
flow f
input { diff: text, path: text }
use agent "reviewer" as security
type SecurityReview { risks: text[] }
extern tool check_deps(path: text) -> { ok: bool }

stage review {
  parallel limit 2 {
    security: agent(security) { task "Review ${input.diff}" expect SecurityReview },
    deps: check_deps(path: input.path),
  }
}
"""


def test_hover_on_parallel_gives_the_type_the_branches_and_the_limit():
    text, span = analyze(SOURCE, "f.flow").hover(SOURCE.index("parallel") + 2)
    assert text.startswith(
        "```flow\nparallel: { security: SecurityReview, deps: { ok: bool } }\n```"
    )
    assert "(`security`, `deps`) side by side, at most 2 at a time" in text
    assert "The first branch that fails stops the others" in text
    assert SOURCE[span.start : span.end] == "parallel"


def test_hover_on_a_branch_name_gives_its_type():
    text, span = analyze(SOURCE, "f.flow").hover(SOURCE.index("security: agent") + 3)
    assert text == "```flow\n(branch) security: SecurityReview\n```"
    assert SOURCE[span.start : span.end] == "security"


def test_completion_after_parallel_offers_map_and_limit():
    text = "stage s {\n  let r = parallel \n}\n"
    offered = analyze(text, "f.flow").completions(text.index("parallel ") + 9, text)
    assert [c.label for c in offered] == ["map", "limit"]
