"""What the regression battery of durations by value found (docs/decisions.md "Durations: what
the battery found (fixdur)"): a failing `flowc test` expectation explains itself in the
durations' texts, as written, never in the rewrite's seconds."""

from __future__ import annotations

import pytest

import agentflow
from agentflow import api
from agentflow.errors import InputMismatch

EXPLAIN = """\
input { a: duration }
stage s -> { w: duration, n: int } {
  return { w: input.a, n: 1 }
}
test "eq" {
  input { a: 120s }
  expect s.w == 3m
}
test "records" {
  input { a: 120s }
  expect output == { w: 3m, n: 1 }
}
test "member" {
  input { a: 120s }
  expect s.w in [3m, 1h]
}
"""


def test_a_failing_expectation_shows_the_durations_as_written(tmp_path):
    (tmp_path / "e.flow").write_text(EXPLAIN)
    report = api.run_tests(tmp_path)
    failures = {o.name: "\n".join(o.failures) for o in report.outcomes}
    assert 'actual (s.w): "120s"' in failures["eq"]
    assert 'expected: "3m"' in failures["eq"]
    assert 'actual (output): {"w": "120s", "n": 1}' in failures["records"]
    assert 'expected: {"w": "3m", "n": 1}' in failures["records"]
    assert 'actual (s.w): "120s"' in failures["member"]
    assert 'expected: ["3m", "1h"]' in failures["member"]


LIBRARY = """\
input { xs: duration[], ys: duration[] }
type R { at: int, none: int, kept: duration[], shared: number, counted: map<int> }
stage s -> R {
  return {
    at: index_of(input.xs, 1m30s), none: index_of(input.xs, 3m), kept: unique(input.xs),
    shared: overlap(input.xs, input.ys), counted: count_by(input.xs)
  }
}
test "library functions compare durations by length" {
  input { xs: [90s, 1m, 2m, 60s], ys: [1m30s, 120s] }
  expect index_of(input.xs, 1m30s) == 0
  expect unique(input.xs) == [90s, 1m, 2m]
  expect overlap(input.xs, input.ys) == 2 / 3
}
"""


def test_library_functions_compare_durations_by_length_and_keep_the_texts(tmp_path):
    flow = tmp_path / "lib.flow"
    flow.write_text(LIBRARY)
    given = {"xs": ["90s", "1m", "2m", "60s"], "ys": ["1m30s", "120s"]}
    result = agentflow.run_sync(flow, given, config=None)
    assert result.status == "ok", result.error
    assert result.output == {
        "at": 0,
        "none": -1,
        "kept": ["90s", "1m", "2m"],  # the first of each length, as written
        "shared": 2 / 3,
        "counted": {"1m30s": 1, "1m": 2, "2m": 1},  # keyed by the canonical text
    }
    outcome = api.run_tests(tmp_path).outcomes[0]
    assert outcome.passed, outcome.failures


def test_unique_with_keys_needs_one_key_per_element(tmp_path):
    flow = tmp_path / "keys.flow"
    flow.write_text(
        "input { xs: int[], ks: int[] }\nstage s -> int[] {\n  return unique(input.xs, input.ks)\n}\n"
    )
    assert agentflow.run_sync(flow, {"xs": [1, 2, 3], "ks": [0, 0, 1]}, config=None).output == [
        1,
        3,
    ]
    bad = agentflow.run_sync(flow, {"xs": [1, 2], "ks": [0]}, config=None)
    assert bad.error["code"] == "invalid_argument"
    assert "one key per element: 2 elements, 1 keys" in bad.error["message"]


def test_a_duration_longer_than_100_years_is_refused_at_the_front_door(tmp_path):
    flow = tmp_path / "long.flow"
    flow.write_text(
        "input { d: duration, j: { w: duration?, ws: duration[] } }\n"
        "stage s -> number {\n  return seconds(input.d)\n}\n"
    )
    longest = agentflow.run_sync(flow, {"d": "876000h", "j": {"ws": []}}, config=None)
    assert longest.output == 3_153_600_000  # seconds are exact: an int of the length
    given = {
        "d": "99999999999999999999h",
        "j": {"w": "90071992547409931ms", "ws": ["1s", "877000h"]},
    }
    with pytest.raises(InputMismatch) as refused:
        agentflow.run_sync(flow, given, config=None)
    message = str(refused.value)
    for where, text in (
        ("input.d", "99999999999999999999h"),
        ("input.j.w", "90071992547409931ms"),
        ("input.j.ws[1]", "877000h"),
    ):
        assert f'`{where}` is "{text}", longer than the longest duration, 876000h (100 years)' in (
            message
        )


def test_a_written_duration_longer_than_100_years_is_invalid_duration(tmp_path):
    flow = tmp_path / "lit.flow"
    flow.write_text("stage s -> duration {\n  return 876001h\n}\n")
    (diag,) = api.check(flow).diagnostics
    assert diag.code == "invalid-duration"
    assert diag.message == "`876001h` is longer than the longest duration, 876000h (100 years)"


def test_a_failing_difference_of_durations_is_named_as_written(tmp_path):
    flow = tmp_path / "diff.flow"
    flow.write_text(
        "input { a: duration }\nstage s -> duration {\n"
        "  let big = input.a + input.a\n  return big - 1s\n}\n"
    )
    result = agentflow.run_sync(flow, {"a": "876000h"}, config=None)
    assert result.error["code"] == "invalid_argument"
    assert result.error["message"] == (
        '`big - 1s`: "876000h876000h" is longer than the longest duration, 876000h (100 years)'
    )


def test_a_long_text_in_a_duration_or_text_union_is_a_text(tmp_path):
    """The 100-year bound is a duration's: a union member that takes the value (`text`) takes
    it; a union with no such member (`duration | Obj`) still refuses it."""
    flow = tmp_path / "u.flow"
    flow.write_text(
        "type Obj { x: int }\ninput { a: duration | text, b: duration | Obj? }\n"
        'stage s -> text {\n  return "ok"\n}\n'
    )
    assert agentflow.run_sync(flow, {"a": "876001h", "b": None}, config=None).output == "ok"
    with pytest.raises(InputMismatch) as refused:
        agentflow.run_sync(flow, {"a": "1s", "b": "876001h"}, config=None)
    assert '`input.b` is "876001h", longer than the longest duration' in str(refused.value)


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("big > 1s", "big > 1s"),
        # the let's text shown by its name, as elsewhere (runtime/where.py)
        ("index_of(input.xs, input.a + input.a) == 0", "index_of(input.xs, big)"),
        ("[{ t: input.a + input.a }] == [{ t: 1s }]", "[{t: big}] == [{t: 1s}]"),
    ],
)
def test_a_failing_comparison_of_durations_is_named_as_written(tmp_path, value, named):
    """`seconds`/`canonical` fail past 100 years (a `+` joins two long texts): the message
    names the comparison or the call the user wrote, never the compiler's `seconds(…)`."""
    flow = tmp_path / "named.flow"
    flow.write_text(
        "input { a: duration, xs: duration[] }\nstage s -> bool {\n"
        f"  let big = input.a + input.a\n  return {value}\n}}\n"
    )
    result = agentflow.run_sync(flow, {"a": "876000h", "xs": ["1s"]}, config=None)
    assert result.error["code"] == "invalid_argument"
    assert result.error["message"] == (
        f'`{named}`: "876000h876000h" is longer than the longest duration, 876000h (100 years)'
    )
    assert result.error["source"].startswith("named.flow:4:")
