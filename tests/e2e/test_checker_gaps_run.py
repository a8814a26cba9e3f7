"""Acceptance (issue 27, part 4): the two checker gaps found by held-back programs check clean,
compile and run — the type expected of an array `+` flows into its operands, and a `try` block
that always fails (typed `never`) does not make its `catch` fallback a `type-mismatch`; nor does
a `reduce` from `[]` (the same class: `never` taken as an expectation)."""

from __future__ import annotations

from agentflow import api

CONCAT = """\
type WorkItem { owner: member, summary: text }
input { work: WorkItem[], files: path[] }
stage more -> WorkItem[] {
  return input.work + [{ owner: "lead", summary: "x" }]
}
stage paths -> path[] {
  return input.files + ["b.txt"]
}
stage prepended -> path[] {
  let all = ["a.txt"] + paths
  return all
}
stage result -> { more: WorkItem[], files: path[] } {
  return { more: more, files: prepended }
}
"""

NEVER = """\
type Summary { title: text, words: int }
input { xs: int[] }
stage always_fails -> Summary {
  let v = try {
    fail "always"
  } catch as err {
    { title: err.message, words: 0 }
  }
  return v
}
stage empty_list -> text[] {
  let got = try {
    let none = map input.xs as x { fail "item ${x}" }
    none
  } catch { ["fallback"] }
  return got
}
stage folded -> int[] {
  let doubled = reduce input.xs as x, acc = [] { return acc + [x * 2] }
  let seen = reduce input.xs as x, acc = { seen: [], n: 0 } {
    return { seen: acc.seen + [x], n: acc.n + 1 }
  }
  return doubled + seen.seen
}
stage result -> { summary: Summary, got: text[], folded: int[] } {
  return { summary: always_fails, got: empty_list, folded: folded }
}
"""


async def _run(source: str, data, tmp_path):
    path = tmp_path / "f.flow"
    path.write_text(source, encoding="utf-8")
    checked = api.check(path)
    assert [d.code for d in checked.diagnostics] == []
    return await api.run(path, data, workspace=tmp_path, model="test", shape_cache=False)


async def test_an_expected_array_type_flows_into_both_operands_of_plus(tmp_path):
    work = [{"owner": "dev", "summary": "y"}]
    result = await _run(CONCAT, {"work": work, "files": ["a/b.txt"]}, tmp_path)
    assert result.status == "ok", result.error
    assert result.output == {
        "more": [*work, {"owner": "lead", "summary": "x"}],
        "files": ["a.txt", "a/b.txt", "b.txt"],
    }


async def test_a_try_that_always_fails_and_a_reduce_from_an_empty_list_run(tmp_path):
    result = await _run(NEVER, {"xs": [1, 2]}, tmp_path)
    assert result.status == "ok", result.error
    assert result.output == {
        "summary": {"title": "always", "words": 0},
        "got": ["fallback"],
        "folded": [2, 4, 1, 2],
    }
