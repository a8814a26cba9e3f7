"""An input that does not fit says the types the user named (``Ticket[]``, not ``json[]``),
a malformed duration as a duration (never the pattern it is checked with), and an object that
lacks several required fields once, listing them — through ``flowc run`` and the api
(``flowc serve``: tests/cli/test_input_errors_in_the_flows_terms.py), alike (docs/reference/cli.md "An input that does not fit")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import agentflow
from agentflow.cli import main
from agentflow.errors import InputMismatch

SUPPORT = """input { tickets: Ticket[], sla: duration, max_rounds: int }

type Ticket {
  id: text
  subject: text
  body: text
  tags: text[]
}

stage answer -> int { return len(input.tickets) + input.max_rounds }
"""

NOT_A_LIST = '`input.tickets` is "oops", but the flow\'s input type wants `Ticket[]` here'
SEVERAL = [
    "error: the input does not fit the flow's input type:",
    '  `input.sla` is "1 hour", but the flow\'s input type wants `duration` here; '
    "write a duration such as `90s` or `1h30m` (units ms, s, m, h)",
    "  `input.tickets[0]` lacks the required fields `subject`, `body` and `tags` "
    "of the flow's input type `Ticket`",
    "  `input.tickets[0].id` is 1, but the flow's input type wants `text` here",
]


def _run(tmp_path: Path, monkeypatch, given: dict) -> list[str]:
    (tmp_path / "support.flow").write_text(SUPPORT, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["run", "support.flow", "--input", json.dumps(given)])
    assert res.exit_code == 1
    return res.stderr.splitlines()


def test_a_list_of_a_named_type_is_said_by_its_name(tmp_path, monkeypatch):
    lines = _run(tmp_path, monkeypatch, {"tickets": "oops", "sla": "1h", "max_rounds": 1})
    assert lines[0] == f"error: {NOT_A_LIST}"
    assert "json" not in "\n".join(lines)


def test_a_bad_duration_and_missing_fields_are_said_once_in_the_flows_terms(tmp_path, monkeypatch):
    given = {"tickets": [{"id": 1}], "sla": "1 hour", "max_rounds": 1}
    lines = _run(tmp_path, monkeypatch, given)
    assert lines[:4] == SEVERAL
    assert "^(" not in "\n".join(lines)  # never the pattern a duration is checked with


def test_the_api_raises_the_same_words(tmp_path):
    (tmp_path / "support.flow").write_text(SUPPORT, encoding="utf-8")
    given = {"tickets": [{"id": 1}], "sla": "1 hour", "max_rounds": 1}
    with pytest.raises(InputMismatch) as caught:
        agentflow.run_sync(tmp_path / "support.flow", given, model="test")
    assert str(caught.value).splitlines() == [SEVERAL[0].removeprefix("error: ")] + SEVERAL[1:]
