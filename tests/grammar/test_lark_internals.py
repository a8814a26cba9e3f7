"""The Lark internals the LALR driver (grammar/lalr.py) reads, named one by one.

Lark is pinned to a tested minor range (pyproject.toml); when an upgrade moves or renames one
of these, this test fails with one message saying which, instead of the parser failing somewhere
inside a parse.
"""

from __future__ import annotations

import lark
import pytest

from agentflow.grammar import lalr

#: every piece of Lark the driver reads that is not Lark's public API
INTERNALS = [
    "Lark.parser.parser.parser (the LALR _Parser)",
    "_Parser.parse_table",
    "ParseTable.states",
    "ParseTable.start_states",
    "ParseTable.end_states",
    "_Parser.callbacks",
    "lark.parsers.lalr_analysis.Shift",
    "ParseTable.states actions as (Shift | Reduce, state | Rule) pairs",
    "Rule.expansion",
    "Rule.alias",
    "Rule.origin.name",
    "Rule.options.expand1",
]


def test_the_driver_declares_exactly_the_internals_named_here():
    assert list(lalr.LARK_INTERNALS) == INTERNALS


@pytest.mark.parametrize("what", INTERNALS)
def test_installed_lark_still_has(what: str):
    try:
        lalr.LARK_INTERNALS[what](lalr._lark())
    except Exception as e:  # noqa: BLE001 - any change of lark's internals fails here
        pytest.fail(f"lark {lark.__version__} changed {what}; update grammar/lalr.py ({e!r})")


def test_a_changed_internal_fails_with_one_clear_message():
    class Moved:
        """A Lark object whose LALR parser moved elsewhere."""

        parser = None

    with pytest.raises(RuntimeError) as info:
        lalr.check_lark(Moved())
    assert str(info.value) == (
        f"lark {lark.__version__} changed Lark.parser.parser.parser (the LALR _Parser); "
        "update grammar/lalr.py"
    )


def test_the_tables_agree_with_the_grammar_file():
    # every terminal the scanner can emit in parse mode is declared, and both start symbols exist
    from agentflow.grammar.scanner import KEYWORDS, OPS

    t = lalr.tables()
    assert set(t.start) == {"module", "expr_only"} and set(t.end) == set(t.start)
    terminals = {term for row in t.states.values() for term in row if term.isupper()}
    emitted = set(KEYWORDS.values()) | set(OPS.values())
    emitted |= {"NAME", "NUMBER", "DURATION", "STRING", "LPAR_NL", "LSQB_NL", "MINUS_NL", "NOT_NL"}
    assert terminals <= emitted | {"$END"}
    assert emitted - terminals == set(), emitted - terminals
