"""A `_` arm after arms that already cover every value of the subject's type — `true`, `false`,
then `_`; every literal of a union, then `_` — is `unreachable-arm` (a warning) at the `_` arm,
whose hint says why to remove it: without `_` the `match` stays checked to cover every value
(docs/diagnostics.md "unreachable-arm"). A `_` that still has a value to take (`null` of an
optional, a value no arm lists) is not."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

HEAD = 'type Sev = "low" | "high"\ninput { ok: bool, s: Sev, o: Sev? }\n'

COVERED = {
    "bool": 'match input.ok { true => "t", false => "f", _ => "x" }',
    "a union": 'match input.s { "low" => "l", "high" => "h", _ => "x" }',
    "a union in one arm": 'match input.s { "low" | "high" => "l", _ => "x" }',
}


@pytest.mark.parametrize("match", COVERED.values(), ids=COVERED.keys())
def test_a_wildcard_after_every_value_is_unreachable(match):
    src = HEAD + f"stage a -> text {{ {match} }}\n"
    (d,) = check_source(src, "m.flow").diagnostics
    assert (d.code, d.severity) == ("unreachable-arm", "warning")
    assert d.message.startswith(
        "this `_` arm is never reached: the arms before it cover every value"
    )
    assert src[d.span.start : d.span.end] == '_ => "x"'


LEFT = {
    "null of an optional": 'match input.o { "low" => "l", "high" => "h", _ => "x" }',
    "a value no arm lists": 'match input.s { "low" => "l", _ => "x" }',
}


@pytest.mark.parametrize("match", LEFT.values(), ids=LEFT.keys())
def test_a_wildcard_with_values_left_is_fine(match):
    assert check_source(HEAD + f"stage a -> text {{ {match} }}\n", "m.flow").diagnostics == []
