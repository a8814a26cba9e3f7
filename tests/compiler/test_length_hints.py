"""`xs.length`, `xs.size`: users of other languages get pointed at `.count`; `len(xs)` is the
library function, `length(xs)` points at it."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

HEAD = "input { xs: text[], t: text, m: map<int> }\nstage s -> int {\n"


@pytest.mark.parametrize(
    "expr, code",
    [
        ("input.xs.length", "unknown-field"),
        ("input.t.size", "unknown-field"),
    ],
)
def test_a_length_spelt_as_elsewhere_hints_at_count(expr, code):
    (diag,) = check_source(HEAD + f"  return {expr}\n}}\n", "s.flow").diagnostics
    assert diag.code == code
    assert diag.hint == "the length of an array, a text or a map is `.count` (`xs.count`)"


def test_len_is_the_library_function_and_length_points_at_it():
    assert check_source(HEAD + "  return len(input.xs)\n}\n", "s.flow").ok
    (diag,) = check_source(HEAD + "  return length(input.t)\n}\n", "s.flow").diagnostics
    assert diag.code == "unknown-function"
    assert diag.hint is not None and "`len`" in diag.hint


def test_an_object_field_typo_keeps_its_did_you_mean():
    src = "type T { lenght: int }\ninput { x: T }\nstage s -> int {\n  return input.x.length\n}\n"
    (diag,) = check_source(src, "s.flow").diagnostics
    assert diag.code == "unknown-field" and diag.hint == "did you mean `lenght`?"


def test_a_map_reads_any_key_as_a_field():
    assert check_source(HEAD + "  return input.m.length\n}\n", "s.flow").ok
