"""The fast path of :func:`agentflow.grammar.parser.parse_module`: a recursive-descent parser
of :file:`flow.lark` over flat token arrays (docs/spec/LANGUAGE.md §1–8).

The LALR path (:mod:`.scanner` → :mod:`.lalr` → :mod:`.builder`) makes a token object per token
and a callback call per reduction; this module scans the whole text once into parallel lists
(kind, value, positions) and builds the AST nodes directly while descending the grammar, which
parses a clean file in about 60 % of the time.  It has no error reporting: at the first thing it
does not take — a syntax error, a builder check that would fail (a comma or line break missing
between fields, chained comparisons, too many operators), a lexical error, nesting too deep —
it gives up, and :func:`agentflow.grammar.parser.parse_module` parses the rest the LALR way
(from where :func:`parse_fast` says), so every diagnostic is the LALR path's, byte for byte.
Bytes that are not UTF-8 never reach it.

The AST is the one the LALR path builds (``tests/grammar/test_descent.py`` compares them node by
node over the examples, the test corpora and the benchmark's programs).  The rules it mirrors:

* **The newline rule** (§1): ``(``, ``[``, ``-`` and ``not`` that start a line outside ``( )``
  and ``[ ]`` are ``LPAR_NL``/``LSQB_NL``/``MINUS_NL``/``NOT_NL``, which may begin an expression
  but never continue one (computed by the tokenizer, as the scanner does).
* **Contextual keywords**: the scanner emits a keyword only where the LALR state really shifts
  it, else a name.  Here: a keyword followed by ``:`` or after ``.`` is a name; a reserved word
  (``core.vocabulary.RESERVED_WORDS``) is always the keyword; a top-level keyword at the start of
  a line outside brackets is always the keyword; any other keyword is the keyword where the
  descent accepts it (each decision point tries its keywords before a name) and a name elsewhere.
* String literals are scanned by :class:`~agentflow.grammar.scanner.Scanner`'s own methods, so
  their nodes (interpolations included) are the scanner's.

This module holds the tokenizer and the items, types and statements; the expressions are in
:mod:`.descent_exprs`.
"""

from __future__ import annotations

import re
from typing import Any

from agentflow.core.spans import Span
from agentflow.core.vocabulary import MAX_NESTING, STATEMENT_WORDS
from agentflow.core.vocabulary import duration_ms as _duration_ms
from agentflow.grammar import ast
from agentflow.grammar.builder_shared import _budget, _number
from agentflow.grammar.descent_exprs import ExprDescent, _Bail, bail, plain_text
from agentflow.grammar.scanner import (
    KEYWORDS,
    OPENERS,
    OPS,
    TOP_LEVEL,
    Driver,
    Scanner,
    SynErr,
    starts_declaration,
)
from agentflow.grammar.tokens import _NL_VARIANT, _TOKEN_RE, MATCH_AFTER, STRONG, brace_refs

__all__ = ["Descent", "parse_clean", "parse_fast", "tokenize"]

#: the terminals of the words that start a statement
_STMT_START = frozenset(KEYWORDS[w] for w in STATEMENT_WORDS)
_LITERAL_TYPES = {"TRUE": True, "FALSE": False, "NULL": None}


def parse_clean(text: str, file: str, driver: Driver) -> list[ast.Item] | None:
    """The items of ``text`` (a whole `.flow` file named ``file``) when it parses without any
    diagnostic, exactly as the LALR path builds them; None when the LALR path must parse it
    (a syntax error, or anything this parser does not take).  ``driver`` parses the ``${…}``
    holes that are not a plain name or field chain (the scanner's string methods call it)."""
    items, restart = parse_fast(text, file, driver)
    return items if restart < 0 else None


def parse_fast(text: str, file: str, driver: Driver) -> tuple[list[ast.Item], int]:
    """``(items, -1)`` when the whole of ``text`` parses (as :func:`parse_clean`); else
    ``(kept, restart)``: the LALR path must parse ``text[restart:]`` (a run of its parser started
    there) and ``kept``, the items before ``restart``, are exactly the ones it would have built
    parsing from the start.

    ``restart`` is the end of the last item but one before the failure: the LALR parser reduces
    an item only on the next token, so an error at the first token after an item is described
    from inside that item, which its run must therefore parse again.  It is 0 (nothing kept)
    when the failure is in the first two items, is lexical (the tokenizer runs first), or the
    item the LALR path starts with does not start a line (a scanner started mid-line would see
    a line start)."""
    try:
        toks = tokenize(text, file, driver)
    except (_Bail, SynErr, RecursionError):
        return [], 0
    d = Descent(file, *toks)
    try:
        return d.module(), -1
    except (_Bail, SynErr, RecursionError):
        pass
    done = d.items
    # `done[-1]` is parsed again by the LALR path, from the end of `done[-2]`
    if len(done) < 2 or d.firsts[len(done) - 1] not in d.hard:
        return [], 0
    return done[:-1], done[-2].span.end


# ---------------------------------------------------------------------------------------------
# The tokenizer: the scanner's parse mode (module scanner), into parallel lists


def _fast_pattern() -> re.Pattern[str]:
    """The scanner's token pattern (:data:`~agentflow.grammar.tokens._TOKEN_RE`) with more
    alternatives that save a step per token — a word followed by ``:`` (``wcolon``: a name
    wherever it parses), a whole block comment, a whole plain one-line string — and one for
    any other character (``bad``), so that ``finditer`` never skips text."""
    pattern = _TOKEN_RE.pattern
    edits = (
        (
            "(?P<word>[A-Za-z_][A-Za-z0-9_]*)",
            "(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P<wcolon>(?=[ \\t]*:(?!:)))?",
        ),
        ("(?P<block>/\\*)", "(?P<block>/\\*(?s:.*?)\\*/)\n  | (?P<badblock>/\\*)"),
        ('(?P<str>\\")', '(?P<pstr>"[^"\\\\$\\n]*")\n  | (?P<str>\\")'),
        ("(?P<eof>\\Z)", "(?P<eof>\\Z)\n  | (?P<bad>(?s:.))"),
        (
            "(?P<op>\\.\\.|\\?\\?|==|=>|!=|<=|>=|->|[-+*/%<>=.,:(){}\\[\\]|?@])",
            "(?P<open>[({\\[])\n  | (?P<close>[)}\\]])\n"
            "  | (?P<op>\\.\\.|\\?\\?|==|=>|!=|<=|>=|->|[-+*/%<>=.,:|?@])",
        ),
    )
    for old, new in edits:
        if old not in pattern:  # pragma: no cover - the scanner's pattern changed
            raise RuntimeError(f"grammar/descent.py: the scanner's token pattern lost {old}")
        pattern = pattern.replace(old, new)
    # the most frequent tokens first (the engine tries the alternatives in turn); only
    # alternatives that start with different characters change places, so the first that
    # matches at any position is the same one
    head, rest = pattern.split("(?:\n", 1)
    body, tail = rest.rsplit("\n   )", 1)
    alternatives = {
        a.strip().split(">", 1)[0].removeprefix("(?P<"): a.strip() for a in body.split("\n  | ")
    }
    if set(alternatives) != set(_ORDER):  # pragma: no cover - the scanner's pattern changed
        raise RuntimeError("grammar/descent.py: the scanner's token pattern has other tokens")
    body = "\n  | ".join(alternatives[k] for k in _ORDER)
    return re.compile(f"{head}(?:\n    {body}\n   ){tail}", _TOKEN_RE.flags)


#: the order of the fast pattern's alternatives: words, brackets, line ends and operators (the
#: most frequent tokens) first; `//`, `///` and `/*` before the operator `/`, the number forms
#: and the string forms in the scanner's order
_ORDER: tuple[str, ...] = ("word", "open", "close", "nl", "doc", "comment", "block", "badblock")
_ORDER += ("op", "dur", "num", "badnum", "str3", "pstr", "str", "eof", "bad")


_FAST_RE = _fast_pattern()
#: the group numbers the tokenizer dispatches on
_GROUPS = tuple(
    _FAST_RE.groupindex[k]
    for k in ("word", "wcolon", "op", "nl", "pstr", "num", "dur", "str", "str3", "doc")
    + ("comment", "block", "open", "close")
)
_G_EOF = _FAST_RE.groupindex["eof"]


def tokenize(
    text: str, file: str, driver: Driver
) -> tuple[list[str], list[Any], list[int], list[tuple[int, int]], dict[int, str], set[int]]:
    """``(kinds, values, starts, lines, docs, hard)``: per token its terminal, its value (the
    text, so the token ends ``len(value)`` after its start on its line; an ``ast.StringLit``
    for a string, whose span is the token's), its offset in ``text`` and ``(line, offset of
    that line's start)`` of its line (one tuple shared by the tokens of a line: the span's
    fields are computed only for the tokens that become a span,
    :meth:`~agentflow.grammar.descent_exprs.ExprDescent.span`); the ``///`` text before a
    token, by index; the indices of the top-level keywords that start a line outside brackets
    (never a name).  A sentinel ``$END`` token ends the lists.  Raises
    :class:`~agentflow.grammar.descent_exprs._Bail` at what the scanner reports."""
    kinds: list[str] = []
    values: list[Any] = []
    starts: list[int] = []
    lines: list[tuple[int, int]] = []
    docs: dict[int, str] = {}
    hard: set[int] = set()
    kpush = kinds.append
    vpush = values.append
    ipush = starts.append
    lpush = lines.append
    n = len(text)
    line = 1
    ls = 0
    lp = (line, ls)
    stack: list[str] = []
    bol = True
    doc: list[str] | None = None
    finditer = _FAST_RE.finditer
    keywords = KEYWORDS
    ops = OPS
    match_after = MATCH_AFTER.match
    top_level = TOP_LEVEL
    strong = STRONG
    openers = OPENERS
    (g_word, g_wcolon, g_op, g_nl, g_pstr, g_num, g_dur, g_str, g_str3, g_doc) = _GROUPS[:10]
    g_comment, g_block, g_open, g_close = _GROUPS[10:]
    g_eof = _G_EOF
    sc: Scanner | None = None
    pos = 0
    while pos >= 0:
        restart = -1
        for m in finditer(text, pos):
            g = m.lastindex
            if g == g_word or g == g_wcolon:
                i, j = m.span(g_word)
                value: Any = text[i:j]
                typ = keywords.get(value)
                if typ is None:
                    typ = "NAME"
                else:
                    if bol:
                        if (
                            stack
                            and (value in strong or value == "test")  # else it never is
                            and starts_declaration(value, text, j, n)
                        ):
                            bail()
                        if typ == "NOT" and (not stack or stack[-1] == "}"):
                            typ = "NOT_NL"
                    if bol and not stack and value in top_level:
                        hard.add(len(kinds))
                    elif g == g_wcolon or (kinds and kinds[-1] == "DOT"):
                        typ = "NAME"
                    elif typ == "SLEEP" and text.startswith("(", j):
                        typ = "NAME"  # `sleep(`: a call of a tool named sleep
                    elif typ == "MATCH" and not match_after(text, j):
                        typ = "NAME"  # `match(s, re)`, `match + 1`: the scanner's rule
            elif g == g_op:
                i, j = m.span(g)
                value = text[i:j]
                typ = ops[value]
                if bol and typ == "MINUS" and (not stack or stack[-1] == "}"):
                    typ = "MINUS_NL"
            elif g == g_open:
                i, j = m.span(g)
                value = text[i:j]
                typ = ops[value]
                if bol and value != "{" and (not stack or stack[-1] == "}"):
                    typ = _NL_VARIANT[typ]
                if len(stack) >= MAX_NESTING:
                    bail()
                stack.append(openers[value])  # the closer it expects
            elif g == g_close:
                i, j = m.span(g)
                value = text[i:j]
                typ = ops[value]
                if stack and stack[-1] == value:
                    stack.pop()
                else:
                    bail()
            elif g == g_nl:
                line += 1
                ls = m.end()
                lp = (line, ls)
                bol = True
                continue
            elif g == g_pstr:
                i, j = m.span(g)
                s = text[i + 1 : j - 1]
                kpush("STRING")
                lit = ast.StringLit(
                    Span(file, line, i - ls + 1, line, j - ls + 1, i, j), [s] if s else []
                )
                if "{" in s:
                    lit.braces = brace_refs(text, i + 1, j - 1, file, line, ls, 0)
                vpush(lit)
                ipush(i)
                lpush(lp)
                if doc is not None:
                    docs[len(kinds) - 1] = "\n".join(doc)
                    doc = None
                bol = False
                continue
            elif g == g_num or g == g_dur:
                i, j = m.span(g)
                if j - i > 100:
                    bail()
                value = text[i:j]
                typ = "NUMBER" if g == g_num else "DURATION"
            elif g == g_str or g == g_str3:
                i = m.start(g)
                if sc is None:
                    sc = Scanner(text, 0, n, file, line, ls, 0, module=True, driver=driver)
                sc.line, sc.ls = line, ls
                if g == g_str:
                    lit, j = sc.scan_string(i, line, ls)
                else:
                    lit, j = sc.scan_triple(i, line, ls)
                if lit.span.start != i or lit.span.end != j:  # pragma: no cover - never so
                    bail()  # the token's span is the string's (ExprDescent.span)
                kpush("STRING")
                vpush(lit)
                ipush(i)
                lpush(lp)
                line, ls = sc.line, sc.ls
                lp = (line, ls)
                if doc is not None:
                    docs[len(kinds) - 1] = "\n".join(doc)
                    doc = None
                bol = False
                restart = j  # go on after the string: a new pass of the pattern
                break
            elif g == g_doc:
                i, j = m.span(g)
                d = text[i + 3 : j]
                if d.startswith(" "):
                    d = d[1:]
                if doc is None:
                    doc = [d.rstrip()]
                else:
                    doc.append(d.rstrip())
                continue
            elif g == g_comment:
                continue
            elif g == g_block:
                i, j = m.span(g)
                nl = text.count("\n", i, j)
                if nl:
                    line += nl
                    ls = text.rfind("\n", i, j) + 1
                    lp = (line, ls)
                continue
            elif g == g_eof:
                break
            else:  # badnum, an unterminated block comment, an unexpected character
                bail()
            kpush(typ)
            vpush(value)
            ipush(i)
            lpush(lp)
            if doc is not None:
                docs[len(kinds) - 1] = "\n".join(doc)
                doc = None
            bol = False
        pos = restart
    if stack:
        bail()
    # the end marker: no rule takes it
    kinds.append("$END")
    values.append("")
    starts.append(n)
    lines.append(lp)
    return kinds, values, starts, lines, docs, hard


# ---------------------------------------------------------------------------------------------
# The descent: items, types and statements (expressions: .descent_exprs)


class Descent(ExprDescent):
    """The whole descent: :class:`~agentflow.grammar.descent_exprs.ExprDescent` and the items,
    types and statements."""

    __slots__ = ("items", "firsts")

    def __init__(self, *lists: Any) -> None:
        super().__init__(*lists)
        #: the items parsed so far, and the index of each one's first token
        self.items: list[ast.Item] = []
        self.firsts: list[int] = []

    def module(self) -> list[ast.Item]:
        """Every item; :attr:`items` has those complete when it raises, :attr:`firsts` their first
        tokens."""
        items = self.items
        firsts = self.firsts
        K = self.K
        while K[self.p] != "$END":
            firsts.append(self.p)
            items.append(self.item())
        return items

    def item(self) -> ast.Item:
        p = self.p
        k = self.K[p]
        self.p = p + 1
        if k == "STAGE":
            name = self.ident()
            returns = None
            if self.K[self.p] == "ARROW":
                self.p += 1
                returns = self.type()
            body = self.block()
            return ast.StageDecl(self.tn(p, body), name, returns, body, doc=self.docs.get(p))
        if k == "TYPE":
            name = self.ident()
            if self.K[self.p] == "EQUALS":
                self.p += 1
                alias = self.type()
                return ast.TypeDecl(self.tn(p, alias), name, None, alias, doc=self.docs.get(p))
            fields = self.object_type()
            return ast.TypeDecl(self.tn(p, fields), name, fields, None, doc=self.docs.get(p))
        if k == "EXTERN":
            return self.extern(p)
        if k == "USE":
            kw = self.p
            if self.K[kw] not in ("AGENT", "TEAM"):
                bail()
            self.p = kw + 1
            target = self.take("STRING")
            self.take("AS")
            as_name = self.name()
            return ast.UseDecl(
                self.tt(p, as_name),
                self.V[kw],
                plain_text(self.V[target]),
                self.span(target),
                ast.Ident(self.span(as_name), self.V[as_name]),
            )
        if k == "INPUT":
            t = self.type()
            return ast.InputDecl(self.tn(p, t), t)
        if k == "OUTPUT":
            t = self.type()
            return ast.OutputDecl(self.tn(p, t), t)
        if k == "FLOW":
            name = self.ident()
            q = self.p
            if self.K[q] == "STRING":
                self.p = q + 1
                return ast.FlowHeader(self.tt(p, q), name, plain_text(self.V[q]))
            return ast.FlowHeader(self.tt(p, q - 1), name, None)
        if k == "DEADLINE":
            d = self.take("DURATION")
            v = self.V[d]
            return ast.DeadlineDecl(
                self.tt(p, d), ast.DurationLit(self.span(d), _duration_ms(v), v)
            )
        if k == "BUDGET":
            obj = self.object()
            return ast.BudgetDecl(self.tn(p, obj), _budget(obj))
        if k == "TEST":
            return self.test_decl(p)
        if k == "EVAL":
            return self.eval_decl(p)
        if k == "IMPORT":
            return self.import_decl(p)
        if k == "FN":
            return self.fn_decl(p)
        bail()

    def fn_decl(self, p: int) -> ast.FnDecl:
        name = self.ident()
        params = self.params()
        self.take("ARROW")
        returns = self.type()
        self.take("EQUALS")
        body = self.expr()
        return ast.FnDecl(self.tn(p, body), name, params, returns, body, doc=self.docs.get(p))

    def params(self) -> list[ast.Param]:
        """``( p: T, … )``, a trailing comma allowed."""
        self.take("LPAR")
        params: list[ast.Param] = []
        if self.K[self.p] != "RPAR":
            params.append(self.param())
            K = self.K
            while K[self.p] == "COMMA":
                self.p += 1
                if K[self.p] == "COMMA":
                    bail()  # a repeated comma: the LALR path reports it
                if K[self.p] != "RPAR":
                    params.append(self.param())
        self.take("RPAR")
        return params

    def import_decl(self, p: int) -> ast.ImportDecl:
        self.take("LBRACE")
        K = self.K
        names = [self.ident()]
        aliases: list[ast.Ident | None] = [self._import_alias()]
        while K[self.p] == "COMMA":
            self.p += 1
            if K[self.p] == "RBRACE":
                break
            if K[self.p] == "COMMA":
                bail()
            names.append(self.ident())
            aliases.append(self._import_alias())
        self.take("RBRACE")
        self.take("FROM")
        s = self.take("STRING")
        if all(a is None for a in aliases):
            aliases = []
        return ast.ImportDecl(self.tt(p, s), names, plain_text(self.V[s]), self.span(s), aliases)

    def _import_alias(self) -> ast.Ident | None:
        """The ``as Local`` after an imported name, if any."""
        if self.K[self.p] != "AS":
            return None
        self.p += 1
        return self.ident()

    # -- `test` and `eval` blocks ---------------------------------------------------------------

    def test_decl(self, p: int) -> ast.TestDecl:
        n = self.take("STRING")
        name = plain_text(self.V[n])
        cases: ast.Expr | None = None
        case: ast.Ident | None = None
        if self.K[self.p] == "MAP":
            self.p += 1
            cases = self.opexpr()
            self.take("AS")
            case = self.ident()
        self.take("LBRACE")
        K = self.K
        body: list[ast.TestInput | ast.TestStub | ast.TestExpect | ast.TestReplay] = []
        while K[self.p] != "RBRACE":
            body.append(self.test_item())
        c = self.p
        self.p = c + 1
        if cases is None:
            return ast.TestDecl(self.tt(p, c), name, self.span(n), body)
        return ast.TestDecl(self.tt(p, c), name, self.span(n), body, cases, case)

    def test_item(self) -> ast.TestInput | ast.TestStub | ast.TestExpect | ast.TestReplay:
        p = self.p
        K = self.K
        k = K[p]
        self.p = p + 1
        if k == "INPUT":
            v = self.opexpr()
            return ast.TestInput(self.tn(p, v), v)
        if k == "EXPECT":
            if K[p + 1] == "FAIL":
                code = self.p + 1
                self.p = code + 1
                if K[code] != "STRING":
                    bail()
                return ast.TestExpect(
                    self.tt(p, code), None, plain_text(self.V[code]), self.span(code)
                )
            v = self.opexpr()
            return ast.TestExpect(self.tn(p, v), v)
        if k == "REPLAY":
            path = self.take("STRING")
            return ast.TestReplay(self.tt(p, path), plain_text(self.V[path]), self.span(path))
        if k != "STUB":
            bail()
        kind = K[self.p]
        self.p += 1
        target = self.ident()
        values: list[ast.Expr | ast.StubFails] = []
        always = False
        branch = None
        if kind == "STEP" and K[self.p] == "DOT":  # `stub step r.a`: a `parallel` branch
            self.p += 1
            branch = self.ident()
        if kind == "STEP" or kind == "ASK":
            self.take("RETURNS")
            values.append(self.opexpr())
            while kind == "ASK" and K[self.p] == "THEN":
                self.p += 1
                if K[self.p] == "ALWAYS":
                    self.p += 1
                    always = True
                    values.append(self.opexpr())
                    break
                values.append(self.opexpr())
            first = values[0]
            assert not isinstance(first, ast.StubFails)  # an answer of `ask` and `step`
            return ast.TestStub(
                self.tn(p, values[-1]),
                self.V[p + 1],
                target,
                first,
                values=values,
                always=always,
                branch=branch,
            )
        if kind not in ("AGENT", "STAGE", "TOOL"):
            bail()
        k = K[self.p]
        self.p += 1
        if k == "RETURNS":
            values.append(self.opexpr())
        elif k == "FAILS":
            values.append(self.stub_fails(self.p - 1))
        else:
            bail()
        while K[self.p] == "THEN":
            self.p += 1
            k = K[self.p]
            if k == "ALWAYS":
                self.p += 1
                always = True
                values.append(self.opexpr())
                break
            if k == "FAILS":
                self.p += 1
                values.append(self.stub_fails(self.p - 1))
            else:
                values.append(self.opexpr())
        first = values[0]
        only_fails = len(values) == 1 and isinstance(first, ast.StubFails)
        return ast.TestStub(
            self.tn(p, values[-1]),
            self.V[p + 1],
            target,
            None if isinstance(first, ast.StubFails) else first,
            first.code if only_fails and isinstance(first, ast.StubFails) else None,
            first.code_span if only_fails and isinstance(first, ast.StubFails) else None,
            values=values,
            always=always,
        )

    def stub_fails(self, fails: int) -> ast.StubFails:
        """``fails "code"`` (``fails``: the index of the ``fails`` token, already taken)."""
        code = self.take("STRING")
        return ast.StubFails(self.tt(fails, code), plain_text(self.V[code]), self.span(code))

    def eval_decl(self, p: int) -> ast.EvalDecl:
        n = self.take("STRING")
        name = plain_text(self.V[n])
        self.take("LBRACE")
        K = self.K
        body: list[ast.EvalDataset | ast.EvalExpect | ast.EvalScorer] = []
        while True:
            q = self.p
            k = K[q]
            if k == "RBRACE":
                break
            self.p = q + 1
            if k == "DATASET":
                path = self.take("STRING")
                body.append(
                    ast.EvalDataset(self.tt(q, path), plain_text(self.V[path]), self.span(path))
                )
            elif k == "EXPECT":
                t = self.type()
                body.append(ast.EvalExpect(self.tn(q, t), t))
            elif k == "SCORE" or k == "JUDGE":
                scorer = self.ident()
                if k == "SCORE":
                    self.take("EQUALS")
                expr = self.opexpr()
                threshold: float | None = None
                threshold_span: Span | None = None
                end = self.tn(q, expr)
                if K[self.p] == "THRESHOLD":
                    self.p += 1
                    num = self.take("NUMBER")
                    value = _number(self.V[num])
                    last = num
                    if K[self.p] == "PERCENT":
                        last = self.p
                        self.p += 1
                        value = value / 100
                    threshold = value
                    threshold_span = self.tt(num, last)
                    end = self.tt(q, last)
                body.append(
                    ast.EvalScorer(
                        end,
                        "score" if k == "SCORE" else "judge",
                        scorer,
                        expr,
                        threshold,
                        threshold_span,
                    )
                )
            else:
                bail()
        c = self.p
        self.p = c + 1
        return ast.EvalDecl(self.tt(p, c), name, self.span(n), body)

    def extern(self, p: int) -> ast.Item:
        k = self.K[self.p]
        self.p += 1
        if k == "TYPE":
            name = self.name()
            return ast.ExternType(
                self.tt(p, name), ast.Ident(self.span(name), self.V[name]), doc=self.docs.get(p)
            )
        if k != "TOOL":
            bail()
        catalog = None
        q = self.p
        if self.K[q] == "STRING":
            self.p = q + 1
            catalog = q
            self.take("AS")
        tool = self.ident()
        params = self.params()
        self.take("ARROW")
        returns = self.type()
        if catalog is None:
            return ast.ExternTool(self.tn(p, returns), tool, params, returns, doc=self.docs.get(p))
        return ast.ExternTool(
            self.tn(p, returns),
            tool,
            params,
            returns,
            doc=self.docs.get(p),
            catalog=plain_text(self.V[catalog]),
            catalog_span=self.span(catalog),
        )

    def param(self) -> ast.Param:
        n = self.name()
        omittable = self.K[self.p] == "QMARK"
        if omittable:
            self.p += 1
        self.take("COLON")
        t = self.type()
        name = ast.Ident(self.span(n), self.V[n])
        if omittable:
            return ast.Param(self.tn(n, t), name, t, omittable=True)
        return ast.Param(self.tn(n, t), name, t)

    # -- types ----------------------------------------------------------------------------------

    def type(self) -> ast.TypeExpr:
        t = self.type_post()
        K = self.K
        if K[self.p] != "PIPE":
            return t
        members = [t]
        while K[self.p] == "PIPE":
            self.p += 1
            members.append(self.type_post())
        return ast.UnionType(t.span.to(members[-1].span), members)

    def type_post(self) -> ast.TypeExpr:
        t = self.type_atom()
        K = self.K
        while True:
            k = K[self.p]
            if k == "LSQB":
                q = self.p + 1
                if K[q] != "RSQB":
                    bail()
                self.p = q + 1
                t = ast.ArrayType(self.nt(t, q), t)
            elif k == "QMARK":
                t = ast.OptionalType(self.nt(t, self.p), t)
                self.p += 1
            else:
                return t

    def type_atom(self) -> ast.TypeExpr:
        p = self.p
        K = self.K
        k = K[p]
        if k == "MAP":
            self.p = p + 1
            self.take("LT")
            inner = self.type()
            gt = self.take("GT")
            return ast.MapType(self.tt(p, gt), inner)
        if k == "LBRACE":
            return self.object_type()
        if k == "STRING":
            self.p = p + 1
            return ast.LiteralType(self.span(p), plain_text(self.V[p]))
        if k == "NUMBER":
            self.p = p + 1
            return ast.LiteralType(self.span(p), _number(self.V[p]))
        if k in _LITERAL_TYPES:
            self.p = p + 1
            return ast.LiteralType(self.span(p), _LITERAL_TYPES[k])
        if k == "LPAR" or k == "LPAR_NL":
            self.p = p + 1
            inner = self.type()
            self.take("RPAR")
            return inner
        self.name()
        if K[p + 1] == "LT":
            self.p = p + 2
            inner = self.type()
            gt = self.take("GT")
            return ast.GenericType(self.tt(p, gt), self.V[p], inner, self.span(p))
        return ast.NamedType(self.span(p), self.V[p])

    def object_type(self) -> ast.ObjectType:
        o = self.take("LBRACE")
        K = self.K
        fields: list[ast.FieldDecl] = []
        comma = False
        while True:
            k = K[self.p]
            if k == "RBRACE":
                break
            if k == "COMMA":
                if comma or not fields:
                    bail()
                comma = True
                self.p += 1
                continue
            f = self.field()
            if fields and not comma and fields[-1].span.end_line == f.span.line:
                bail()
            fields.append(f)
            comma = False
        c = self.p
        self.p = c + 1
        return ast.ObjectType(self.tt(o, c), fields)

    def field(self) -> ast.FieldDecl:
        n = self.name()
        self.take("COLON")
        t = self.type()
        constraints: list[ast.Constraint] = []
        K = self.K
        while K[self.p] == "AT":
            constraints.append(self.constraint())
        end = constraints[-1] if constraints else t
        return ast.FieldDecl(
            self.tn(n, end),
            ast.Ident(self.span(n), self.V[n]),
            t,
            constraints,
            doc=self.docs.get(n),
        )

    def constraint(self) -> ast.Constraint:
        at = self.p
        self.p = at + 1
        n = self.name()
        args: list[ast.Expr] = []
        if self.K[self.p] == "LPAR":
            self.p += 1
            if self.K[self.p] != "RPAR":
                for a in self.args():
                    if isinstance(a, ast.Argument):
                        bail()
                    args.append(a)
            end = self.take("RPAR")
        else:
            end = n
        return ast.Constraint(self.tt(at, end), ast.Ident(self.span(n), self.V[n]), args)

    # -- statements -----------------------------------------------------------------------------

    def block(self) -> ast.Block:
        o = self.take("LBRACE")
        K = self.K
        stmts: list[ast.Stmt] = []
        push = stmts.append
        while K[self.p] != "RBRACE":
            s = self.stmt()
            if stmts and isinstance(s, ast.ExprStmt) and stmts[-1].span.end_line == s.span.line:
                bail()  # an expression after a statement on its line: the LALR path reports it
            push(s)
        c = self.p
        self.p = c + 1
        return ast.Block(self.tt(o, c), stmts)

    def stmt(self) -> ast.Stmt:
        p = self.p
        k = self.K[p]
        if k not in _STMT_START:
            e = self.expr()
            return ast.ExprStmt(e.span, e)
        self.p = p + 1
        if k == "LET":
            n = self.name()
            ann = None
            if self.K[self.p] == "COLON":
                self.p += 1
                ann = self.type()
            self.take("EQUALS")
            v = self.expr()
            return ast.LetStmt(self.tn(p, v), ast.Ident(self.span(n), self.V[n]), ann, v)
        if k == "RETURN":
            v = self.expr()
            return ast.ReturnStmt(self.tn(p, v), v)
        if k == "IF":
            out: ast.Stmt = self.if_rest(p, True)
            return out
        if k == "REQUIRE":
            cond = self.opexpr()
            self.take("ELSE")
            self.take("FAIL")
            msg = self.expr()
            return ast.RequireStmt(self.tn(p, msg), cond, msg)
        if k == "SLEEP":
            d = self.opexpr()
            return ast.SleepStmt(self.tn(p, d), d)
        # FAIL
        v = self.expr()
        return ast.FailStmt(self.tn(p, v), v)
