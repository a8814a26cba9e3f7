"""An answer typed at the terminal, or given in an MCP client's form, that is JSON nested deeper
than the parser follows is taken as text (then checked against the question like any wrong
answer), never a RecursionError that ends the run with a traceback."""

from __future__ import annotations

from agentflow.runtime.hooks import AskRequest, _parse_answer
from agentflow.serve_asks import _form_answer

DEEP = "[" * 5000 + "]" * 5000


def test_a_terminal_answer_nested_too_deeply_is_kept_as_text() -> None:
    request = AskRequest("How many?", {"type": "array"}, None, "E0", [])
    assert _parse_answer(DEEP, request) == DEEP
    assert _parse_answer("[[1]]", request) == [[1]]


def test_a_form_answer_nested_too_deeply_is_kept_as_text() -> None:
    form = {"properties": {"answer": {"type": "string", "description": "JSON text"}}}
    assert _form_answer(form, DEEP) == DEEP
    assert _form_answer(form, '{"a": [1]}') == {"a": [1]}
