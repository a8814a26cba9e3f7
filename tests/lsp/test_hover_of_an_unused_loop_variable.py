"""Hover on a loop's variable, round or state that nothing reads still gives its kind and type
(docs/editors.md): the checker records the symbols of the names a program reads, so the hover
of a binding no name reads takes its type from the loop — a `loop`'s round is an `int`, a
state the loop's value, a `map`/`filter`/`reduce` variable an element of what it runs over."""

from __future__ import annotations

import pytest

from agentflow.lsp.analysis import analyze

SOURCE = """\
type Item { name: text }
input { rounds: int, items: Item[] }
stage rounds -> int {
  loop up to input.rounds as rr, acc = 0 { 1 }
}
stage each -> int[] {
  map input.items as it { 1 }
}
stage folded -> int {
  reduce input.items as x, total = 0 { 1 }
}
stage kept -> Item[] {
  filter input.items as f where true
}
"""

UNUSED = {
    "as rr": ("rr", "(loopvar) rr: int"),
    "acc = 0": ("acc", "(acc) acc: int"),
    "as it": ("it", "(loopvar) it: Item"),
    "as x": ("x", "(loopvar) x: Item"),
    "total = 0": ("total", "(acc) total: int"),
    "as f": ("f", "(loopvar) f: Item"),
}


@pytest.mark.parametrize("needle, name, shown", [(k, *v) for k, v in UNUSED.items()])
def test_hover_on_a_binding_nothing_reads_gives_its_kind_and_type(needle, name, shown):
    offset = SOURCE.index(needle) + needle.index(name)
    text, span = analyze(SOURCE, "u.flow").hover(offset)
    assert text == f"```flow\n{shown}\n```"
    assert SOURCE[span.start : span.end] == name
