"""Golden checker cases (docs/spec/LANGUAGE.md §9).

Each ``tests/compiler/check/*.flow`` file marks every diagnostic it must produce at the end of the
line where its primary span starts: ``// error[code]: message`` or ``// warning[code]: message``
(see :mod:`support.golden`). Line, severity, code and message must all match, warnings included,
and nothing unmarked may be reported; ``pytest --update-golden`` rewrites the marks from what the
checker reports now.

The specification's diagnostics corpus (``tests/data/spec_examples/diagnostics``) is checked by the
rules of its README (code and line; unmarked warnings allowed except in ``clean.flow``), and every
example program of the specification must check with no diagnostics at all.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.golden import marks_in, marks_of, with_marks
from support.paths import SPEC_DIAGNOSTICS, SPEC_EXAMPLES, TESTS

from agentflow.compiler.api import check_file
from agentflow.compiler.render import render_text

CASES = sorted((TESTS / "compiler" / "check").glob("*.flow"))


def _explain(path: Path, diagnostics) -> str:
    """The diagnostics rendered with their source lines, for a failure message."""
    if not diagnostics:
        return ""
    return "reported:\n" + render_text(diagnostics, {str(path): path.read_text("utf-8")})


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_case_reports_exactly_its_marks(path: Path, golden) -> None:
    result = check_file(path)
    text = path.read_text(encoding="utf-8")
    got = marks_of(result.diagnostics)
    changed = {m[0] for m in set(got) ^ set(marks_in(text))}
    shown = [d for d in result.diagnostics if d.span.line in changed]
    golden.check(path, with_marks(text, got), context=_explain(path, shown))


#: the corpus README's marks: `// error: CODE` / `// warning: CODE` at the end of a line
_SPEC_MARK = re.compile(r"//\s*(error|warning):\s*([a-z0-9-]+)\s*$")
SPEC_CORPUS = sorted(SPEC_DIAGNOSTICS.glob("*.flow"))
SPEC_PROGRAMS = sorted(SPEC_EXAMPLES.glob("*.flow"))


def _spec_marks(path: Path) -> set[tuple[int, str, str]]:
    marks = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        found = _SPEC_MARK.search(line)
        if found:
            marks.add((number, found.group(1), found.group(2)))
    return marks


def test_spec_corpus_and_programs_are_vendored() -> None:
    assert len(SPEC_CORPUS) >= 10 and len(SPEC_PROGRAMS) >= 3


@pytest.mark.parametrize("path", SPEC_CORPUS, ids=[p.name for p in SPEC_CORPUS])
def test_spec_corpus(path: Path) -> None:
    want = _spec_marks(path)
    result = check_file(path)
    got = {(d.span.line, d.severity, d.code) for d in result.diagnostics}
    missing = want - got
    extra = {m for m in got - want if m[1] == "error" or path.name == "clean.flow"}
    shown = [d for d in result.diagnostics if (d.span.line, d.severity, d.code) in extra]
    assert not missing and not extra, (
        f"missing: {sorted(missing)}\nunexpected: {sorted(extra)}\n" + _explain(path, shown)
    )


@pytest.mark.parametrize("path", SPEC_PROGRAMS, ids=[p.name for p in SPEC_PROGRAMS])
def test_spec_examples_check_clean(path: Path) -> None:
    result = check_file(path)
    assert result.diagnostics == [], _explain(path, result.diagnostics)


def test_marks_round_trip() -> None:
    text = "a\nb   // error[x]: gone\nc\n"
    marks = [(1, "warning", "w", "one"), (3, "error", "y", "a `b` // c"), (3, "error", "z", "d")]
    new = with_marks(text, marks)
    assert marks_in(new) == sorted(marks)
    assert "gone" not in new
    assert with_marks(new, marks) == new
    kept = "x = 1      // error[k]: m\n"
    assert with_marks(kept, marks_in(kept)) == kept  # unchanged marks keep their alignment
