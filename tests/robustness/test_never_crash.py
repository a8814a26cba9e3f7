"""Never crash (docs/spec/LANGUAGE.md §9, issue #3): random bytes, bracket soup and mutated programs
give diagnostics with sane spans, never an exception, and every renderer copes with them; one that
checks clean compiles (an internal compiler error fails the test)."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.hostile import _PIECES, HOSTILE, mutate
from support.paths import SPEC_EXAMPLES, TESTS

from agentflow.api import CompileError, compile_checked
from agentflow.compiler.api import check_source
from agentflow.compiler.render import render_json, render_sarif, render_text
from agentflow.core.diagnostics import CODES

SOURCES = [p.read_text() for p in sorted((TESTS / "compiler" / "check").glob("*.flow"))]
SOURCES += [p.read_text() for p in sorted(SPEC_EXAMPLES.glob("*.flow"))]


def assert_sane(text: str, name: str = "f.flow") -> list:
    """Check ``text``; assert every diagnostic is registered and has a sane span; render it."""
    res = check_source(text, name)
    nlines = text.count("\n") + 1
    for d in res.diagnostics:
        assert d.code in CODES
        s = d.span
        assert s.file == name
        assert 1 <= s.line <= nlines and s.column >= 1, (d, text[:200])
        assert (s.end_line, s.end_column) >= (s.line, s.column), d
        assert 0 <= s.start <= s.end <= len(text), d
        for n in d.notes:
            if n.span is not None:
                assert n.span.line >= 1 and n.span.column >= 1, n
    sources = {name: text}
    render_text(res.diagnostics, sources)
    render_json(res.diagnostics)
    render_sarif(res.diagnostics)
    if res.ok:  # a program that checks clean compiles: no internal compiler error
        try:
            compile_checked(res, text, name)
        except CompileError as e:
            raise AssertionError(f"checks clean but does not compile: {e.diagnostics}") from None
    return res.diagnostics


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_random_bytes(data):
    assert_sane(data.decode("utf-8", errors="replace"))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES + [" ", "int", "text", "1", "input", "y"]), max_size=60))
def test_token_soup(pieces):
    assert_sane(" ".join(pieces))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SOURCES), st.randoms(use_true_random=False))
def test_mutated_programs(src, rng):
    assert_sane(mutate(src, rng))


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_inputs_give_diagnostics(name):
    text = HOSTILE[name].decode("utf-8", errors="replace")
    diags = assert_sane(text)
    if name not in ("huge-string", "huge-name"):
        assert diags, name


def test_seeded_mutation_sweep():
    """A fixed sweep (deterministic) over every source, independent of hypothesis' budget."""
    rng = random.Random(20261130)
    for _ in range(200):
        assert_sane(mutate(rng.choice(SOURCES), rng))
