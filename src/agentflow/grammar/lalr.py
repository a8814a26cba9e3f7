"""The LALR(1) driver: runs the parse tables of :file:`flow.lark` over the scanner's tokens.

Lark builds the tables (once per process, cached on disk by Lark) and the AST builder's
callbacks; this module runs them itself (:func:`run`), so that the scanner can read the live
state stack to tell keywords from names and nested parses of ``${…}`` can start anywhere in the
text.  This is the **only** module that touches Lark's internals (the parse table, its states
and actions, the rule objects behind the callbacks): they are listed in :data:`LARK_INTERNALS`,
checked before first use (:func:`check_lark`) and by ``tests/grammar/test_lark_internals.py``,
so a Lark upgrade that changes them fails in one place with one clear message.  Lark is pinned
to the tested minor range in ``pyproject.toml``.

The error path lives here too: :func:`stack_before`, :func:`shifts` and :func:`viable` compute
what the parser really accepted at an error, which :mod:`.syntax_errors` puts into words.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lark
from lark import Lark
from lark.lexer import Lexer

from agentflow.grammar.builder import Builder
from agentflow.grammar.scanner import Scanner, SynErr, Tok
from agentflow.grammar.syntax_errors import unexpected

__all__ = [
    "DRIVER",
    "LARK_INTERNALS",
    "check_lark",
    "run",
    "shifted",
    "shifts",
    "viable",
    "tables",
]


# ---------------------------------------------------------------------------------------------
# Lark glue


class _Lexer(Lexer):
    """Lark needs a lexer to build a parser for declared terminals; tokens come from
    :class:`~agentflow.grammar.scanner.Scanner` through :func:`run`, never through Lark."""

    __future_interface__ = 2

    def __init__(self, lexer_conf: Any) -> None:
        self.lexer_conf = lexer_conf

    def lex(
        self, lexer_state: Any, parser_state: Any
    ) -> Iterator[Any]:  # pragma: no cover - never called
        raise NotImplementedError("the .flow parse tables are run by agentflow.grammar.lalr.run")


_PARSER: Lark | None = None


def _lark() -> Lark:
    """The process-wide Lark LALR parser (built on first use)."""
    global _PARSER
    if _PARSER is None:
        grammar = (Path(__file__).parent / "flow.lark").read_text(encoding="utf-8")
        _PARSER = Lark(
            grammar,
            parser="lalr",
            lexer=_Lexer,
            start=["module", "expr_only"],
            transformer=Builder(),
            keep_all_tokens=True,
            maybe_placeholders=False,
            # the LALR analysis is cached in the temp directory (keyed by grammar and options)
            cache=True,
        )
    return _PARSER


def _inner(parser: Lark) -> Any:
    return parser.parser.parser.parser


def _a_rule(parser: Lark) -> Any:
    return next(iter(_inner(parser).callbacks))


def _actions_are_pairs(parser: Lark) -> bool:
    shift = importlib.import_module("lark.parsers.lalr_analysis").Shift
    callbacks = _inner(parser).callbacks
    for actions in _inner(parser).parse_table.states.values():
        for action, arg in actions.values():
            if action is not shift and arg not in callbacks:
                raise TypeError("a reduction's rule has no callback")
    return True


#: Everything the driver reads from Lark that is not Lark's public API, by name, with how to
#: read it from the built parser.  A Lark release that changes one of them breaks
#: :func:`check_lark` (and the test that names them) instead of the parse.
LARK_INTERNALS: dict[str, Callable[[Lark], Any]] = {
    "Lark.parser.parser.parser (the LALR _Parser)": _inner,
    "_Parser.parse_table": lambda p: _inner(p).parse_table,
    "ParseTable.states": lambda p: _inner(p).parse_table.states,
    "ParseTable.start_states": lambda p: _inner(p).parse_table.start_states["expr_only"],
    "ParseTable.end_states": lambda p: _inner(p).parse_table.end_states["expr_only"],
    "_Parser.callbacks": lambda p: _inner(p).callbacks,
    "lark.parsers.lalr_analysis.Shift": lambda p: (
        importlib.import_module("lark.parsers.lalr_analysis").Shift
    ),
    "ParseTable.states actions as (Shift | Reduce, state | Rule) pairs": _actions_are_pairs,
    "Rule.expansion": lambda p: len(_a_rule(p).expansion),
    "Rule.alias": lambda p: _a_rule(p).alias,
    "Rule.origin.name": lambda p: _a_rule(p).origin.name,
    "Rule.options.expand1": lambda p: _a_rule(p).options.expand1,
}


def check_lark(parser: Lark | None = None) -> None:
    """Check that the installed Lark still has every internal in :data:`LARK_INTERNALS`.

    Raises ``RuntimeError("lark X.Y changed <what>; update grammar/lalr.py")`` at the first one
    missing.  Runs once, before the tables are first built."""
    parser = _lark() if parser is None else parser
    for what, read in LARK_INTERNALS.items():
        try:
            read(parser)
        except Exception as e:
            raise RuntimeError(
                f"lark {lark.__version__} changed {what}; update grammar/lalr.py"
            ) from e


#: builder callbacks that return their single child unchanged (skipped by the driver)
_IDENTITY = frozenset({"type"})


class Tables:
    """Lark's LALR(1) table for :file:`flow.lark`, re-keyed for a fast driver loop.

    ``states[state][terminal]`` is ``(True, next_state)`` for a shift or
    ``(False, (size, callback, nonterminal))`` for a reduction, where ``callback`` is the
    transformer callback Lark built for the rule.  (Lark's own loop keys its callbacks by
    ``Rule`` objects whose hashing and equality dominate the parse time.)
    """

    def __init__(self, parser: Lark) -> None:
        check_lark(parser)
        shift = importlib.import_module("lark.parsers.lalr_analysis").Shift
        inner = _inner(parser)
        table = inner.parse_table
        callbacks = inner.callbacks
        self.states: dict[int, dict[str, tuple[bool, Any]]] = {}
        for st, actions in table.states.items():
            row: dict[str, tuple[bool, Any]] = {}
            for term, (action, arg) in actions.items():
                # plain str keys: Lark's names are Token objects with a Python-level __eq__
                if action is shift:
                    row[str(term)] = (True, arg)
                elif (arg.options.expand1 and len(arg.expansion) == 1 and not arg.alias) or (
                    len(arg.expansion) == 1 and str(arg.alias or arg.origin.name) in _IDENTITY
                ):
                    # `?rule: x` with one child, or a callback returning its only child:
                    # the value passes through unchanged
                    row[str(term)] = (False, (1, None, str(arg.origin.name)))
                else:
                    row[str(term)] = (
                        False,
                        (len(arg.expansion), callbacks[arg], str(arg.origin.name)),
                    )
            self.states[st] = row
        #: ``goto[state][nonterminal]`` → the state after a reduction to ``nonterminal``
        self.goto: dict[int, dict[str, int]] = {
            st: {k: a[1] for k, a in row.items() if a[0] and k.islower()}
            for st, row in self.states.items()
        }
        self.start = dict(table.start_states)
        self.end = dict(table.end_states)


_TABLES: Tables | None = None


def tables() -> Tables:
    """The process-wide :class:`Tables` (built on first use)."""
    global _TABLES
    if _TABLES is None:
        _TABLES = Tables(_lark())
    return _TABLES


# ---------------------------------------------------------------------------------------------
# The driver


class _EndTok:
    """The end-of-input marker fed to the driver."""

    __slots__ = ("type", "value")

    def __init__(self) -> None:
        self.type = "$END"
        self.value = ""


def run(sc: Scanner, start: str, values: list[Any] | None = None) -> Any:
    """Run the LALR(1) automaton of :file:`flow.lark` over the tokens of ``sc``.

    Returns the value built by the transformer callbacks for the start symbol ``start``;
    raises :class:`SynErr` on a syntax error.  ``values`` may be passed in to keep the value
    stack after an error (for ``module``, ``values[0]`` is the list of completed items).
    """
    t = tables()
    states = t.states
    stack = [t.start[start]]
    if values is None:
        values = []
    end_state = t.end[start]
    goto = t.goto
    push = stack.append
    vpush = values.append
    origin0 = (sc.pos, sc.line, sc.ls)
    for tok in sc.tokens(states, stack):
        typ = tok.type
        while True:
            act = states[stack[-1]].get(typ)
            if act is None:
                raise _error(tok, stack_before(sc, start, origin0, tok, stack), start, sc, values)
            if act[0]:
                push(act[1])
                vpush(tok)
                break
            size, cb, origin = act[1]
            if cb is None:
                stack[-1] = goto[stack[-2]][origin]
                continue
            if size == 1:
                stack[-1] = goto[stack[-2]][origin]
                values[-1] = cb([values[-1]])
                continue
            if size:
                kids = values[-size:]
                del stack[-size:]
                del values[-size:]
            else:
                kids = []
            vpush(cb(kids))
            push(goto[stack[-1]][origin])
    end = _EndTok()
    while True:
        act = states[stack[-1]].get("$END")
        if act is None:
            raise _error(end, stack_before(sc, start, origin0, end, stack), start, sc, values)
        if act[0]:  # pragma: no cover - $END is never shifted
            break
        size, cb, origin = act[1]
        if cb is None:
            stack.pop()
        else:
            if size:
                kids = values[-size:]
                del stack[-size:]
                del values[-size:]
            else:
                kids = []
            values.append(cb(kids))
        stack.append(states[stack[-1]][origin][1])
        if stack[-1] == end_state:
            return values[-1]
    return values[-1]  # pragma: no cover


# -- error messages ---------------------------------------------------------------------------


def stack_before(
    sc: Scanner, start: str, origin: tuple[int, int, int], tok: Any, stack: list[int]
) -> list[int]:
    """The LALR state stack just before ``tok`` was read, before the reductions it triggered.

    LALR(1) merges the lookaheads of states reached from different contexts, so the driver may
    reduce on a token that no context accepts before it finds the error (``where e.kind = …``
    reduces the condition, then the statement, and fails among the statement starters).  Error
    messages must describe the state before those reductions: it is rebuilt here by scanning
    again from ``origin`` (``(pos, line, ls)`` of ``sc`` when the run started) without building
    values.  Only the error path pays for this.  Falls back to ``stack`` if the replay does not
    reach ``tok``.
    """
    t = tables()
    states = t.states
    goto = t.goto
    pos, line, ls = origin
    sub = Scanner(
        sc.text,
        pos,
        sc.end,
        sc.file,
        line,
        ls,
        sc.ob,
        stop=sc.stop,
        module=sc.module,
        nest=sc.nest,
        driver=sc.driver,
    )
    st = [t.start[start]]
    target = tok.start if isinstance(tok, Tok) else None
    try:
        for tk in sub.tokens(states, st):
            if tk.start == target:
                return st
            typ = tk.type
            while True:
                act = states[st[-1]].get(typ)
                if act is None:
                    return stack
                if act[0]:
                    st.append(act[1])
                    break
                size, _cb, nonterminal = act[1]
                if size:
                    del st[-size:]
                st.append(goto[st[-1]][nonterminal])
    except Exception:  # noqa: BLE001  # pragma: no cover - the first run got further: keep its stack
        return stack
    return st if target is None else stack


def shifts(stack: list[int], term: str, end_state: int | None = None) -> bool:
    """True when the parser in ``stack`` really shifts ``term`` next, through the reductions it
    triggers (the state's action for ``term`` may come from the merged LALR lookaheads of
    another context); for ``$END``, when reducing reaches ``end_state`` (the input is accepted)."""
    return shifted(stack, term, end_state) is not None


def shifted(stack: list[int], term: str, end_state: int | None = None) -> list[int] | None:
    """The state stack after the parser in ``stack`` shifts ``term`` (through the reductions it
    triggers), or None when it cannot: what the parser expects *after* a token that is missing
    (``count int``: after the missing `:`, a type); for ``$END``, the stack once reducing
    reaches ``end_state`` (the input is accepted)."""
    t = tables()
    states = t.states
    goto = t.goto
    st = list(stack)
    for _ in range(10_000):
        act = states[st[-1]].get(term)
        if act is None:
            return None
        if act[0]:
            st.append(act[1])
            return st
        size, _cb, nonterminal = act[1]
        if size:
            del st[-size:]
        nxt = goto.get(st[-1], {}).get(nonterminal) if st else None
        if nxt is None:
            return None
        st.append(nxt)
        if term == "$END" and nxt == end_state:
            return st
    return None  # pragma: no cover


def viable(stack: list[int], start: str) -> set[str]:
    """The terminals that the parser in ``stack`` can really shift next (or ``$END`` when it
    can accept): each candidate of the top state is tried on a copy of the stack through the
    reductions it triggers (:func:`shifts`).  This removes the merged LALR lookaheads of other
    contexts."""
    t = tables()
    end_state = t.end[start]
    return {
        term
        for term in t.states[stack[-1]]
        if (term.isupper() or term == "$END") and shifts(stack, term, end_state)
    }


def _error(tok: Any, stack: list[int], start: str, sc: Scanner, values: list[Any] | None) -> SynErr:
    """The syntax error for ``tok``, which the parser with state stack ``stack`` cannot take."""
    states = tables().states
    expected = viable(stack, start)
    # `count int`: a `:` is missing before a type (a field, a parameter, a `let`'s annotation)
    after_colon = shifted(stack, "COLON") if "COLON" in expected else None
    return unexpected(
        tok,
        expected,
        sc,
        values,
        # the state below the top accepts an agent clause: we are inside an agent block
        in_agent_block=len(stack) > 1 and "TASK" in states[stack[-2]],
        type_after_colon=after_colon is not None and _takes_a_type(after_colon),
    )


def _takes_a_type(stack: list[int]) -> bool:
    """True when the parser in ``stack`` expects a type next (``map`` and a name fit, and no
    expression could start: no `not`, no `-`)."""
    row = tables().states[stack[-1]]
    return "MAP" in row and "NAME" in row and "NOT" not in row and "MINUS" not in row


class _Driver:
    """The driver as the scanner sees it (:class:`agentflow.grammar.scanner.Driver`)."""

    @staticmethod
    def run(sc: Scanner, start: str) -> Any:
        return run(sc, start)

    @staticmethod
    def shifts(stack: list[int], term: str) -> bool:
        return shifts(stack, term)


#: what parse-mode scanners are given as ``driver``
DRIVER = _Driver()
