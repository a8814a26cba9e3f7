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


STUBBED = """\
extern tool user__size(path: text) -> int
use agent "reviewer" as style
type Style { ok: bool }
input { diff: text, path: text }

stage review {
  let both = parallel {
    style: agent(style) { task "Review ${input.diff}" expect Style },
    size: user__size(path: input.path),
  }
  let counted = parallel {
    size: user__size(path: input.path) + 1,
    lines: split(input.diff, "\\n").count,
  }
  let n = user__size(path: "x")
  let total = n + 1
  return both
}

test "a stub" {
  input { diff: "d", path: "a.txt" }
  <line>
}
"""


def _offered_after(line: str) -> list[tuple[str, str | None]]:
    # the buffer as the editor has it: the half-typed line does not parse yet
    text = STUBBED.replace("<line>", line)
    a = analyze(text, "f.flow")
    return [(c.label, c.detail) for c in a.completions(text.index(line) + len(line), text)]


def test_completion_after_stub_step_r_dot_offers_the_branches_of_the_block():
    assert _offered_after("stub step both.") == [
        ("style", "Style (branch of `both`)"),
        ("size", "int (branch of `both`)"),
    ]
    # a word begun after the dot: the same branches, for the editor to filter
    assert [label for label, _ in _offered_after("stub step both.st")] == ["style", "size"]


def test_a_pure_branch_is_not_offered_since_it_cannot_be_stubbed():
    # `lines` is computed from other values: `stub step counted.lines` is unknown-stub-target
    assert _offered_after("stub step counted.") == [("size", "int (branch of `counted`)")]


def test_a_let_that_is_no_parallel_block_has_no_branches_to_offer():
    assert _offered_after("stub step n.") == []
    assert _offered_after("stub step total.") == []


def test_completion_after_stub_step_offers_the_lets_that_run_as_steps():
    # `total` is computed inline (no step of its own): not offered
    assert _offered_after("stub step ") == [
        ("both", "{ style: Style, size: int } (stage review)"),
        ("counted", "{ size: int, lines: int } (stage review)"),
        ("n", "int (stage review)"),
    ]
