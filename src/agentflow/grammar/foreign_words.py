"""Hints for words and operators of other languages and frameworks written where `.flow` wants
its own (docs/reference/expressions.md "Coming from another language"): the text operators
``matches``/``like``/``contains`` and ``=~`` (the library's ``matches(text, pattern)``), an
agent clause named as another framework names it (``prompt`` for ``task``, ``returns`` for
``expect``; docs/reference/agents.md), a line of a test block that is no test line (``answer
ok = true`` for ``stub ask ok returns true``; docs/reference/testing.md), and an operator left
without its right operand at the end of a line (``len(s) +`` then ``}``)."""

from __future__ import annotations

import re
from typing import Any

from agentflow.core.diagnostics import respelling
from agentflow.core.spans import Span
from agentflow.core.vocabulary import AGENT_CLAUSES
from agentflow.core.vocabulary import KEYWORD_TERMINALS as KEYWORDS
from agentflow.grammar.habit_fixes import FixedHint
from agentflow.grammar.scanner import Scanner, SynErr, Tok

__all__ = [
    "AGENT_BLOCK_HINT",
    "OPERATOR_HINTS",
    "REGEX_OPERATOR_HINT",
    "clause_synonym_hint",
    "dangling_operator_error",
    "test_line_hint",
]

#: the text operators of other languages, which read as names in `.flow` (the checker's
#: `unknown-name` and the syntax error of a name after a value give the same hint)
OPERATOR_HINTS = {
    name: "`.flow` has no `"
    + name
    + "` operator: call the library function `matches(text, pattern)` for a regular expression"
    " (or `match(text, pattern)`, `find_all(text, pattern)`); `needle in text` tests for a"
    ' substring, `@pattern("…")` constrains a type, and the `grep` tool searches files'
    for name in ("matches", "like")
} | {
    "contains": "`.flow` has no `contains` operator: `needle in text` tests for a substring (and"
    " `x in xs` for an item of a list); the library function `matches(text, pattern)` tests a"
    ' regular expression, `@pattern("…")` constrains a type, and the `grep` tool searches files'
}

#: `s =~ "re"` of Perl and Ruby
REGEX_OPERATOR_HINT = (
    "`.flow` has no `=~` operator: call the library function `matches(text, pattern)` for a "
    "regular expression (or `match`, `find_all`); `needle in text` tests for a substring"
)

#: a word of its own where an agent block wants a clause
AGENT_BLOCK_HINT = "an agent block holds its clauses, one a line: " + ", ".join(
    f"`{example}`" for example in AGENT_CLAUSES.values()
)

#: the words other agent frameworks use for an agent clause, and the clause they mean
_CLAUSE_SYNONYMS = {
    **dict.fromkeys(("prompt", "instructions", "instruction", "goal", "query"), "task"),
    **dict.fromkeys(("returns", "returning", "result", "schema", "output_type"), "expect"),
    **dict.fromkeys(("response_format", "response", "answer"), "expect"),
    **dict.fromkeys(("system_prompt", "persona", "role"), "system"),
    **dict.fromkeys(("writes", "files", "may_write"), "write"),
    **dict.fromkeys(("max_turns", "max_steps", "turns", "steps"), "max_iterations"),
    **dict.fromkeys(("context", "inputs", "with", "args"), "input"),
    **dict.fromkeys(("time_limit", "timeout_s"), "timeout"),
    **dict.fromkeys(("functions", "tool", "using"), "tools"),
}


def clause_synonym_hint(tok: Tok, expected: set[str]) -> str | None:
    """ "did you mean `task`?" for a name ``tok`` another framework gives an agent clause
    (``prompt "…"``, ``returns T``) where that clause fits (``expected``), else None."""
    # (`returns` is the keyword of `stub … returns`, the others names)
    clause = _CLAUSE_SYNONYMS.get(tok.value) if isinstance(tok.value, str) else None
    if clause is None or KEYWORDS[clause] not in expected:
        return None
    hint = (
        f"did you mean `{clause}`? an agent's `{tok.value}` is written "
        f"`{AGENT_CLAUSES[clause]}` (the clauses: "
        + ", ".join(f"`{c}`" for c in AGENT_CLAUSES)
        + ")"
    )
    fix = respelling(tok.span, str(tok.value), clause)  # the clause's word; its value as it is
    return FixedHint(hint, fix) if fix is not None else hint


#: `answer ok = true`, `answer ok true`, `reply go: "yes"`: a line answering an `ask` by name
_ANSWER_LINE = re.compile(r"(?:answers?|reply|respond|responds)\s+([A-Za-z_]\w*)\s*[=:]?\s*(.*)$")


def test_line_hint(tok: Tok, sc: Scanner) -> str:
    """The hint for a name starting a line of a test block (``answer ok = true``, ``mock …``):
    the `stub ask` an answer is written as, else the lines a test holds."""
    line = sc.text[tok.start - sc.ob :].split("\n", 1)[0]
    line = re.sub(r"\s*//.*$", "", line).strip()
    m = _ANSWER_LINE.match(line)
    if m is not None:
        name, value = m.group(1), m.group(2) or "VALUE"
        return (
            f"a test answers a question with a stub: `stub ask {name} returns {value}` "
            f"(the `ask` of `let {name} = ask …`, or every `ask` of stage `{name}`)"
        )
    return (
        "a test holds `input { … }`, stubs (`stub agent A returns V`, `stub tool T returns V`, "
        '`stub ask N returns V`, `stub stage S returns V`), `replay "file.jsonl"` and '
        "`expect …` lines (docs/reference/testing.md)"
    )


#: the operators that take a right operand (`-` and `not` also start one)
_BINARY = frozenset(
    "QQ OR AND EQ NE LT LE GT GE IN NOT PLUS MINUS MINUS_NL STAR SLASH PERCENT DOTDOT".split()
)


#: the tokens that end an operand's place on its line: `(a > )`, `[a +]`, `f(a -, b)`
_CLOSERS = frozenset({"RPAR", "RSQB", "RBRACE", "COMMA"})


def dangling_operator_error(
    tok: Tok,
    expected: set[str],
    values: list[Any] | None,
    sc: Scanner,
    found: str,
    notes: list[tuple[str, Span]],
) -> SynErr | None:
    """The syntax error of an operator just before ``tok`` whose right operand is missing: the
    parser waits for it (a name is in ``expected``) and ``tok`` (described by ``found``) cannot
    start one — set at the operator when ``tok`` is on a later line (``len(s) +`` then ``}``),
    with ``notes`` and a note where the parser stopped, and at ``tok`` when it closes the
    operand's place on the same line (``(a > )``). None for any other error (``a === b``)."""
    prev = values[-1] if values else None
    if not isinstance(prev, Tok) or prev.type not in _BINARY or "NAME" not in expected:
        return None
    later = tok.line > prev.end_line
    if not later and tok.type not in _CLOSERS:
        return None  # `a === b`, `x++`, `a += 1`: habits of other languages, hinted elsewhere
    op = f"`{prev.value}`"
    example = "not c" if prev.type == "NOT" else f"a {prev.value} b"
    return SynErr(
        f"expected an expression after {op}, found {found}",
        prev.span if later else tok.span,
        resume=tok.end - sc.ob,
        depth=len(sc.stack),
        hint=f"write the operand after {op} (`{example}`; it may go on the next line), or drop "
        f"the {op}",
        notes=[*notes, ("the parser stopped here", tok.span)] if later else notes,
    )
