"""The language server's incremental analysis (compiler/check_memo.py, lsp/incremental.py): after
any edit, the diagnostics and the checker's records equal a full check's, and an edit inside one
stage re-checks that stage only."""

from __future__ import annotations

import random
import re

import pytest
from support.paths import REPO, TESTS

from agentflow.compiler.api import check_source
from agentflow.compiler.checker import CheckResult
from agentflow.core.spans import Span
from agentflow.grammar import ast
from agentflow.lsp.analysis import analyze
from agentflow.lsp.incremental import IncrementalParser

_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


def _span(s: Span | None) -> tuple[int, ...] | None:
    return None if s is None else (s.line, s.column, s.end_line, s.end_column, s.start, s.end)


def _summary(r: CheckResult) -> tuple:
    """What a check says, with positions as values: diagnostics (with notes and hints), the
    stage types, the tools called (in order), the constants, and every reference and expression
    type keyed by the position of its node."""
    diags = [
        (d.code, d.message, _span(d.span), d.hint, [(n.message, _span(n.span)) for n in d.notes])
        for d in r.diagnostics
    ]
    nodes: dict[int, ast.Node] = {}
    for item in r.module.items:
        for n in ast.walk(item):
            nodes[id(n)] = n

    def where(k: int) -> tuple | None:
        n = nodes.get(k)
        return None if n is None else (type(n).__name__, _span(n.span))

    refs = sorted(
        (str(where(k)), s.kind, s.name, str(s.type), _span(getattr(s.decl, "span", None)))
        for k, s in r.references.items()
        if where(k) is not None
    )
    types = sorted((str(where(k)), str(t)) for k, t in r.expr_types.items() if where(k))
    consts = sorted((str(where(k)), repr(v)) for k, v in r.constants.items() if where(k))
    return (
        diags,
        {k: str(v) for k, v in r.stage_types.items()},
        [s.name.name for s in r.stages],
        list(r.tools),
        refs,
        types,
        consts,
        str(r.output_type),
    )


def _edit(text: str, rnd: random.Random) -> str:
    """A random edit: mostly one that keeps the program parsing (a name replaced by another name
    of the file, a line duplicated or removed), sometimes a character typed or deleted."""
    words = list(_WORD.finditer(text))
    body = [m for m in words if m.start() > text.find("\nstage ") > 0]  # in the stages
    r = rnd.random()
    if r < 0.5 and body:
        m = rnd.choice(body)
        new = rnd.choice(words).group()
        return text[: m.start()] + new + text[m.end() :]
    lines = text.split("\n")
    k = rnd.randrange(len(lines))
    if r < 0.65:
        lines.insert(k, lines[k])
        return "\n".join(lines)
    if r < 0.8:
        del lines[k]
        return "\n".join(lines)
    i = rnd.randrange(len(text) + 1)
    if r < 0.9:
        return text[:i] + rnd.choice(['"', "}", " + 1", "\n", "x", "?"]) + text[i:]
    return text[:i] + text[i + rnd.randrange(1, 4) :]


@pytest.mark.battery  # README.md "The battery tier"
def test_incremental_check_equals_full_check_on_random_edits():
    files = sorted(TESTS.rglob("*.flow")) + sorted((REPO / "examples").rglob("*.flow"))
    files = [f for f in files if f.read_text(encoding="utf-8").count("stage ") >= 2]
    assert len(files) >= 10
    replayed = checked = 0
    for f in random.Random(0).sample(files, min(len(files), 24)):
        text = f.read_text(encoding="utf-8")
        parser = IncrementalParser(str(f))
        rnd = random.Random(f.name)
        for _ in range(8):
            got = analyze(text, str(f), parser).result
            replayed += parser.memo.replayed
            checked += parser.memo.checked
            assert _summary(got) == _summary(check_source(text, str(f))), (f, text)
            text = _edit(text, rnd)
    # the memo did replay stages (else this test would prove nothing)
    assert replayed > checked / 10, (replayed, checked)


_STAGES = """\
flow memo "Incremental check"
input { items: Item[], limit: int }

type Item { id: text, size: int @range(0, 10) }

stage first -> Item[] {
  return filter input.items as it where it.size > 1
}

stage second {
  let n = first.count
  return n + input.limit
}

stage third -> int {
  let total = reduce first as it, acc = 0 { acc + it.size }
  return total + second
}

stage fourth -> text {
  return "${third} items"
}
"""


def _memo_check(parser: IncrementalParser, text: str) -> CheckResult:
    result = analyze(text, "memo.flow", parser).result
    assert _summary(result) == _summary(check_source(text, "memo.flow"))
    return result


def test_an_edit_inside_a_stage_rechecks_that_stage_only():
    parser = IncrementalParser("memo.flow")
    _memo_check(parser, _STAGES)
    assert (parser.memo.replayed, parser.memo.checked) == (0, 4)
    # an edit that keeps the stage's type: the later stages are replayed, shifted a line down
    edited = _STAGES.replace("return n + input.limit", "let m = n * 2\n  return m + input.limit")
    _memo_check(parser, edited)
    assert (parser.memo.replayed, parser.memo.checked) == (3, 1)
    # an edit that changes the (inferred) type of `second`: `third` uses it, so is checked again;
    # `fourth` uses only `third`, whose declared type did not change
    retyped = edited.replace("return m + input.limit", 'return "${m}"')
    result = _memo_check(parser, retyped)
    assert (parser.memo.replayed, parser.memo.checked) == (2, 2)
    assert [d.code for d in result.diagnostics] == ["type-mismatch"]
    # a stage with a diagnostic is always checked again; a changed type re-checks every stage
    _memo_check(parser, retyped)
    assert (parser.memo.replayed, parser.memo.checked) == (3, 1)
    _memo_check(parser, retyped.replace("size: int", "size: number"))
    assert parser.memo.replayed == 0


def _items(result: CheckResult) -> list[tuple]:
    return [(type(i).__name__, _span(i.span), getattr(i, "doc", None)) for i in result.module.items]


def test_a_syntax_error_before_a_documented_item_is_parsed_and_checked_incrementally():
    # the error item runs over the `///` line of the next item, which then has no doc comment
    # (as in a whole-file parse); the version after the fix replays every stage
    text = _STAGES.replace("stage third", "/// The third.\nstage third")
    broken = text.replace("return n + input.limit", "return n +")
    parser = IncrementalParser("memo.flow")
    _memo_check(parser, text)
    for version in (broken, text, broken, text):
        got = _memo_check(parser, version)
        assert _items(got) == _items(check_source(version, "memo.flow"))
        assert parser.last_mode == "incremental"
    assert parser.memo.replayed == 3


def test_a_doc_comment_after_a_brace_documents_the_next_item_incrementally():
    text = _STAGES.replace("stage third", "\nstage third")
    documented = text.replace("}\n\n\nstage third", "} /// The third.\n\n\nstage third")
    assert documented != text
    parser = IncrementalParser("memo.flow")
    for version in (text, documented, text):
        got = _memo_check(parser, version)
        assert _items(got) == _items(check_source(version, "memo.flow"))
    assert [i.doc for i in check_source(documented).module.items if hasattr(i, "doc")][-2] == (
        "The third."
    )
