"""A duration means the same in `.flow` source, plan files and contracts (docs/spec/LANGUAGE.md §2):
``core.vocabulary.duration_ms`` is the one parser.  The plan side used to match ``\\d`` — any
Unicode decimal digit — so a plan accepted ``timeout: "٣m"`` that the `.flow` scanner and the
`duration` JSON Schema (``[0-9]``) refuse; ASCII digits are right (the grammar of §2, the schema
every contract carries)."""

from __future__ import annotations

import re

import pytest

from agentflow.compiler.contracts import DURATION_PATTERN
from agentflow.core.vocabulary import duration_ms
from agentflow.errors import PlanLoadError
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_module
from agentflow.ir import load_plan_text

ACCEPTED = {"250ms": 250, "90s": 90_000, "5m": 300_000, "1h": 3_600_000, "1h30m": 5_400_000}
#: Arabic-Indic, Devanagari and fullwidth digits, then other near misses
REFUSED = ["٣m", "३s", "１h", "5", "m5", "1.5h", "5M", "5 m", "-1s", ""]


def _flow_deadline(text: str) -> int | None:
    """The milliseconds of ``deadline <text>`` in a `.flow`, or None when it does not parse."""
    module, diagnostics = parse_module(f"deadline {text}\n", "d.flow")
    if diagnostics:
        return None
    (item,) = [i for i in module.items if isinstance(i, ast.DeadlineDecl)]
    return item.duration.ms


def _plan_timeout(text: str) -> None:
    load_plan_text(
        "version: 1\nname: p\nsteps:\n"
        f"  - {{id: E0, tool_name: builtin__glob, input: {{pattern: x}}, timeout: '{text}'}}\n",
        "p.yaml",
    )


@pytest.mark.parametrize(("text", "ms"), ACCEPTED.items())
def test_flow_plans_and_contracts_accept_the_same_durations(text, ms):
    assert duration_ms(text) == ms
    assert _flow_deadline(text) == ms
    _plan_timeout(text)  # loads
    assert re.fullmatch(DURATION_PATTERN, text)


@pytest.mark.parametrize("text", REFUSED)
def test_flow_plans_and_contracts_refuse_the_same_durations(text):
    with pytest.raises(ValueError, match="invalid duration"):
        duration_ms(text)
    assert _flow_deadline(text) is None
    with pytest.raises(PlanLoadError, match="timeout"):
        _plan_timeout(text)
    assert not re.fullmatch(DURATION_PATTERN, text)
