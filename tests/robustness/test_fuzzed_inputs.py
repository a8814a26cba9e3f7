"""Fixed-seed fuzzing of the front end, the formatter, plans, templates and the language server
(issue 16; :mod:`support.fuzz`): a few seconds per kind here, ``bench/fuzz.py`` for the large runs.
A failure is a traceback, an impossible span, an internal compiler/formatter error, ``fmt``
output that is not a fixed point or changes what ``check`` says, a hang, or (LSP) a request
without an answer, an internal error or a traceback on stderr."""

from __future__ import annotations

import pytest
from support.fuzz import run

#: (kind, inputs) for CI: seconds, not minutes
BUDGETS = [("programs", 150), ("plans", 50), ("templates", 400), ("lsp", 60)]


@pytest.mark.parametrize("kind, n", BUDGETS, ids=[k for k, _ in BUDGETS])
def test_fuzzed_inputs_never_crash_or_hang(kind, n):
    outcome = run(kind, n, seed=16, time_limit=60.0)
    print(outcome.line())
    assert outcome.inputs >= n * 0.9
    assert outcome.failures == 0, outcome.samples
