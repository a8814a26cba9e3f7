"""The checker's `match` (docs/reference/expressions.md "match", docs/diagnostics.md): exhaustive
over a literal union alias, `bool` and an optional; `_` required over `text`; impossible patterns
are `no-overlap`/`type-mismatch`; covered patterns and arms after `_` are `unreachable-arm`; arms
are narrowed; the type is `if`'s; `flowc fmt` lays a multi-line match out one arm a line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.compiler.api import check_source
from agentflow.compiler.fmt import format_source

HEAD = (
    'type Sev = "low" | "medium" | "high"\n'
    'type Cat = { kind: "cat", lives: int }\n'
    'type Dog = { kind: "dog", name: text }\n'
    "input { sev: Sev, flag: bool, o: Sev?, t: text, n: int, pet: Cat | Dog }\n"
)


def _diags(body: str, out: str = "json") -> list[tuple[str, str]]:
    text = HEAD + f"stage s -> {out} {{\n  return {body}\n}}\n"
    return [(d.code, d.message) for d in check_source(text, "m.flow").diagnostics]


def test_a_literal_union_alias_must_be_covered():
    assert _diags('match input.sev { "low" => 1 }') == [
        (
            "non-exhaustive-match",
            'this `match` does not cover "medium" and "high": `input.sev` is `Sev`',
        )
    ]
    assert _diags('match input.sev { "low" => 1, "medium" | "high" => 2 }') == []
    assert _diags('match input.sev { "low" => 1, _ => 2 }') == []


def test_bool_and_optional_are_finite_and_null_is_a_case():
    assert _diags("match input.flag { true => 1, false => 2 }") == []
    assert [c for c, _ in _diags("match input.flag { true => 1 }")] == ["non-exhaustive-match"]
    missing = _diags('match input.o { "low" | "medium" | "high" => 1 }')
    assert missing[0][0] == "non-exhaustive-match" and "does not cover null" in missing[0][1]
    assert _diags('match input.o { null => 0, "low" | "medium" | "high" => 1 }') == []


def test_a_subject_that_is_not_finite_needs_a_wildcard():
    (found,) = _diags('match input.t { "x" => 1 }')
    assert found[0] == "non-exhaustive-match" and "`input.t` is `text`" in found[1]
    assert _diags('match input.t { "x" => 1, _ => 2 }') == []


def test_an_impossible_pattern_is_no_overlap_or_type_mismatch():
    assert _diags('match input.sev { "urgent" => 1, _ => 2 }') == [
        (
            "no-overlap",
            'this pattern can never match: `input.sev` is `Sev`, which has no value `"urgent"`',
        )
    ]
    assert [c for c, _ in _diags('match input.n { "x" => 1, _ => 2 }')] == ["type-mismatch"]


def test_covered_patterns_and_arms_after_the_wildcard_are_unreachable():
    found = _diags("match input.flag { true => 1, false => 2, true => 3 }")
    assert found == [
        (
            "unreachable-arm",
            "`true` is matched by an arm before this one: this pattern is never reached",
        )
    ]
    found = _diags('match input.t { _ => 1, "x" => 2 }')
    assert [c for c, _ in found] == ["unreachable-arm"]


def test_a_discriminant_narrows_each_arm_and_the_wildcard_sees_what_is_left():
    ok = 'match input.pet.kind { "cat" => "${input.pet.lives}", "dog" => input.pet.name }'
    assert _diags(ok, "text") == []
    left = 'match input.pet.kind { "cat" => "c", _ => input.pet.name }'
    assert _diags(left, "text") == []
    wrong = 'match input.pet.kind { "cat" => input.pet.name, _ => "d" }'
    assert [c for c, _ in _diags(wrong, "text")] == ["unknown-field"]
    assert _diags('match input.o { null => "none", _ => input.o }', "text") == []


def test_the_type_is_the_expected_one_when_every_arm_fits():
    assert _diags('match input.flag { true => "low", false => "high" }', "Sev") == []
    found = _diags('match input.flag { true => "low", false => 1 }', "Sev")
    assert [c for c, _ in found] == ["type-mismatch"]


def test_fmt_lays_a_multi_line_match_out_one_arm_a_line_and_round_trips():
    text = 'stage s -> int {\n  return match   input.x {"a"=>1,"b"|"c"  =>   2,\n  _ => 3}\n}\n'
    formatted = format_source(text, "m.flow")
    assert formatted == (
        "stage s -> int {\n"
        "  return match input.x {\n"
        '    "a" => 1,\n'
        '    "b" | "c" => 2,\n'
        "    _ => 3\n"
        "  }\n"
        "}\n"
    )
    assert format_source(formatted, "m.flow") == formatted
    one = 'stage s -> int {\n  return match input.x { "a" => 1, _ => 2 }\n}\n'
    assert format_source(one, "m.flow") == one


def test_a_let_bound_union_is_narrowed_through_its_discriminant():
    body = (
        'match input.pet.kind { "cat" => 1, "dog" => 2 }\n}\n'
        "stage t -> text {\n"
        "  let r = input.pet\n"
        '  return match r.kind { "dog" => r.name, _ => "${r.lives}" }'
    )
    assert _diags(body, "int") == []


def test_big_integers_are_distinct_patterns_and_1_is_1_0():
    found = _diags(
        "match input.n { 9223372036854775807 => 1, 9223372036854775806 => 2, 1 => 3, "
        "1.0 => 4, _ => 0 }"
    )
    assert found == [
        (
            "unreachable-arm",
            "`1.0` is matched by an arm before this one: this pattern is never reached",
        )
    ]


def test_an_arm_that_does_not_fit_the_expected_type_is_reported_at_its_value():
    text = HEAD + (
        'fn lit(s: Sev) -> Sev = match s { "low" => "high", "medium" | "high" => "max" }\n'
        "stage s -> Sev {\n"
        '  let x: Sev = if input.flag then "low" else "none"\n'
        "  return lit(x)\n}\n"
    )
    diags = check_source(text, "m.flow").diagnostics
    assert [(d.code, d.message, d.span.line, d.span.column) for d in diags] == [
        (
            "type-mismatch",
            'expected `Sev`, found `"max"` in the arm `"medium" | "high" => …`',
            5,
            73,
        ),
        (
            "type-mismatch",
            'expected `Sev`, found `"none"` in the `else` branch',
            7,
            46,
        ),
    ]
    assert all(d.hint is not None and "so is each" in d.hint for d in diags)


def test_a_fraction_against_an_int_is_no_overlap_with_a_hint():
    text = HEAD + "stage s -> int {\n  return match input.n { 1.5 => 1, _ => 2 }\n}\n"
    (d,) = check_source(text, "m.flow").diagnostics
    assert (d.code, d.message) == (
        "no-overlap",
        "this pattern can never match: `input.n` is `int`, which has no value `1.5`",
    )
    assert d.hint == (
        "an `int` is a whole number: remove this pattern, or declare `input.n` a `number` if "
        "it can have a fraction"
    )


def test_fmt_moves_a_leading_comma_and_a_brace_on_its_own_line_to_the_arm_and_subject():
    text = (
        "input { s: text, n: int }\nstage s -> text {\n"
        '  let a = match input.s { "low" => "a", "medium" => "b"\n'
        '    , "high" => "c", _ => "d" }\n'
        '  let b = match input.n\n  {\n    1 => "y"\n    , _ => "z",\n  }\n'
        "  return a + b\n}\n"
    )
    out = format_source(text, "m.flow")
    assert out == (
        "input { s: text, n: int }\nstage s -> text {\n"
        "  let a = match input.s {\n"
        '    "low" => "a",\n    "medium" => "b",\n    "high" => "c",\n    _ => "d"\n  }\n'
        '  let b = match input.n {\n    1 => "y",\n    _ => "z",\n  }\n'
        "  return a + b\n}\n"
    )
    assert format_source(out, "m.flow") == out


def _reported(body: str) -> list[tuple[str, str, int, int, str | None]]:
    text = HEAD + f"stage s -> json {{\n  return {body}\n}}\n"
    return [
        (d.code, d.message, d.span.line, d.span.column, d.hint)
        for d in check_source(text, "m.flow").diagnostics
    ]


def test_a_pattern_repeated_within_one_arm_is_unreachable_at_the_repeat():
    assert _reported('match input.n { 1 | 1 => "a", _ => "z" }') == [
        (
            "unreachable-arm",
            "`1` is repeated in this arm: the `1` before it matches the same value, so this "
            "pattern is never reached",
            6,
            30,
            "remove the repeated pattern",
        )
    ]
    [(code, message, _, column, _)] = _reported('match input.n { 1 | 1.0 => "a", _ => "z" }')
    assert (code, column) == ("unreachable-arm", 30)
    assert message.startswith("`1.0` is repeated in this arm: the `1` before it")


def test_a_repeated_pattern_notes_the_first_of_its_arm():
    text = (
        HEAD
        + 'stage s -> json {\n  return match input.sev { "low" | "high" | "low" => 1, _ => 2 }\n}\n'
    )
    [d] = check_source(text, "m.flow").diagnostics
    assert d.code == "unreachable-arm" and d.span.column == 45
    assert [(n.message, n.span.column) for n in d.notes] == [("matched here", 28)]


def test_the_no_overlap_hint_of_a_misspelt_string_pattern_is_the_quoted_literal():
    [(code, _, _, _, hint)] = _reported('match input.sev { "lo" => 1, _ => 2 }')
    assert code == "no-overlap"
    assert hint == 'did you mean "low"? (`input.sev` can be "low", "medium" or "high")'


OPTIONAL_UNION = """\
type A { kind: "a", x: int }
type B { kind: "b", y: text }
input { u: (A | B)? }
stage s -> text {
  return BODY
}
"""


def _optional_union(body: str) -> list[tuple[str, str]]:
    text = OPTIONAL_UNION.replace("BODY", body)
    return [(d.code, d.message) for d in check_source(text, "m.flow").diagnostics]


def test_a_discriminant_of_an_optional_union_narrows_each_arm_as_if_does():
    assert _optional_union('match input.u.kind { "a" => "${input.u.x}", _ => "other" }') == []
    both = 'match input.u.kind { "a" => "${input.u.x}", "b" => input.u.y, null => "none" }'
    assert _optional_union(both) == []
    # the wildcard also takes a null `u`: `y` may be null there
    (found,) = _optional_union('match input.u.kind { "a" => "a", _ => input.u.y }')
    assert found == ("type-mismatch", "expected `text`, found `text?` in the arm `_ => …`")
    (found,) = _optional_union('match input.u.kind { "b" => "${input.u.x}", _ => "other" }')
    assert found == ("unknown-field", "`B` has no field `x`")


@pytest.mark.parametrize(
    ("u", "output"),
    [({"kind": "a", "x": 4}, "4"), ({"kind": "b", "y": "t"}, "other"), (None, "other")],
)
def test_a_match_narrowed_on_an_optional_union_runs_each_arm(tmp_path, u, output):
    flow = tmp_path / "m.flow"
    flow.write_text(
        OPTIONAL_UNION.replace(
            "BODY", 'match input.u.kind { "a" => "${input.u.x}", _ => "other" }'
        ),
        encoding="utf-8",
    )
    r = CliRunner().invoke(main, ["run", str(flow), "--input", json.dumps({"u": u})])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout.strip().splitlines()[0]) == output
