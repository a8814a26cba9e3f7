"""Golden checker tests (LANGUAGE.md §9).

Each ``tests/check/*.flow`` file marks the diagnostics it must produce with ``// error: code`` /
``// warning: code`` at the end of the line where the primary span starts; the set of
``(line, severity, code)`` must match exactly (warnings included).  ``--update-golden`` (or
``FLOW_UPDATE_GOLDEN=1``) rewrites the marks from the current output.

The shared corpus ``/work/shared/examples/diagnostics`` is checked by its README's rules
(unmarked warnings allowed except in ``clean.flow``) and every ``/work/shared/examples/*.flow``
program must check with no diagnostics at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.golden import (
    HERE,
    actual_marks,
    expected_marks,
    rewrite_marks,
    update_requested,
)
from support.paths import SPEC_DIAGNOSTICS as SHARED_DIAGNOSTICS
from support.paths import SPEC_EXAMPLES as SHARED_EXAMPLES

from agentflow.compiler.api import check_file
from agentflow.compiler.render import render_text

GOLDEN = sorted(HERE.glob("*.flow"))


def _explain(path: Path, result, lines) -> str:
    text = path.read_text(encoding="utf-8")
    shown = [d for d in result.diagnostics if (d.span.line, d.severity, d.code) in lines]
    return render_text(shown, {str(path): text})


@pytest.mark.parametrize("path", GOLDEN, ids=[p.name for p in GOLDEN])
def test_golden(path: Path, request) -> None:
    text = path.read_text(encoding="utf-8")
    result = check_file(path)
    got = actual_marks(result.diagnostics)
    if update_requested(request.config):
        new = rewrite_marks(text, got)
        if new != text:
            path.write_text(new, encoding="utf-8")
        return
    want = expected_marks(text)
    missing = want - got
    extra = got - want
    assert not missing and not extra, (
        f"missing: {sorted(missing)}\nunexpected: {sorted(extra)}\n" + _explain(path, result, extra)
    )


SHARED = sorted(SHARED_DIAGNOSTICS.glob("*.flow")) if SHARED_DIAGNOSTICS.is_dir() else []


@pytest.mark.skipif(not SHARED, reason="shared diagnostics corpus not present")
@pytest.mark.parametrize("path", SHARED, ids=[p.name for p in SHARED])
def test_shared_corpus(path: Path) -> None:
    want = expected_marks(path.read_text(encoding="utf-8"))
    result = check_file(path)
    got = actual_marks(result.diagnostics)
    missing = want - got
    extra = {m for m in got - want if m[1] == "error" or path.name == "clean.flow"}
    assert not missing and not extra, (
        f"missing: {sorted(missing)}\nunexpected: {sorted(extra)}\n" + _explain(path, result, extra)
    )


EXAMPLES = sorted(SHARED_EXAMPLES.glob("*.flow")) if SHARED_EXAMPLES.is_dir() else []


@pytest.mark.skipif(not EXAMPLES, reason="shared examples not present")
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_check_clean(path: Path) -> None:
    result = check_file(path)
    assert result.diagnostics == [], _explain(path, result, actual_marks(result.diagnostics))


def test_rewrite_marks_round_trip() -> None:
    text = "a\nb   // error: x\nc\n"
    marks = {(1, "warning", "w"), (3, "error", "y"), (3, "error", "z")}
    new = rewrite_marks(text, marks)
    assert expected_marks(new) == marks
    assert "// error: x" not in new
