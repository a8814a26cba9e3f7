"""Syntax errors in words: "expected …, found …", the notes and the hints
(docs/spec/LANGUAGE.md §1–8).

The driver (:mod:`.lalr`) hands :func:`unexpected` the offending token and the terminals the
parser could really shift there; this module only words them — it reads no parse tables.
Hints name the common slips of users of other languages (``=`` for ``==``, ``List[str]``,
``task: "…"`` …).
"""

from __future__ import annotations

import re
from typing import Any

from agentflow.core import diagnostics as diag
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    AGENT_CLAUSES,
    ERROR_CODES,
    OUTCOME_TYPE,
    STATEMENT_WORDS,
)
from agentflow.core.vocabulary import KEYWORD_TERMINALS as KEYWORDS
from agentflow.grammar import ast
from agentflow.grammar.fn_syntax import fn_error
from agentflow.grammar.foreign_words import (
    AGENT_BLOCK_HINT,
    OPERATOR_HINTS,
    REGEX_OPERATOR_HINT,
    clause_synonym_hint,
    dangling_operator_error,
    test_line_hint,
)
from agentflow.grammar.habit_fixes import FixedHint, elif_fix, fix_of, or_fix
from agentflow.grammar.habits import elif_word, habit_hint, lambda_hint
from agentflow.grammar.joined import (
    LOOP_WAYS,
    LOOP_WORDS,
    joined_statement,
    loop_hint,
    misspelt_keyword_before,
    statements_on_one_line,
    unit_word_hint,
)
from agentflow.grammar.operand_words import operand_word_error, operand_word_in_line
from agentflow.grammar.scanner import OPENERS, OPS, TOP_LEVEL, Scanner, SynErr, Tok
from agentflow.grammar.slips import bound_keyword, slip_error
from agentflow.grammar.unclosed import word_at

__all__ = [
    "OPERATOR_HINTS",
    "describe",
    "joined_statement",
    "misspelt_keyword_before",
    "statements_on_one_line",
    "unexpected",
]

_EXPR_START = frozenset(
    "NAME NUMBER DURATION STRING LPAR LPAR_NL LSQB LSQB_NL LBRACE MINUS MINUS_NL NOT NOT_NL "
    "TRUE FALSE NULL MAP PARALLEL REDUCE LOOP AGENT VERIFY FILTER ASK TRY IF MATCH".split()
)
_OPERATORS = frozenset(
    "QQ OR AND EQ NE LT LE GT GE IN NOT PLUS MINUS STAR SLASH PERCENT DOTDOT DOT CATCH".split()
) | {"TIMEOUT", "RETRY"}  # a tool call's clauses continue an expression as `catch` does
#: tokens that can only begin an expression (not continue one as an operator or postfix)
_EXPR_START_STRICT = _EXPR_START - {"MINUS", "NOT", "LPAR", "LSQB"}
_STMT_START = frozenset(KEYWORDS[w] for w in STATEMENT_WORDS)
_CLAUSE = frozenset(KEYWORDS[c] for c in AGENT_CLAUSES)
_TOP = frozenset(k.upper() for k in TOP_LEVEL)
_PUNCT_WORDS = {v: f"`{k}`" for k, v in OPS.items()}
_PUNCT_WORDS.update({"LPAR_NL": "`(`", "LSQB_NL": "`[`", "MINUS_NL": "`-`", "NOT_NL": "`not`"})


#: the hint of `fail` / `return` where an expression goes: an arm of `if … then … else` or of
#: a `match`, a `let`'s value (docs/reference/expressions.md "if … then … else")
STATEMENT_AS_VALUE_HINTS = {
    "fail": (
        "`fail` is a statement, not a value: fail before the value is needed — "
        '`require c else fail "…"` or an `if c { fail "…" }` statement — and give the value '
        'here (`loop … else fail "…"` and `ask … else fail "…"` are the expressions that fail)'
    ),
    "return": (
        "`return` is a statement, not a value: where a value goes (an arm of `if … then … "
        "else` or of a `match`, a `let`), write the value alone (`then 1`); to leave early, "
        "write an `if c { return 1 }` statement"
    ),
}


def describe(tok: Any, *, article: bool = True) -> str:
    """Words for a token found where it does not belong: ``"the name `x`"`` (after "found"),
    or without the article, ``"name `x`"`` (after "unexpected")."""
    t = tok.type
    the = "the " if article else ""
    if t == "$END":
        return f"{the}end of the text"
    if t == "STRING":
        return "a string" if article else "string"
    if t == "NUMBER":
        return f"{the}number `{tok.value}`"
    if t == "DURATION":
        return f"{the}duration `{tok.value}`"
    if t == "NAME":
        return f"{the}name `{tok.value}`"
    if t in _PUNCT_WORDS:
        return _PUNCT_WORDS[t]
    return f"`{tok.value}`"


def _expected_words(expected: set[str]) -> list[str]:
    """Summarise an LALR expected-terminal set in words a person uses."""
    exp = set(expected)
    words: list[str] = []
    if _TOP & exp and len(_TOP & exp) >= 4:
        words.append("a declaration (`type`, `stage`, `use`, …)")
        exp -= _TOP
    if len(_CLAUSE & exp) >= 4:
        words.append("an agent clause (`task`, `expect`, `tools`, …)")
        exp -= _CLAUSE
    if _STMT_START <= exp:
        words.append("a statement")
        exp -= _STMT_START
        exp -= _EXPR_START
    if "MAP" in exp and "NAME" in exp and "NOT" not in exp and "MINUS" not in exp:
        words.append("a type")
        exp -= {"MAP", "NAME", "STRING", "NUMBER", "TRUE", "FALSE", "NULL", "LBRACE", "LPAR"}
        exp -= {"LPAR_NL"}
    if "NAME" in exp and len(_EXPR_START_STRICT & exp) >= 4:
        words.append("an expression")
        exp -= _EXPR_START
    ops = _OPERATORS & exp
    if "GT" in exp and ("LT" not in exp or "PIPE" in exp):
        ops -= {"GT"}  # the `>` closing `map<T>`/`Outcome<T>` (`|` fits: a type), no comparison
    rest = exp - ops - {"$END", "LSQB", "LPAR", "QMARK", "PIPE", "AT"}
    for t in sorted(rest, key=_term_order):
        if t in _PUNCT_WORDS:
            words.append(_PUNCT_WORDS[t])
        elif t == "NAME":
            words.append("a name")
        elif t == "STRING":
            words.append("a string")
        elif t == "DURATION":
            words.append("a duration")
        elif t == "NUMBER":
            words.append("a number")
        else:
            words.append(f"`{t.lower()}`")
    if not words and "$END" in exp:
        words.append("the end of the text")
    if not words:
        # only a call/index bracket fits (`agent` must be followed by `(`)
        words.extend(_PUNCT_WORDS[t] for t in ("LPAR", "LSQB") if t in exp)
    if not words and ops:
        words.append("an operator")
    return words


def _term_order(t: str) -> tuple[Any, ...]:
    order = ["RBRACE", "RSQB", "RPAR", "GT", "COMMA", "COLON", "EQUALS", "ARROW"]
    return (order.index(t) if t in order else len(order), t)


def _join_or(words: list[str]) -> str:
    words = list(dict.fromkeys(words))
    if len(words) > 5:
        words = words[:5] + ["…"]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


#: a short example of each agent clause, for the "no colon" hint
_CLAUSE_EXAMPLE = {KEYWORDS[c]: example for c, example in AGENT_CLAUSES.items()}


_WORD_BEFORE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(\[\s*)?$")
_GENERIC_BASE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*<\s*([A-Za-z_][A-Za-z0-9_]*)[^<>]*$")
_TYPE_ARGS = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:,\s*([A-Za-z_][A-Za-z0-9_]*)\s*)?[>\]]")


def _generic_hint(tok: Any, expected: set[str], sc: Scanner) -> str | None:
    """Hints for generic types written as in other languages, in a type position:
    ``list<text>`` / ``List[str]`` / ``Optional[int]`` / ``Dict[str, int]`` / ``map<text, int>``."""
    typ = tok.type
    i = tok.start - sc.ob
    if typ == "COMMA" and "GT" in expected and ("LT" not in expected or "PIPE" in expected):
        m = _TYPE_ARGS.match(sc.text, i + 1)
        value = diag.agentflow_type_name(m.group(1)) if m else "T"
        base = _GENERIC_BASE.search(sc.text, max(0, i - 200), i)
        if base is not None and base.group(1) == OUTCOME_TYPE:
            first = diag.agentflow_type_name(base.group(2))
            return (
                f"`{OUTCOME_TYPE}<T>` takes only the type of its value: `{OUTCOME_TYPE}<{first}>`"
            )
        return f"`map<T>` takes only the value type (its keys are text): `map<{value}>`"
    if typ == "LT" and "LT" not in expected:
        j = i + 1
    elif typ == "NAME" and "RSQB" in expected and "LT" not in expected:
        j = i
    else:
        return None
    before = _WORD_BEFORE.search(sc.text, max(0, i - 100), i)
    if before is None or (typ == "NAME") != bool(before.group(2)):
        return None
    m = _TYPE_ARGS.match(sc.text, j)
    args = [a for a in m.groups() if a] if m else []
    return diag.generic_type_hint(before.group(1), args)


#: `switch (x) {`, `when (x) {`, `match x with` of other languages, before the offending token
_SWITCH_BEFORE = re.compile(r"(?:^\s*|[=(,:]\s*|\breturn\s+)(switch|when)\b")


#: `match (s, re)`: the library call with a blank, read as a `match` whose subject is `(s`
_MATCH_CALL_BEFORE = re.compile(r"\bmatch\s+\([^()]*$")


#: `match` ending its line with the subject on the next: `match` was read as a name, and the
#: subject's `{` as an object, up to the offending token
_MATCH_SUBJECT_BELOW = re.compile(r"\bmatch[ \t]*(?://[^\n]*)?\n[^\n{}]*\{[^{}]*$")
#: `= match` or `return match` ending the line before the offending token, at its start
_MATCH_ENDS_LINE = re.compile(r"(?:=|\breturn)[ \t]*match[ \t]*(?://[^\n]*)?\n\s*$")
#: `match - x {` (a blank after the `-`): `match` was read as a variable minus `x`
_MATCH_MINUS_BLANK = re.compile(r"\bmatch[ \t]+-[ \t]+[^\n{}]*\{[^{}]*$")

MATCH_SUBJECT_RULE = (
    "the subject of `match` starts on the line of `match`, after a blank, with a name, a "
    "literal, `(`, `not` or a `-` written against its operand: `match input.s {`, "
    "`match -input.n {`, `match (a - b) {`"
)


def match_subject_hint(tok: Any, sc: Scanner) -> str | None:
    """The hint of a ``match`` whose subject the scanner did not see, so ``match`` was read as
    a name (docs/reference/expressions.md "match"): its subject on the next line, ``match - x``."""
    if tok.type in ("EOF", "$END"):
        return None
    before = sc.text[max(0, tok.start - sc.ob - 400) : tok.start - sc.ob]
    if _MATCH_SUBJECT_BELOW.search(before) or _MATCH_MINUS_BLANK.search(before):
        return MATCH_SUBJECT_RULE
    if tok.bol and _MATCH_ENDS_LINE.search(before):
        # `fn f(n: int) -> int = match⏎ n { … }`: the item ended at `match`, read as a name
        return MATCH_SUBJECT_RULE
    return None


#: token types of a literal that may be a `match` pattern
_PATTERN_LITERALS = frozenset({"STRING", "NUMBER", "DURATION", "TRUE", "FALSE", "NULL"})


def _match_hint(tok: Any, expected: set[str], prev: Tok | None, sc: Scanner) -> str | None:
    """The hints of ``match`` (docs/reference/expressions.md "match"): an arm without ``=>``,
    ``case "a":`` of other languages, ``switch``/``when`` (an empty ``match``: :mod:`.slips`)."""
    arm = 'a `match` arm is `pattern => value`: `"low" => 1`, `"a" | "b" => 2`, `_ => 0`'
    if tok.type == "DURATION" and prev is not None and prev.type in ("MINUS", "MINUS_NL"):
        # `match d { -1m => … }`: only a number pattern takes a sign
        return "a duration is never negative: write the pattern without `-` (`1m`)"
    if "FATARROW" in expected and tok.type != "FATARROW":
        if prev is not None and prev.type == "NAME" and prev.value == "case":
            return f"there is no `case`: {arm}"
        if prev is not None and prev.type == "NAME" and tok.type == "DOT":
            # `match x { input.limit => … }`: a computed value where a constant goes
            return (
                'a `match` pattern is a constant (`"low"`, `1`, `true`, `null`), not a '
                "computed value: compare with a value read from the program in "
                "`if x == value then … else …`"
            )
        if prev is not None and prev.type in _PATTERN_LITERALS:
            if tok.type == "COMMA":  # `1, 2 => …`: the patterns of one arm
                written = sc.text[prev.start - sc.ob : tok.start - sc.ob]
                nxt = re.match(r"[ \t]*([^\s=,|]+)", sc.text[tok.end - sc.ob :])
                more = nxt.group(1) if nxt else "…"
                return f"the patterns of one arm are joined by `|`: `{written} | {more} => …`"
            if tok.type == "DOTDOT":  # `1..3 => …`: a range
                return "a pattern is one value: for a range, write `if x in 1..3 then … else …`"
        return arm
    line = _line_before(sc, tok)
    if tok.type == "COMMA" and _MATCH_CALL_BEFORE.search(line):
        return (
            "`match (…)` with a blank starts a `match` expression; the library function is "
            'written without one: `match(s, "pattern")`'
        )
    if tok.type in ("FATARROW", "LBRACE", "STRING", "NUMBER", "NAME"):
        found = _SWITCH_BEFORE.search(line)
        if found is not None:
            return (
                f'`.flow` has no `{found.group(1)}`: write `match x {{ "a" => …, _ => … }}` '
                "(checked to cover every value)"
            )
    return None


#: `fn name` before the offending `<` of `fn gen<T>(…)`
_FN_NAME_BEFORE = re.compile(r"(?:^|[\s;])fn\s+[A-Za-z_][A-Za-z0-9_]*\s*$")


def _unit_word_after_number(tok: Any, sc: Scanner) -> str | None:
    """The duration-word hint for a name ``tok`` that follows a number on its line
    (``2 hours``), wherever a duration is written: the clause holding the number may be
    reduced before the word is read, so the line's text is read, not the parser's stack."""
    before = _line_before(sc, tok)
    if tok.type != "NAME":  # `backoff: { initial: 2 seconds }`: the word read as an entry's key
        spelt = re.search(r"(?<![\w.])(\d+)[ \t]+([A-Za-z]+)[ \t]*$", before)
        return unit_word_hint(spelt.group(1), spelt.group(2)) if spelt else None
    number = re.search(r"(?<![\w.])(\d+)[ \t]+$", before)
    return unit_word_hint(number.group(1), str(tok.value)) if number else None


def _first_in_block(values: list[Any] | None) -> bool:
    """Whether the last token shifted (``values[-1]``) starts the first statement of a block
    opened on its line: the parser holds ``{``, the block's statements so far (a list), then it.
    (An object's ``{ a`` holds no list: ``{ a = 1 }`` is not an assignment.)"""
    return (
        values is not None
        and len(values) >= 3
        and isinstance(values[-2], list)
        and isinstance(values[-3], Tok)
        and values[-3].type == "LBRACE"
    )


def _syntax_hint(
    tok: Any, expected: set[str], values: list[Any] | None, sc: Scanner, in_agent_block: bool
) -> str | None:
    """A hint for the common slips of users of other languages, from the offending token, the
    terminals that fit (``expected``), the tokens shifted before it (``values``) and whether
    the parser is inside an agent block."""
    typ = tok.type
    if typ == "EQUALS" and {"AT", "RBRACE"} <= expected:  # after a field's type
        default = _field_default_hint(sc, tok)
        if default is not None:  # `input { rounds: int = 3 }`
            return default
    if typ == "LT" and _FN_NAME_BEFORE.search(_line_before(sc, tok)):
        # `fn gen<T>(x: T) -> T` of languages with generics
        return (
            "functions have no type parameters: write the types of the parameters and the "
            "result (`fn first(xs: text[]) -> text? = …`), one function per type"
        )
    spelt = _unit_word_after_number(tok, sc)
    if spelt is not None:  # `timeout 2 hours`, `sleep 5 minutes`, `f(x) timeout 10 seconds`
        return spelt
    hint = (
        _generic_hint(tok, expected, sc)
        or match_subject_hint(tok, sc)
        or habit_hint(tok, expected, values, sc)
    )
    if hint is not None:
        return hint
    if _ask_then_fails(tok, sc):
        # `stub ask go returns true then fails "failed"` (`fails` is read as a name there)
        return (
            "only the answers of `stub agent|stage|tool` can fail in turn "
            '(`returns V then fails "code"`); `stub ask` and `stub step` give values'
        )
    prev = values[-1] if values and isinstance(values[-1], Tok) else None
    prev2 = values[-2] if values and len(values) > 1 and isinstance(values[-2], Tok) else None
    if "ELSE" in expected and any(isinstance(v, Tok) and v.type == "UNTIL" for v in values or ()):
        # `loop … { … } until c` with nothing after: running out of rounds must be spelt out
        return (
            "say what the loop gives when no round meets `until`: "
            '`else fail "…"` (fails with `loop_exhausted`) or `else <value>` (e.g. the last state)'
        )
    if (
        "ELSE" in expected
        and prev2 is not None
        and prev2.type == "THEN"
        and not isinstance(values[-1] if values else None, Tok)
    ):
        # `let x = if c then a` with nothing after: the conditional expression has two arms
        return (
            "an `if … then` expression needs its `else`: `if c then a else b`; to run "
            "statements only when `c` holds, write an `if c { … }` statement"
        )
    match_hint = _match_hint(tok, expected, prev, sc)
    if match_hint is not None:
        return match_hint
    if typ == "PIPE" and "PIPE" not in expected:
        # `a || b` from C, Java, JavaScript (`|` is only the union of types)
        said = "`.flow` writes `a or b` for `a || b` (`|` joins the members of a union type)"
        return (
            FixedHint(said, fix) if (fix := or_fix(sc.text, tok.start - sc.ob, tok.span)) else said
        )
    if typ == "ELSE" and "THEN" in expected:
        # `x if c else y` from Python: the `if` began a new statement
        return (
            "a conditional expression is written `if c then x else y` "
            "(Python's `x if c else y` is not `.flow`)"
        )
    if typ == "QMARK" and "QMARK" not in expected:
        # `c ? a : b` from C, Java, JavaScript
        return "there is no `c ? a : b` in `.flow`: write `if c then a else b`"
    caught = _lowest_precedence_caught(sc, tok)
    if caught is not None:
        # `loop … { … } catch { 0 }`: the fallback's `{` was read as an object literal
        return (
            f"`{caught}` takes the lowest precedence, so `catch` cannot follow it directly: "
            f"put it in parentheses, `({caught} …) catch {{ … }}`, or in a block, "
            f"`try {{ {caught} … }} catch {{ … }}`"
        )
    if prev is not None and prev.type == "SLEEP":
        # `sleep` with no duration after it (the next line's statement was read as one)
        return "`sleep` takes a duration: `sleep 5m` (or `sleep input.wait`)"
    if expected >= {"UP"} and typ != "UP" and prev is not None and prev.type == "LOOP":
        return "a loop is bounded: `loop up to N as round, state = start { … }`"
    if (
        "AS" in expected
        and typ != "AS"
        and prev2 is not None
        and prev2.type == "TO"
        and any(isinstance(v, Tok) and v.type == "LOOP" for v in values or ())
    ):
        # `loop up to 5 {`: the round and the state are named
        m = re.search(r"up\s+to\s+(\S+)\s*$", _line_before(sc, tok))
        n = m.group(1) if m else "N"
        return (
            f"name the round and the state: `loop up to {n} as round, s = start {{ … }} until …` "
            "(the body's value is the next state)"
        )
    loop = _loop_word(sc, tok, values)
    if loop is not None:
        # `for x in xs { … }`, `while c { … }`: the braces were read as an object
        return loop_hint(loop[0])
    if typ in ("EQUALS", "FATARROW") and sc.text.startswith("=>", tok.start - sc.ob):
        # `xs.map(x => x * 2)`: a lambda of JavaScript, C#, Scala
        return lambda_hint(tok, sc)
    bound = _BINDING.match(_line_before(sc, tok)) if typ in ("EQUALS", "COLON") else None
    if bound is not None:
        # `const greeting = …`, `var n = …`: a binding of another language
        written = (bound.group(3) or "").strip()
        if typ == "COLON":  # `var n: int = 1` stopped at the `:`: the type follows it
            after = re.match(r"\s*([^=\n]{1,40}?)\s*=", sc.text[tok.end - sc.ob :])
            written = after.group(1) if after else ""
        typed = f": {written}" if written else ""
        return (
            f"`.flow` binds a name with `let`: `let {bound.group(2)}{typed} = …` (bound once; "
            f"there is no `{bound.group(1)}`)"
        )
    if (
        typ == "EQUALS"
        and prev is not None
        and prev.type == "NAME"
        and (prev.bol or _first_in_block(values))
    ):
        # `n = n + 1` on a line of its own, or first in a one-line block (`if c { n = n + 1 }`):
        # an assignment
        return (
            f"a `let` is bound once and cannot be assigned again; name the new value "
            f"(`let {prev.value}2 = …`), or fold a list with `reduce`"
        )
    if typ == "EQUALS" and sc.text.startswith("~", tok.end - sc.ob):
        return REGEX_OPERATOR_HINT  # `s =~ "re"` of Perl, Ruby
    if typ == "EQUALS" and "EQ" in expected:
        return diag.meant_at(tok.span, "=", "==")
    if tok.value == "if" and _python_conditional(tok, sc):
        # `[x if c else y]`: the `if` after a whole operand
        return (
            "a conditional expression is written `if c then x else y` "
            "(Python's `x if c else y` is not `.flow`)"
        )
    if tok.value == "if" and "NAME" in expected:
        # `1 + if c then a else b`: the conditional takes the lowest precedence
        return "a conditional inside an expression needs parentheses: `(if c then a else b)`"
    if tok.value in ("fail", "return") and "NAME" in expected and not tok.bol:
        # `if ok then 1 else fail "no"`, `1 => return 2`: a statement where a value goes
        return STATEMENT_AS_VALUE_HINTS[str(tok.value)]
    if typ in ("STRING", "EQUALS") and "COLON" in expected:
        return "object entries are written `key: value`"
    if typ == "NUMBER" and "DURATION" in expected:
        after = re.match(r"[ \t]+([A-Za-z]+)", sc.text[tok.end - sc.ob :])
        spelt = unit_word_hint(str(tok.value), after.group(1)) if after else None
        return spelt or f"a duration needs a unit: `{tok.value}s` (or `ms`, `m`, `h`)"
    if typ == "NAME" and {"STUB", "EXPECT", "REPLAY"} <= expected:
        return test_line_hint(tok, sc)
    clause = clause_synonym_hint(tok, expected)
    if clause is not None:  # `prompt "…"`, `returns T`: the clause of another framework
        return clause
    if typ == "NAME":
        # `stge s {`, `paralel map`, `retyr { … }`: a keyword that fits here, misspelt
        words = [w for w, term in KEYWORDS.items() if term in expected]
        hint = diag.meant_at(tok.span, str(tok.value), diag.closest(str(tok.value), words))
        if hint:
            return hint
        if KEYWORDS["task"] in expected:  # a word of its own in an agent block
            return AGENT_BLOCK_HINT
    if prev is None:
        return None
    if typ in ("MINUS", "MINUS_NL") and prev.type == "NAME":
        # `catch on [tool-error]`, `retry { on [rate-limit] }`: an error code in kebab case
        after = _CODE_TAIL.match(sc.text, tok.start - sc.ob + 1)
        if after is not None:
            code = f"{prev.value}_{after.group(1).replace('-', '_')}"
            if code in ERROR_CODES:
                hint = f"error codes are snake_case: did you mean `{code}`?"
                i = prev.start - sc.ob  # the code as written, `tool-error`
                at = sc.span_at(i, after.end(), prev.line, i - prev.column + 1)
                fix = diag.respelling(at, sc.text[i : after.end()], code)
                return FixedHint(hint, fix) if fix is not None else hint
    prev3 = values[-3] if values and len(values) > 2 and isinstance(values[-3], Tok) else None
    if (
        typ == "DOT"
        and prev.type == "NAME"
        and prev2 is not None
        and prev2.type == "AGENT"
        and prev3 is not None
        and prev3.type == "STUB"
    ):
        # `stub agent dev.main returns …`: a stub names the alias, not a member
        return (
            f"`stub agent` names an alias of `use agent` or `use team` (a team's alias stubs "
            f"every member: `stub agent {prev.value} returns …`); to answer the agents of one "
            f"stage, write `stub stage NAME returns …`"
        )
    if (
        typ == "FAILS"
        and prev2 is not None
        and prev2.type in ("ASK", "STEP")
        and prev3 is not None
        and prev3.type == "STUB"
    ):
        # `stub ask go fails "failed"`: only agents, stages and tools can be made to fail
        return (
            "only an agent, a stage's agents or a tool can be stubbed to fail "
            '(`stub agent|stage|tool NAME fails "code"`); '
            f"`stub {prev2.value}` gives answers: `stub {prev2.value} {prev.value} returns …`"
        )
    if prev.type == "STUB" and tok.value in ("judge", "verify", "filter"):
        # `stub judge real returns true`: judges are not stubbed by name
        return (
            "a judge is stubbed through the `let` that holds its result: "
            "`let kept = filter … where judge …`, then `stub step kept returns …`; "
            "`let v = verify { … }`, then `stub step v returns { passed: false, failures: […] }`"
        )
    if prev.type == "DEADLINE" and "DURATION" in expected:
        return (
            "the deadline is fixed when the flow is compiled: write a duration, e.g. `deadline 30m`"
        )
    if prev.type == "DURATION" and prev2 is not None and prev2.type == "DEADLINE":
        return "write the deadline as one duration: `1h30m`, not `1h + 30m`"
    if prev.type == "AGENT" and "LPAR" in expected:
        target = tok.value if typ == "NAME" else "target"
        return f"the agent's target goes in parentheses: `agent({target}) {{ … }}`"
    if prev.type == "RETRY" and typ in ("NUMBER", "NAME") and "LBRACE" in expected:
        # `retry 1`, `retry 3 times`: the attempts (and the codes) are the fields of an object
        n = tok.value if typ == "NUMBER" else "1"
        return (
            f"`retry` takes an object: `retry {{ attempts: {n} }}`, "
            f"or `retry {{ attempts: {n}, on: [timeout, transient] }}` to name the errors"
        )
    if typ == "COLON" and prev.type in _CLAUSE_EXAMPLE and in_agent_block:
        return f"agent clauses take no colon: `{_CLAUSE_EXAMPLE[prev.type]}`"
    if (
        typ == "NAME"
        and prev.type in ("AGENT", "TEAM")
        and prev2 is not None
        and prev2.type == "USE"
        and "STRING" in expected
    ):
        kind = prev.value
        return f'the {kind} name is a string: `use {kind} "{tok.value}" as {tok.value}`'
    if prev.type == "IMPORT" and typ in ("NAME", "STAR"):
        # `import Ticket from "…"`, `import * from "…"`: the names go in braces
        name = tok.value if typ == "NAME" else "Ticket"
        return f'name the types in braces: `import {{ {name} }} from "./file.flow"`'
    if (
        prev.type == "AS"
        and prev2 is not None
        and prev2.type == "NAME"
        and typ in ("RBRACE", "COMMA")
        and "NAME" in expected
    ):
        # `import { Ticket as }`: the name this file gives the type
        return f"write the name this file gives `{prev2.value}`: `{prev2.value} as My{prev2.value}`"
    if typ == "STRING" and prev.type == "RBRACE" and "FROM" in expected:
        return f"write `from` before the file: `}} from {tok.value.text!r}`".replace("'", '"')
    return None


#: the type written after a name with no `:` (``count int[]``), up to a separator
_TYPE_TEXT = re.compile(r"[^\s,(){}=/]+")
#: tokens that can start a type
_TYPE_START = frozenset({"NAME", "MAP", "STRING", "NUMBER", "TRUE", "FALSE", "NULL", "LBRACE"})


def _python_conditional(tok: Any, sc: Scanner) -> bool:
    """Whether the line after ``if`` reads as Python's ``x if c else y`` (an ``else`` and no
    ``then``)."""
    start = tok.end - sc.ob
    stop = sc.text.find("\n", start)
    rest = sc.text[start : stop if stop >= 0 else len(sc.text)]
    words = re.findall(r"[A-Za-z_]\w*", rest)
    return "else" in words and "then" not in words


def _missing_colon_hint(tok: Any, values: list[Any] | None, sc: Scanner) -> str | None:
    """``count int``: a field, a parameter or a `let` written without the `:` before its type
    (the parser could take a `:` and then a type).  The hint gives the fix with the user's own
    names: "fields are written `name: type`: `count: int`"."""
    if tok.type not in _TYPE_START or not values:
        return None
    top = [v for v in values[-3:] if isinstance(v, Tok)]
    if not top or top[-1] is not values[-1]:
        return None
    omittable = top[-1].type == "QMARK"
    name = top[-2] if omittable and len(top) > 1 else top[-1]
    if name.type != "NAME":
        return None
    k = tok.start - sc.ob
    m = _TYPE_TEXT.match(sc.text, k) if tok.type != "LBRACE" else None
    typ = m.group(0) if m is not None and len(m.group(0)) <= 40 else str(tok.value)
    if tok.type == "LBRACE":
        typ = "{ … }"
    elif tok.type == "STRING":
        typ = sc.text[k : tok.end - sc.ob] if tok.end - tok.start <= 40 else '"…"'
    fixed = f"{name.value}{'?' if omittable else ''}: {typ}"
    before = values[-2] if len(values) > 1 and not omittable else None
    if isinstance(before, Tok) and before.type == "LET" and name.value in _BINDING_WORDS:
        # `let mut n = 0`: Rust's mutable binding
        return (
            f"a `let` is bound once and cannot change (there is no `let {name.value}`): "
            f"`let {typ} = …`; a value that changes is a `reduce` or a `loop`'s state"
        )
    if isinstance(before, Tok) and before.type == "LET":
        return f"a `let`'s type follows a colon: `let {fixed} = …`"
    if len(values) > 3 and isinstance(values[-4], Tok) and values[-4].type == "AS":
        # `reduce xs as x, acc int = 0 { … }`, `loop up to 3 as i, s int = 0 { … }`
        return f"the state's type follows a colon: `{fixed} = …`"
    opener = sc.stack[-1].value if sc.stack else ""
    what = "parameters are" if opener == "(" else "fields are"
    return f"{what} written `name: type`: `{fixed}`"


#: the rest of an error code written in kebab case, after its first `-`
_CODE_TAIL = re.compile(r"([a-z]+(?:-[a-z]+)*)")

_ASK_THEN_FAILS = re.compile(r"^\s*stub\s+(ask|step)\b.*\bthen\s+fails\s*$")


def _ask_then_fails(tok: Any, sc: Scanner) -> bool:
    """True when ``tok`` follows ``then fails`` on a line ``stub ask|step …``."""
    k = getattr(tok, "start", -1) - sc.ob
    if not 0 <= k <= len(sc.text):
        return False
    line = sc.text[sc.text.rfind("\n", 0, k) + 1 : k]
    return _ASK_THEN_FAILS.match(line) is not None


#: a `loop`, `filter`, `ask` or `if` that starts a line's expression, then `catch` and its `{`
_CAUGHT_LOWEST = re.compile(
    r"(?:^|[=({,]|\breturn)\s*(loop|filter|ask|if)\b[^\n]*\bcatch(?:\s+on\s*\[[^\]]*\])?"
    r"(?:\s+as\s+[A-Za-z_][A-Za-z0-9_]*)?\s*$"
)


def _lowest_precedence_caught(sc: Scanner, tok: Any) -> str | None:
    """``loop`` (``filter``, ``ask``, ``if``) when the innermost open bracket is the ``{`` after
    a ``catch`` that follows such an expression on the same line: ``loop … { … } catch { 0 }``,
    where the lowest-precedence expression swallowed ``catch`` and its fallback became an
    object literal."""
    stack = [t for t in sc.stack if t is not tok]
    if not stack or stack[-1].value != "{":
        return None
    k = stack[-1].start - sc.ob
    if not 0 <= k <= len(sc.text):
        return None
    line = sc.text[sc.text.rfind("\n", 0, k) + 1 : k]
    m = _CAUGHT_LOWEST.search(line)
    return m.group(1) if m else None


#: a loop word that begins a line's statement or an expression on it (``for x in xs {``,
#: ``return for x in xs {``, ``let ys = while c {``)
_LOOP_HEAD = re.compile(
    r"(?:\s*|.*?(?:\breturn|\bthen|\belse|[=(\[,:])\s*)\b(" + "|".join(LOOP_WORDS) + r")\s"
)


#: binding words of other languages (`const x = …`, `var x = …`, `let mut x = …`)
_BINDING_WORDS = frozenset({"const", "var", "val", "mut", "auto", "my", "local"})

#: a line up to the `=` of a binding of another language: `const greeting`
_BINDING = re.compile(r"^\s*(const|var|val|auto|my|local)\s+([A-Za-z_]\w*)\s*(?::([^=]*))?$")


#: `n: text @length(2, 3)` before a `|`, `[` or `?` that goes on with the field's type
_FIELD_CONSTRAINED = re.compile(
    r"([A-Za-z_]\w*)\s*:\s*([^:@{}()]+?)\s*((?:@\w+\([^()\n]{0,60}\)\s*)+)$"
)


def _constraint_inside_type(sc: Scanner, tok: Any) -> tuple[str, str] | None:
    """``(message, hint)`` when ``tok`` (`|`, `[`, `?`) goes on with a field's type after a
    constraint (``n: text @length(2, 3) | int``, ``xs: text @length(1, 2)[]``,
    ``n: int @range(0, 3)?``): constraints are written after the whole field type; one on a
    union member or on list elements is not expressible, a named object type is."""
    if tok.value not in ("|", "[", "?"):
        return None
    m = _FIELD_CONSTRAINED.search(_line_before(sc, tok))
    if m is None:
        return None
    name, typ, written = m.group(1), m.group(2).strip(), " ".join(m.group(3).split())
    named = written[1:].split("(")[0]
    message = (
        f"a constraint (`@{named}`) is written after the whole type of a field, not inside "
        f"it: here `{tok.value}` goes on with the type of `{name}`"
    )
    rest = re.match(r"\s*((?:\|\s*[\w\[\]?.\"]+\s*)+|\[\s*\]\??|\?)", sc.text[tok.start - sc.ob :])
    more = " ".join(rest.group(1).split()) if rest else str(tok.value)
    boxed = " (its values are then objects: `{ value: … }`)"
    if tok.value == "?" or more.replace(" ", "") == "|null":
        optional = typ.endswith("?") or typ.replace(" ", "").endswith("|null")
        ending = "" if optional else ("?" if tok.value == "?" else " | null")
        hint = f"write `{name}: {typ}{ending} {written}`"
        return message, hint + f": the constraint holds when `{name}` has a value"
    if tok.value == "[":
        hint = f"`{name}: {typ}{more} {written}` says how many items the list has; " * (
            named == "length"
        )
        hint += (
            "a constraint on each element is not expressible on the list: name an object type "
            f"for the element, `type Item {{ value: {typ} {written} }}`, and write "
            f"`{name}: Item{more}`{boxed}"
        )
        return message, hint
    hint = (
        f"a constraint on one member of a union is not expressible: name an object type for "
        f"that member, `type Checked {{ value: {typ} {written} }}`, and write "
        f"`{name}: Checked {more}`{boxed}; a constraint every member takes is written after the "
        f"whole union (`{name}: {typ} {more} {written}`)"
    )
    return message, hint


#: ``NAME: TYPE`` just before a `=`, the field of an object type given a default
_FIELD_BEFORE_EQUALS = re.compile(r"(?:^|[{,])\s*(\w+)\s*:\s*([\w\[\]?<>\" |]+?)\s*$")


def _field_default_hint(sc: Scanner, tok: Any) -> str | None:
    """The hint of ``input { rounds: int = 3 }`` / ``type T { n: int = 3 }``: a field has no
    default value; an optional field read with ``??`` is how one is written.  None when the
    `=` does not follow a ``NAME: TYPE`` on its line."""
    before = _line_before(sc, tok)
    m = _FIELD_BEFORE_EQUALS.search(before)
    if m is None:
        return None
    name, typ = m.group(1), m.group(2).strip()
    after = re.match(r"\s*([^,}\n]+)", sc.text[tok.start - sc.ob + 1 :])
    value = after.group(1).strip() if after else "…"
    optional = typ if typ.endswith("?") else f"{typ}?"
    reader = "input" if re.search(r"\binput\s*\{", before) else "x"
    return (
        f"a field has no default value: make it optional, `{name}: {optional}`, and give the "
        f"default where it is read, `{reader}.{name} ?? {value}`"
    )


def _line_before(sc: Scanner, tok: Any) -> str:
    """The text of ``tok``'s line before it."""
    k = tok.start - sc.ob
    if not 0 <= k <= len(sc.text):
        return ""
    return sc.text[sc.text.rfind("\n", 0, k) + 1 : k]


def _loop_word(
    sc: Scanner, tok: Any = None, values: list[Any] | None = None
) -> tuple[str, Span] | None:
    """``(for, its span)`` (``while``, …) when the innermost open bracket is a ``{`` on a line
    whose statement or an expression on it starts with that word (``return for x in xs {``): ``for x in xs {`` parsed as expressions and an object literal
    (the parse fails inside the braces, often lines below the ``for``) — or, when the parse
    stopped at the ``}`` closing that ``{`` (``for x in xs { x }``), ``tok``'s line, or that of
    the ``{`` it closes (the last one on the driver's value stack ``values``)."""
    if isinstance(tok, Tok):
        # the word just before the token the parser could not take (`[for x in xs]`, `while
        # y < 3 {` read as names), or the `{` of a one-line loop (`for x in xs { }`)
        found = _loop_word_before(sc, tok)
        if found is None and tok.type == "LBRACE":
            found = _loop_word_at(sc, tok)
        if found is not None:
            return found
    opened = [o for o in sc.stack if o is not tok]  # `print(x)` in the body: the `{` before
    opener = opened[-1] if opened else None
    if getattr(tok, "type", None) == "RBRACE":
        found = _loop_word(sc, None) if opener is not None and opener.value == "{" else None
        if found is not None:
            return found
        opened = [v for v in values or () if isinstance(v, Tok) and v.type == "LBRACE"]
        if opened:
            found = _loop_word_at(sc, opened[-1])
            if found is not None:
                return found
        opener = tok
    return _loop_word_at(sc, opener)


#: a loop word of another language just before a token, where a statement or a value starts
_LOOP_WORD_BEFORE = re.compile(r"(?:^|[\s=(\[,:])(" + "|".join(LOOP_WORDS) + r")\s+$")


def _loop_word_before(sc: Scanner, tok: Tok) -> tuple[str, Span] | None:
    """``(for, its span)`` when the word just before ``tok`` on its line is a loop word."""
    k = tok.start - sc.ob
    if not 0 <= k <= len(sc.text):
        return None
    line = sc.text[sc.text.rfind("\n", 0, k) + 1 : k]
    m = _LOOP_WORD_BEFORE.search(line)
    if m is None:
        return None
    back = len(line) - m.start(1)
    start, column = tok.start - back, tok.column - back
    word = m.group(1)
    return word, Span(
        tok.file, tok.line, column, tok.line, column + len(word), start, start + len(word)
    )


def _loop_word_at(sc: Scanner, opener: Any) -> tuple[str, Span] | None:
    """:func:`_loop_word` of the bracket ``opener`` (a ``{``, or the ``}`` on a loop's line)."""
    if opener is None or opener.value not in ("{", "}"):
        return None
    k = opener.start - sc.ob
    if not 0 <= k <= len(sc.text):
        return None
    line = sc.text[sc.text.rfind("\n", 0, k) + 1 : k]
    head = _LOOP_HEAD.match(line)
    if head is None:
        return None
    word = head.group(1)
    back = len(line) - head.start(1)  # from the word's start to the `{`
    start, column = opener.start - back, opener.column - back
    return word, Span(
        opener.file, opener.line, column, opener.line, column + len(word), start, start + len(word)
    )


def unexpected(
    tok: Any,
    expected: set[str],
    sc: Scanner,
    values: list[Any] | None = None,
    *,
    in_agent_block: bool = False,
    type_after_colon: bool = False,
) -> SynErr:
    """The syntax error for ``tok`` (a :class:`Tok`, or the driver's end marker of type
    ``$END``) read by scanner ``sc`` where the parser can take only the terminals ``expected``
    (``$END`` when it could accept): "expected …, found …" plus notes and a hint.  ``values``
    is the driver's value stack (the tokens shifted before ``tok`` are on its top);
    ``in_agent_block`` tells whether the parser is inside ``agent(…) { … }``;
    ``type_after_colon`` whether a `:` fits here and a type would follow it (``count int``)."""
    found = describe(tok)
    words = _expected_words(expected)
    if tok.type == "EQUALS" and "EQ" in expected and "an operator" not in words:
        # `where e.kind = "file"`: the expression could go on with an operator (`==`)
        words.insert(0, "an operator")
    if words:
        msg = f"expected {_join_or(words)}, found {found}"
    else:
        msg = f"unexpected {describe(tok, article=False)}"
    notes: list[tuple[str, Span]] = []
    stack = sc.stack
    if stack and stack[-1] is not tok and len(words) <= 4:
        opener = stack[-1]
        closer = f"`{OPENERS[str(opener.value)]}`"
        if closer in words:
            # "expected `,` or `)` to close the `(` opened on line 3, found `return`"
            words = [w for w in words if w != closer] + [closer]
            msg = f"expected {_join_or(words)} to close {sc.opened(opener)}, found {found}"
            notes.append((f"{sc.opened(opener, at=False)} opened here", opener.span))
    if sc.module:
        msg = msg.replace("end of the text", "end of the file")
    elif sc.stop is not None and tok.type != "$END":
        # inside `${…}` / `{{ … }}` the text ends at the closing brace
        msg = msg.replace("the end of the text", "`}`" if sc.stop == "}" else "`}}`")
    if tok.type == "$END" or not isinstance(tok, Tok):
        last = sc.last
        if sc.stopped_at is not None:
            k = sc.stopped_at
            closer = "}" if sc.stop == "}" else "}}"
            span = sc.span_at(k, k + len(closer), sc.line, sc.ls)
            msg = msg.replace("the end of the text", f"`{closer}`")
            return SynErr(msg, span)
        if last is not None:
            span = Span(
                last.file,
                last.end_line,
                last.end_column,
                last.end_line,
                last.end_column,
                last.end,
                last.end,
            )
        else:
            span = sc.span_at(sc.pos, sc.pos, sc.line, sc.ls)
        return SynErr(msg, span)
    if tok.value == "tolerate" and _in_parallel_head(values):
        # `parallel tolerate 1 { … }`, `parallel limit 2 tolerate 1 { … }`
        return SynErr(
            "a `parallel` block has no `tolerate`",
            tok.span,
            resume=tok.end - sc.ob,
            depth=len(sc.stack),
            hint=_parallel_tolerate_hint(sc, tok),
        )
    in_fn = fn_error(tok, expected, sc, values) or slip_error(tok, expected, sc, values, found)
    if in_fn is not None:
        return SynErr(
            in_fn[0], in_fn[1], resume=tok.end - sc.ob, depth=len(sc.stack), hint=in_fn[2]
        )
    if tok.type == "AT" and "AT" not in expected:
        # `extern tool f(x: text) -> int @range(0, 10)`, `type Score = int @range(0, 10)`
        named = word_at(sc.text, tok.end - sc.ob)
        m = re.match(r"@\w+\([^()\n]{0,60}\)", sc.text[tok.start - sc.ob :])
        written = m.group(0) if m else f"@{named}(…)"
        typed = re.search(r"([\w\[\]?]+)\s*$", _line_before(sc, tok))
        base = typed.group(1) if typed else "int"
        return SynErr(
            f"a constraint (`@{named}`) is written after the type of a field of an object type, "
            "not here",
            tok.span,
            resume=tok.end - sc.ob,
            depth=len(sc.stack),
            hint=(
                f"constrain a field: `type Checked {{ value: {base} {written} }}` (a tool "
                "returning that object declares `-> Checked`); a tool's result, a parameter or "
                f"a `type` alias cannot carry a constraint: declare the bare type (`{base}`) and "
                'check the value where it is used (`require … else fail "…"`)'
            ),
            notes=notes,
        )
    inside = _constraint_inside_type(sc, tok)
    if inside is not None:
        return SynErr(
            inside[0],
            tok.span,
            resume=tok.end - sc.ob,
            depth=len(sc.stack),
            hint=inside[1],
            notes=notes,
        )
    dangling = (
        None
        if tok.type in _EXPR_START
        else dangling_operator_error(tok, expected, values, sc, found, notes)
    )
    if dangling is not None:  # `return len(s) +` then `}`: the mistake is the operator
        return dangling
    bound = bound_keyword(tok, sc, values, msg, notes)
    if bound is not None:  # `let filter = 1` … `filter + 1`: the mistake is the name
        return bound
    operand = _operand_word(sc, tok)
    if operand is not None:  # `1 + loop up to 3 as r, …`: the mistake is the unbracketed `loop`
        return operand_word_error(
            operand[0], operand[1], (msg, tok.span), resume=tok.end - sc.ob, depth=len(sc.stack)
        )
    hint = _syntax_hint(tok, expected, values, sc, in_agent_block)
    if hint is None and type_after_colon:
        hint = _missing_colon_hint(tok, values, sc)
    resume = tok.end - sc.ob
    if tok.bol and tok.value in TOP_LEVEL and not isinstance(tok.value, ast.Node):
        resume = tok.start - sc.ob
    block_limit = _block_limit_without_number(values)
    if block_limit is not None:
        word, brace_span = block_limit
        return SynErr(
            "`limit` needs a number: how many branches of the `parallel` block run at once",
            word.span,
            resume=resume,
            depth=len(sc.stack),
            hint="write `parallel limit 2 { … }`, or drop `limit` (every branch starts at once)",
            notes=[
                ("this `{` was read as an object, the value of `limit`", brace_span),
                (f"the parser stopped here: {msg}", tok.span),
            ],
        )
    limit = _limit_without_number(sc, values)
    if limit is not None:
        word, brace = limit
        return SynErr(
            "`limit` needs a number: how many items the `parallel map` runs at once",
            word.span,
            resume=resume,
            depth=len(sc.stack),
            hint="write `limit 4 { … }`, or drop `limit` (the default is 4)",
            notes=[
                ("this `{` was read as an object, the value of `limit`", brace.span),
                (f"the parser stopped here: {msg}", tok.span),
            ],
        )
    loop = _loop_word(sc, tok, values)
    if loop is not None and hint == loop_hint(loop[0]):
        # the mistake is the loop, not the token the parse stopped at inside its braces
        return SynErr(
            f"there is no `{loop[0]}` loop in `.flow`",
            loop[1],
            resume=resume,
            depth=len(sc.stack),
            hint=f"iterate with a value: {LOOP_WAYS}",
            notes=[*notes, (f"the parser stopped here: {msg}", tok.span)],
        )
    elif_at = elif_word(sc, tok)
    if elif_at is not None:
        # `} elif c {`: `elif` read as a name, its `{` as an object
        return SynErr(
            f"there is no `{elif_at[0]}` in `.flow`",
            elif_at[1],
            resume=resume,
            depth=len(sc.stack),
            hint=f"write `}} else if {elif_at[2]} {{ … }}`",
            notes=[(f"the parser stopped here: {msg}", tok.span)],
            fix=elif_fix(sc.text, sc.ob, elif_at[0], elif_at[1]),
        )
    return SynErr(
        msg, tok.span, resume=resume, depth=len(sc.stack), hint=hint, notes=notes, fix=fix_of(hint)
    )


def _operand_word(sc: Scanner, tok: Tok) -> tuple[str, Span] | None:
    """``filter``/``loop``/``ask`` written as an operand before ``tok`` on its line (``map
    filter xs where …``, ``require ask "go" …``), with its span, or None."""
    k = tok.start - sc.ob
    if not 0 <= k <= len(sc.text):
        return None
    ls = sc.text.rfind("\n", 0, k) + 1
    end = sc.text.find("\n", k)
    found = operand_word_in_line(sc.text[ls : len(sc.text) if end < 0 else end])
    if found is None or ls + found[1] >= k:
        return None
    word, at = found
    return word, sc.span_at(ls + at, ls + at + len(word), tok.span.line, ls)


def _in_parallel_head(values: list[Any] | None) -> bool:
    """Whether the parser is in the head of a ``parallel`` block, right after ``parallel`` or
    its ``limit N`` (``values``: the driver's value stack)."""
    vals = values or []
    kinds = [getattr(v, "type", None) for v in vals[-3:]]
    return kinds[-1:] == ["PARALLEL"] or (kinds[:2] == ["PARALLEL", "LIMIT"] and len(kinds) == 3)


def _parallel_tolerate_hint(sc: Scanner, tok: Any) -> str:
    """What to write instead of ``tolerate`` on a ``parallel`` block: a ``catch`` in the branch
    whose failure is to be a value (the first branch's name when the block's text shows it)."""
    m = re.search(r"\{\s*([A-Za-z_]\w*)\s*:\s*([^,\n}]{1,40})", sc.text[tok.end - sc.ob :])
    branch = f"{m.group(1)}: {m.group(2).strip()}" if m else "a: f(x)"
    return (
        f"keep a branch's failure as a value in that branch, with `catch`: "
        f"`parallel {{ {branch} catch {{ fallback }}, … }}` (`catch as err {{ … }}` to read the "
        "error); the other branches still run. `tolerate N` is an option of `map`: "
        "`parallel map xs as x tolerate 1 { … }`"
    )


def _block_limit_without_number(values: list[Any] | None) -> tuple[Tok, Span] | None:
    """``(limit, span of {)`` for ``parallel limit { … }``: the branches were taken for an
    object literal, the value of `limit` — whether the parse failed inside them or after them
    (where the branches' `{` was expected). ``values`` is the driver's value stack."""
    vals = values or []
    for i in range(len(vals) - 1, 1, -1):
        v = vals[i]
        if isinstance(v, Tok) and v.type == "LBRACE":
            brace = v.span
        elif isinstance(v, ast.ObjectLit) and i == len(vals) - 1:
            s = v.span
            brace = Span(s.file, s.line, s.column, s.line, s.column + 1, s.start, s.start + 1)
        else:
            continue
        word, head = vals[i - 1], vals[i - 2]
        if isinstance(word, Tok) and word.type == "LIMIT":
            if isinstance(head, Tok) and head.type == "PARALLEL":
                return word, brace
        return None
    return None


def _limit_without_number(sc: Scanner, values: list[Any] | None) -> tuple[Tok, Tok] | None:
    """``(limit, {)`` when the parse failed inside a `{` right after the `limit` of a map
    (``map xs as x limit { … }``): the body was taken for an object literal, the value of
    `limit`, and the error surfaced inside it — often lines after the mistake. ``values`` is
    the driver's value stack: the unfinished object is its top part."""
    for i in range(len(values or ()) - 1, 0, -1):
        v = values[i]  # type: ignore[index]
        if isinstance(v, Tok) and v.type == "LBRACE":
            word = values[i - 1]  # type: ignore[index]
            if isinstance(word, Tok) and word.type == "LIMIT":
                return word, v
            return None
    return None
