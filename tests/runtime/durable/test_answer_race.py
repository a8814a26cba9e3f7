"""Two `flowc answer` processes with different values at the same moment (issue 28): exactly
one is accepted and says `answered`, the other is told the question was already answered (with
the accepted value, exit 1), and the run uses the accepted value.  Three pairs here;
bench/answer_race.py runs a hundred."""

from __future__ import annotations

from support.answer_race import race


def test_of_two_concurrent_answers_exactly_one_is_taken_and_the_other_is_told(tmp_path):
    result = race(tmp_path, 3)
    assert result.wrong == []
    assert result.right == 3
