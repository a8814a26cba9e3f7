"""`count_by` and `group_by` agree with `==` and `unique`: `1` and `1.0`, `0` and `-0.0` share
one key, spelled as the first of them renders (docs/reference/functions.md)."""

from agentflow.runtime.functions import _count_by, _group_by


def test_count_by_counts_one_and_one_point_zero_under_one_key() -> None:
    assert _count_by([1, 1.0, 0, -0.0, "1", True], None) == {"1": 3, "0": 2, "true": 1}


def test_count_by_spells_the_key_as_the_first_value_renders() -> None:
    assert list(_count_by([-0.0, 0], None)) == ["-0.0"]


def test_group_by_groups_equal_numbers_together() -> None:
    xs = [{"a": 1}, {"a": 1.0}, {"a": 2}]
    assert _group_by(xs, "a") == {"1": [{"a": 1}, {"a": 1.0}], "2": [{"a": 2}]}
