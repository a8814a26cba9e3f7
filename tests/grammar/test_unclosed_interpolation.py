"""An unclosed ``${`` is reported at the ``${`` itself, with a note where parsing stopped and a
hint: the opener is the part to change, not the end of the string or file. The case of a ``${``
closed by its string's quote lives here rather than among the checker's golden ``.flow`` cases,
whose trailing ``// error[…]`` mark would sit inside that unclosed interpolation."""

from __future__ import annotations

from agentflow.compiler.api import check_source

SOURCE = 'stage unclosed_quote -> text {\n  return "a ${input.xs"\n}\n'


def test_unclosed_interpolation_closed_by_the_quote_is_reported_at_its_opener():
    diagnostics = check_source(SOURCE, "unclosed.flow").diagnostics
    assert [(d.code, d.span.line, d.span.column) for d in diagnostics] == [("syntax-error", 2, 13)]
    (found,) = diagnostics
    assert found.message == "unclosed `${`: the interpolation opened here has no `}`"
    assert [(n.span.line, n.span.column, n.message) for n in found.notes] == [
        (2, 23, "this quote starts a string inside the interpolation")
    ]
    assert found.hint == "close it with `}` (`${name}`), or write `\\${` for a literal `${`"
