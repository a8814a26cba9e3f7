"""The expressions of the recursive-descent fast path (:mod:`.descent`): ``expr``, the operand
chain and every control expression, ``agent`` blocks and their clauses (docs/spec/LANGUAGE.md
§4, §6, §7), over the token lists of :func:`agentflow.grammar.descent.tokenize`.

:class:`ExprDescent` holds the token lists, the position and the helpers; :class:`.descent.Descent`
adds items, types and statements (the two methods named here that it defines are ``type`` and
``block``).  Any place where the LALR path would report something raises :class:`_Bail`.
"""

from __future__ import annotations

from typing import Any, NoReturn

from agentflow.core.functions import FUNCTIONS
from agentflow.core.spans import Span
from agentflow.core.vocabulary import MAX_PREFIX
from agentflow.core.vocabulary import RESERVED_WORDS as _RESERVED
from agentflow.core.vocabulary import duration_ms as _duration_ms
from agentflow.grammar import ast
from agentflow.grammar.builder import match_arm
from agentflow.grammar.builder_exprs import _climb, _Not, _push_projection
from agentflow.grammar.builder_shared import _budget, _number, _retry
from agentflow.grammar.scanner import KEYWORDS, SynErr

__all__ = ["_Bail", "ExprDescent", "bail", "plain_text"]


class _Bail(Exception):
    """The descent does not take this text: the LALR path parses it (and reports)."""


def bail() -> NoReturn:
    """Give up: the LALR path parses this text."""
    raise _Bail


#: terminals of the keywords that are a name where the grammar does not expect the keyword
_CTX = frozenset(t for w, t in KEYWORDS.items() if w not in _RESERVED)
#: binary operator terminals (``NOT`` only as the start of ``not in``)
_BINOPS = frozenset(
    ("QQ", "OR", "AND", "EQ", "NE", "LT", "LE", "GT", "GE", "IN", "NOT")
    + ("PLUS", "MINUS", "STAR", "SLASH", "PERCENT", "DOTDOT")
)
#: the terminals that start an ``operand`` that is not a ``postfix``
_PREFIX = frozenset(("NOT", "NOT_NL", "MINUS", "MINUS_NL"))


class _OpTok:
    """A token as :func:`~agentflow.grammar.builder_exprs._climb` reads it (only its span)."""

    __slots__ = ("span",)

    def __init__(self, span: Span) -> None:
        self.span = span


def plain_text(lit: ast.StringLit) -> str:
    """The text of a string that must be plain (the LALR path raises otherwise)."""
    for part in lit.parts:
        if type(part) is not str:
            bail()
    return lit.text


class ExprDescent:
    """One recursive-descent parse over the token lists of
    :func:`agentflow.grammar.descent.tokenize`; ``p`` is the index of the next token."""

    __slots__ = ("file", "K", "V", "S", "L", "docs", "hard", "p")

    def __init__(
        self,
        file: str,
        kinds: list[str],
        values: list[Any],
        starts: list[int],
        lines: list[tuple[int, int]],
        docs: dict[int, str],
        hard: set[int],
    ) -> None:
        self.file = file
        self.K = kinds
        self.V = values
        self.S = starts
        self.L = lines
        self.docs = docs
        self.hard = hard
        self.p = 0

    # -- helpers --------------------------------------------------------------------------------
    # A token's span: it starts at ``S[p]`` on line ``L[p][0]`` (which starts at ``L[p][1]``)
    # and ends ``len(V[p])`` later on the same line, or where its string ends (``V[p].span``).

    def span(self, p: int) -> Span:
        """The span of token ``p``."""
        v = self.V[p]
        i = self.S[p]
        line, ls = self.L[p]
        if type(v) is str:
            c = i - ls + 1
            n = len(v)
            return Span(self.file, line, c, line, c + n, i, i + n)
        s = v.span
        return Span(self.file, line, i - ls + 1, s.end_line, s.end_column, i, s.end)

    def end_line(self, p: int) -> int:
        """The line on which token ``p`` ends."""
        v = self.V[p]
        return self.L[p][0] if type(v) is str else v.span.end_line

    def tt(self, a: int, b: int) -> Span:
        """The span from token ``a`` through token ``b``."""
        i = self.S[a]
        line, ls = self.L[a]
        v = self.V[b]
        if type(v) is str:
            j = self.S[b]
            end_line, end_ls = self.L[b]
            n = len(v)
            return Span(self.file, line, i - ls + 1, end_line, j - end_ls + 1 + n, i, j + n)
        s = v.span
        return Span(self.file, line, i - ls + 1, s.end_line, s.end_column, i, s.end)

    def tn(self, a: int, node: Any) -> Span:
        """The span from token ``a`` through ``node``."""
        i = self.S[a]
        line, ls = self.L[a]
        s = node.span
        return Span(self.file, line, i - ls + 1, s.end_line, s.end_column, i, s.end)

    def nt(self, node: Any, b: int) -> Span:
        """The span from ``node`` through token ``b``."""
        s = node.span
        v = self.V[b]
        if type(v) is str:
            j = self.S[b]
            end_line, end_ls = self.L[b]
            n = len(v)
            return Span(s.file, s.line, s.column, end_line, j - end_ls + 1 + n, s.start, j + n)
        e = v.span
        return Span(s.file, s.line, s.column, e.end_line, e.end_column, s.start, e.end)

    def isname(self, p: int) -> bool:
        """Token ``p`` can be a name here (the caller has tried its keywords)."""
        k = self.K[p]
        return k == "NAME" or (k in _CTX and p not in self.hard)

    def name(self) -> int:
        """Take a name; return its token index."""
        p = self.p
        k = self.K[p]
        if k != "NAME" and (k not in _CTX or p in self.hard):
            bail()
        self.p = p + 1
        return p

    def ident(self) -> ast.Ident:
        p = self.name()
        return ast.Ident(self.span(p), self.V[p])

    def take(self, kind: str) -> int:
        """Take a token of ``kind``; return its index."""
        p = self.p
        if self.K[p] != kind:
            bail()
        self.p = p + 1
        return p

    # -- items ----------------------------------------------------------------------------------

    # -- defined by the items' and statements' descent ------------------------------------------

    def type(self) -> ast.TypeExpr:  # pragma: no cover - Descent defines it
        """A type (``type``)."""
        raise NotImplementedError

    def block(self) -> ast.Block:  # pragma: no cover - Descent defines it
        """A ``{ … }`` block of statements."""
        raise NotImplementedError

    # -- expressions ----------------------------------------------------------------------------

    def if_rest(self, p: int, stmt: bool) -> Any:
        """After ``if`` (token ``p``): an ``if`` statement (``stmt``: a conditional expression
        when ``then`` follows the condition)."""
        cond = self.opexpr()
        k = self.K[self.p]
        if k == "THEN":
            self.p += 1
            then = self.opexpr()
            self.take("ELSE")
            other = self.expr()
            e = ast.CondExpr(self.tn(p, other), cond, then, other)
            return ast.ExprStmt(e.span, e) if stmt else e
        if not stmt:
            bail()
        then_block = self.block()
        else_: ast.Block | ast.IfStmt | None = None
        if self.K[self.p] == "ELSE":
            self.p += 1
            q = self.p
            if self.K[q] == "IF":
                self.p = q + 1
                else_ = self.if_rest(q, True)
                if not isinstance(else_, ast.IfStmt):
                    bail()  # `else if c then …`: not an if statement
            else:
                else_ = self.block()
            return ast.IfStmt(self.tn(p, else_), cond, then_block, else_)
        return ast.IfStmt(self.tn(p, then_block), cond, then_block, None)

    # -- expressions ----------------------------------------------------------------------------
    def expr(self) -> ast.Expr:
        p = self.p
        k = self.K[p]
        if k in _CTX or k == "IF":
            # the words that start an `expr` that is not an `opexpr`
            if k == "FILTER":
                self.p = p + 1
                return self.filter_rest(p)
            if k == "ASK":
                self.p = p + 1
                return self.ask_rest(p)
            if k == "IF":
                self.p = p + 1
                out: ast.Expr = self.if_rest(p, False)
                return out
            if k == "TRY":
                self.p = p + 1
                return self.try_rest(p)
            if k == "LOOP":
                self.p = p + 1
                return self.loop_rest(p)
        e = self.opexpr()
        k = self.K[self.p]
        if k == "TIMEOUT" or k == "RETRY":
            e = self.call_options(e)
        if self.K[self.p] == "CATCH":
            kw = self.p
            self.p = kw + 1
            codes, var = self.catch_head()
            body = self.block()
            return ast.CatchExpr(
                e.span.to(body.span), e, codes, var, body, keyword_span=self.span(kw)
            )
        return e

    def call_options(self, call: ast.Expr) -> ast.Expr:
        """A tool call's ``timeout D`` / ``retry { … }`` clauses after ``call`` (grammar rule
        ``call_clauses``).  A clause word that starts a line is a name where a statement may
        start (the scanner's rule): that needs the parser's state, so the fast path gives up."""
        K = self.K
        clauses: list[ast.Clause] = []
        while True:
            kw = self.p
            k = K[kw]
            if k != "TIMEOUT" and k != "RETRY":
                break
            if self.L[kw][0] != self.end_line(kw - 1):
                bail()  # starts a line: a clause, or a name beginning the next statement
            self.p = kw + 1
            if k == "TIMEOUT":
                value: Any = self.opexpr()
                span = self.tn(kw, value)
            else:
                obj = self.object()
                value = _retry(obj)
                span = self.tn(kw, obj)
            clauses.append(ast.Clause(span, self.V[kw], value, self.span(kw)))
        if not clauses:
            return call
        return ast.CallOptions(call.span.to(clauses[-1].span), call, clauses)

    def catch_head(self) -> tuple[list[ast.Ident] | None, ast.Ident | None]:
        K = self.K
        codes: list[ast.Ident] | None = None
        if K[self.p] == "ON":
            self.p += 1
            self.take("LSQB")
            codes = [self.ident()]
            while K[self.p] == "COMMA":
                self.p += 1
                if K[self.p] == "COMMA":
                    bail()  # a repeated comma: the LALR path reports it
                if K[self.p] != "RSQB":
                    codes.append(self.ident())
            self.take("RSQB")
        var = None
        if K[self.p] == "AS":
            self.p += 1
            var = self.ident()
        return codes, var

    def try_rest(self, p: int) -> ast.TryExpr:
        block = self.block()
        catch = self.take("CATCH")
        codes, var = self.catch_head()
        body = self.block()
        return ast.TryExpr(
            self.tn(p, body),
            block,
            codes,
            var,
            body,
            keyword_span=self.span(catch),
            try_span=self.span(p),
        )

    def filter_rest(self, p: int) -> ast.FilterExpr:
        over = self.opexpr()
        self.take("AS")
        var = self.ident()
        self.take("WHERE")
        if self.K[self.p] == "JUDGE":
            self.p += 1
            judge = self.opexpr()
            return ast.FilterExpr(self.tn(p, judge), over, var, None, judge)
        cond = self.opexpr()
        return ast.FilterExpr(self.tn(p, cond), over, var, cond, None)

    def ask_rest(self, p: int) -> ast.AskExpr:
        q = self.opexpr()
        K = self.K
        expect: ast.TypeExpr | None = None
        default = else_fail = None
        last: Any = q
        if K[self.p] == "EXPECT":
            self.p += 1
            expect = last = self.type()
        k = K[self.p]
        if k == "DEFAULT":
            self.p += 1
            default = last = self.opexpr()
        elif k == "ELSE":
            self.p += 1
            self.take("FAIL")
            else_fail = last = self.opexpr()
        return ast.AskExpr(self.tn(p, last), q, expect, default, else_fail)

    def accumulated(
        self,
    ) -> tuple[ast.Ident, ast.Ident, ast.TypeExpr | None, ast.Expr, ast.Block]:
        """``as VAR, ACC[: TYPE] = INIT { BODY }``, shared by ``loop`` and ``reduce``."""
        self.take("AS")
        var = self.ident()
        self.take("COMMA")
        acc = self.ident()
        acc_type = None
        if self.K[self.p] == "COLON":
            self.p += 1
            acc_type = self.type()
        self.take("EQUALS")
        init = self.opexpr()
        body = self.block()
        return var, acc, acc_type, init, body

    def loop_rest(self, p: int) -> ast.LoopExpr:
        self.take("UP")
        self.take("TO")
        bound = self.opexpr()
        var, acc, acc_type, init, body = self.accumulated()
        until = else_fail = else_value = None
        end: ast.Node = body
        if self.K[self.p] == "UNTIL":
            self.p += 1
            until = self.opexpr()
            self.take("ELSE")
            if self.K[self.p] == "FAIL":
                self.p += 1
                else_fail = end = self.opexpr()
            else:
                else_value = end = self.opexpr()
        return ast.LoopExpr(
            self.tn(p, end),
            bound,
            var,
            acc,
            acc_type,
            init,
            body,
            until,
            else_fail,
            else_value,
            self.span(p),
        )

    def opexpr(self) -> ast.Expr:
        K = self.K
        x = self.operand() if K[self.p] in _PREFIX else self.postfix()
        k = K[self.p]
        if k not in _BINOPS:
            if type(x) is _Not:
                return _climb([x])
            out: ast.Expr = x
            return out
        seq: list[Any] = [x]
        push = seq.append
        while k in _BINOPS:
            q = self.p
            if k == "NOT":
                if K[q + 1] != "IN":
                    bail()
                self.p = q + 2
                t = _OpTok(self.tt(q, q + 1))
                push(("not in", t, t))
            else:
                self.p = q + 1
                t = _OpTok(self.span(q))
                push((self.V[q], t, t))
            push(self.operand() if K[self.p] in _PREFIX else self.postfix())
            k = K[self.p]
        if len(seq) == 3:
            left, (op, t, _), right = seq
            if type(left) is not _Not and type(right) is not _Not:
                # one operator: what precedence climbing gives, without the climb
                a, b = left.span, right.span  # `a.to(b)`, without its call
                span = Span(a.file, a.line, a.column, b.end_line, b.end_column, a.start, b.end)
                if op == "..":
                    return ast.RangeExpr(span, left, right)
                return ast.Binary(span, op, left, right, t.span)
        return _climb(seq)

    def operand(self) -> Any:
        p = self.p
        k = self.K[p]
        if k == "NOT" or k == "NOT_NL":
            self.p = p + 1
            inner = self.operand()
            depth = 1
            x = inner
            while isinstance(x, _Not):
                depth += 1
                x = x.operand
            if depth > MAX_PREFIX:
                bail()
            return _Not(_OpTok(self.span(p)), inner)  # type: ignore[arg-type]
        if k == "MINUS" or k == "MINUS_NL":
            self.p = p + 1
            return self.negated_rest(p)
        return self.postfix()

    def negated_rest(self, p: int) -> ast.Unary:
        """After a ``-`` (token ``p``): ``negated`` and the ``neg`` node."""
        q = self.p
        if self.K[q] == "MINUS":
            self.p = q + 1
            operand: ast.Expr = self.negated_rest(q)
        else:
            operand = self.postfix()
        if isinstance(operand, ast.Unary) and operand.op == "-":
            depth = 1
            x: ast.Expr = operand
            while isinstance(x, ast.Unary) and x.op == "-":
                depth += 1
                x = x.operand
            if depth > MAX_PREFIX:
                bail()
        return ast.Unary(self.tn(p, operand), "-", operand)

    def postfix(self) -> ast.Expr:
        K = self.K
        V = self.V
        p = self.p
        if K[p] == "NAME":
            self.p = p + 1
            name = V[p]
            i = self.S[p]
            line, ls = self.L[p]
            c = i - ls + 1
            n = len(name)
            e: ast.Expr = ast.Name(Span(self.file, line, c, line, c + n, i, i + n), name)
        else:
            e = self.atom()
        while True:
            p = self.p
            k = K[p]
            if k == "DOT":
                q = p + 1
                if K[q] != "NAME":
                    bail()
                self.p = q + 1
                name = V[q]  # a NAME: the span of `self.span(q)`, and of `e.span.to(nspan)`
                i = self.S[q]
                line, ls = self.L[q]
                c = i - ls + 1
                n = len(name)
                nspan = Span(self.file, line, c, line, c + n, i, i + n)
                if isinstance(e, ast.Projection) and not e.closed:

                    def member(inner: ast.Expr, name: str = name, nspan: Span = nspan) -> ast.Expr:
                        return ast.Member(inner.span.to(nspan), inner, name, nspan)

                    e = _push_projection(e, member, nspan)
                else:
                    s = e.span
                    whole = Span(s.file, s.line, s.column, line, c + n, s.start, i + n)
                    e = ast.Member(whole, e, name, nspan)
            elif k == "LPAR":
                self.p = p + 1
                args: list[Any] = [] if K[p + 1] == "RPAR" else self.args()
                close = self.span(self.take("RPAR"))
                named: list[ast.Argument] = []
                positional: list[ast.Expr] = []
                for a in args:
                    (named if isinstance(a, ast.Argument) else positional).append(a)
                if isinstance(e, ast.Name) and positional and not named and e.name in FUNCTIONS:
                    e = ast.FuncCall(e.span.to(close), e.name, e.span, positional)
                elif isinstance(e, ast.Name) and positional and not named:
                    e = ast.UserCall(e.span.to(close), e.name, e.span, positional)
                else:
                    e = ast.Call(e.span.to(close), e, named, positional)
            elif k == "LSQB":
                if K[p + 1] == "STAR":
                    if K[p + 2] != "RSQB":
                        bail()
                    self.p = p + 3
                    close = self.span(p + 2)
                    if isinstance(e, ast.Projection) and not e.closed:

                        def build(inner: ast.Expr, close: Span = close) -> ast.Expr:
                            return ast.Projection(inner.span.to(close), inner, None)

                        e = _push_projection(e, build, close)
                    else:
                        e = ast.Projection(e.span.to(close), e, None)
                else:
                    self.p = p + 1
                    idx = self.expr()
                    close = self.span(self.take("RSQB"))
                    if isinstance(e, ast.Projection) and not e.closed:

                        def index(
                            inner: ast.Expr, idx: ast.Expr = idx, close: Span = close
                        ) -> ast.Expr:
                            return ast.Index(inner.span.to(close), inner, idx)

                        e = _push_projection(e, index, close)
                    else:
                        e = ast.Index(e.span.to(close), e, idx)
            else:
                return e

    def args(self) -> list[Any]:
        out = [self.arg()]
        K = self.K
        while K[self.p] == "COMMA":
            self.p += 1
            k = K[self.p]
            if k == "COMMA":
                bail()  # a repeated comma: the LALR path reports it
            if k != "RPAR":
                out.append(self.arg())
        return out

    def arg(self) -> Any:
        p = self.p
        if self.K[p] == "NAME" and self.K[p + 1] == "COLON":
            self.p = p + 2
            v = self.expr()
            return ast.Argument(self.tn(p, v), self.V[p], self.span(p), v)
        return self.expr()

    def atom(self) -> ast.Expr:
        p = self.p
        k = self.K[p]
        if k == "NAME":
            self.p = p + 1
            return ast.Name(self.span(p), self.V[p])
        if k == "STRING":
            self.p = p + 1
            lit: ast.StringLit = self.V[p]
            return lit
        if k == "NUMBER":
            self.p = p + 1
            return ast.NumberLit(self.span(p), _number(self.V[p]), str(self.V[p]))
        if k == "LBRACE":
            return self.object()
        if k == "LPAR" or k == "LPAR_NL":
            self.p = p + 1
            e = self.expr()
            self.take("RPAR")
            if isinstance(e, ast.Projection):
                e.closed = True
            return e
        if k == "LSQB" or k == "LSQB_NL":
            self.p = p + 1
            items: list[ast.Expr] = []
            K = self.K
            sep = False
            while True:
                k = K[self.p]
                if k == "RSQB":
                    break
                if k == "COMMA":
                    if not sep:
                        bail()  # a comma before any item or after a comma
                    self.p += 1
                    sep = False
                    continue
                if sep:
                    bail()
                items.append(self.expr())
                sep = True
            c = self.p
            self.p = c + 1
            return ast.ListLit(self.tt(p, c), items)
        if k == "DURATION":
            self.p = p + 1
            v = self.V[p]
            return ast.DurationLit(self.span(p), _duration_ms(v), v)
        if k == "TRUE" or k == "FALSE":
            self.p = p + 1
            return ast.BoolLit(self.span(p), k == "TRUE")
        if k == "NULL":
            self.p = p + 1
            return ast.NullLit(self.span(p))
        if k == "PARALLEL" and self.K[p + 1] != "MAP":
            return self.parallel_expr()
        if k == "MAP" or k == "PARALLEL":
            return self.map_expr()
        if k == "AGENT":
            return self.agent_expr()
        if k == "REDUCE":
            return self.reduce_expr()
        if k == "VERIFY":
            return self.verify_expr()
        if k == "MATCH":
            return self.match_expr()
        self.name()
        return ast.Name(self.span(p), self.V[p])

    def match_expr(self) -> ast.MatchExpr:
        """``match subject { p | q => e, _ => f }`` (grammar rule ``match_expr``); a pattern the
        builder refuses (an interpolation, a name other than ``_``) gives up."""
        kw = self.take("MATCH")
        subject = self.opexpr()
        self.take("LBRACE")
        K = self.K
        arms: list[ast.MatchArm] = []
        while True:
            patterns = [self.match_alt()]
            while K[self.p] == "PIPE":
                self.p += 1
                patterns.append(self.match_alt())
            self.take("FATARROW")
            try:
                arm = match_arm(patterns, self.expr())
            except SynErr:
                bail()
            arms.append(arm)
            k = K[self.p]
            if k == "COMMA":
                self.p += 1
                if K[self.p] == "RBRACE":
                    break
                continue
            if k != "RBRACE":
                bail()
            break
        c = self.take("RBRACE")
        return ast.MatchExpr(self.tt(kw, c), subject, arms, self.span(kw))

    def match_alt(self) -> ast.Expr:
        """One literal of a pattern (grammar rule ``match_alt``)."""
        p = self.p
        k = self.K[p]
        self.p = p + 1
        if k == "STRING":
            lit: ast.StringLit = self.V[p]
            if not lit.is_plain:
                bail()
            return lit
        if k == "NUMBER":
            return ast.NumberLit(self.span(p), _number(self.V[p]), str(self.V[p]))
        if k == "MINUS" or k == "MINUS_NL":
            n = self.take("NUMBER")
            return ast.Unary(
                self.tt(p, n), "-", ast.NumberLit(self.span(n), _number(self.V[n]), str(self.V[n]))
            )
        if k == "DURATION":
            v = self.V[p]
            return ast.DurationLit(self.span(p), _duration_ms(v), v)
        if k == "TRUE" or k == "FALSE":
            return ast.BoolLit(self.span(p), k == "TRUE")
        if k == "NULL":
            return ast.NullLit(self.span(p))
        if k == "NAME" and self.V[p] == "_":
            return ast.Name(self.span(p), "_")
        bail()

    def object(self) -> ast.ObjectLit:
        o = self.take("LBRACE")
        K = self.K
        V = self.V
        entries: list[ast.ObjectEntry] = []
        comma = False
        while True:
            p = self.p
            k = K[p]
            if k == "RBRACE":
                break
            if k == "COMMA":
                if comma or not entries:
                    bail()
                comma = True
                self.p = p + 1
                continue
            if k == "STRING":
                key = plain_text(V[p])
            elif k == "NAME":
                key = V[p]
            else:
                bail()
            if K[p + 1] != "COLON":
                bail()
            self.p = p + 2
            v = self.expr()
            e = ast.ObjectEntry(self.tn(p, v), key, self.span(p), v)
            if entries and not comma and entries[-1].span.end_line == e.span.line:
                bail()
            entries.append(e)
            comma = False
        c = self.p
        self.p = c + 1
        return ast.ObjectLit(self.tt(o, c), entries)

    def map_expr(self) -> ast.MapExpr:
        p = self.p
        parallel = self.K[p] == "PARALLEL"
        kw = p + 1 if parallel else p
        if self.K[kw] != "MAP":
            bail()
        self.p = kw + 1
        over = self.opexpr()
        self.take("AS")
        var = self.ident()
        limit = None
        tolerance: tuple[Any, bool, Span | None] = (None, False, None)
        if self.K[self.p] == "LIMIT":
            self.p += 1
            limit = self.opexpr()
        if self.K[self.p] == "TOLERATE":
            self.p += 1
            num = self.take("NUMBER")
            end = num
            if self.K[self.p] == "PERCENT":
                end = self.p
                self.p += 1
            tolerance = (_number(self.V[num]), end != num, self.tt(num, end))
        body = self.block()
        return ast.MapExpr(
            self.tn(p, body),
            parallel,
            over,
            var,
            limit,
            body,
            keyword_span=self.span(kw),
            tolerate=tolerance[0],
            tolerate_percent=tolerance[1],
            tolerate_span=tolerance[2],
        )

    def parallel_expr(self) -> ast.ParallelExpr:
        """``parallel [limit N] { name: expr, … }`` (the branches are an object's entries)."""
        p = self.p
        self.p = p + 1
        limit = None
        if self.K[self.p] == "LIMIT":
            self.p += 1
            limit = self.opexpr()
        if self.K[self.p] != "LBRACE":
            bail()
        obj = self.object()
        return ast.ParallelExpr(
            self.tn(p, obj), list(obj.entries), limit, keyword_span=self.span(p)
        )

    def reduce_expr(self) -> ast.ReduceExpr:
        p = self.p
        self.p = p + 1
        over = self.opexpr()
        var, acc, acc_type, init, body = self.accumulated()
        return ast.ReduceExpr(self.tn(p, body), over, var, acc, acc_type, init, body)

    def verify_expr(self) -> ast.VerifyExpr:
        p = self.p
        self.p = p + 1
        self.take("LBRACE")
        K = self.K
        items: list[ast.VerifyCheck | ast.VerifyJudge] = []
        while True:
            q = self.p
            k = K[q]
            if k == "CHECK":
                self.p = q + 1
                cond = self.opexpr()
                self.take("ELSE")
                msg = self.opexpr()
                items.append(ast.VerifyCheck(self.tn(q, msg), cond, msg))
            elif k == "JUDGE":
                self.p = q + 1
                prompt = self.opexpr()
                items.append(ast.VerifyJudge(self.tn(q, prompt), prompt))
            else:
                break
        c = self.take("RBRACE")
        return ast.VerifyExpr(self.tt(p, c), items)

    def agent_expr(self) -> ast.AgentExpr:
        p = self.p
        self.p = p + 1
        self.take("LPAR")
        target = self.expr()
        self.take("RPAR")
        self.take("LBRACE")
        K = self.K
        clauses: list[ast.Clause] = []
        while K[self.p] != "RBRACE":
            clauses.append(self.clause())
        c = self.p
        self.p = c + 1
        return ast.AgentExpr(self.tt(p, c), target, clauses, self.span(p))

    def clause(self) -> ast.Clause:
        kw = self.p
        k = self.K[kw]
        self.p = kw + 1
        value: Any
        if k == "TASK" or k == "SYSTEM" or k == "MODEL" or k == "WRITE" or k == "TIMEOUT":
            value = self.opexpr()
            span = self.tn(kw, value)
        elif k == "MAX_ITERATIONS":
            value = self.opexpr()
            span = self.tn(kw, value)
        elif k == "INPUT":
            value = self.object()
            span = self.tn(kw, value)
        elif k == "EXPECT":
            value = self.type()
            span = self.tn(kw, value)
        elif k == "RETRY":
            obj = self.object()
            value = _retry(obj)
            span = self.tn(kw, obj)
        elif k == "BUDGET":
            obj = self.object()
            value = _budget(obj)
            span = self.tn(kw, obj)
        elif k == "TOOLS":
            q = self.p
            k2 = self.K[q]
            if k2 == "NONE":
                self.p = q + 1
                value = None
                span = self.tt(kw, q)
            elif k2 == "LSQB" or k2 == "LSQB_NL":
                self.p = q + 1
                value = self.tool_refs()
                span = self.tt(kw, self.take("RSQB"))
            else:
                bail()
        else:
            bail()
        return ast.Clause(span, self.V[kw], value, self.span(kw))

    def tool_refs(self) -> list[ast.ToolRef]:
        K = self.K
        refs: list[ast.ToolRef] = []
        sep = False
        while True:
            p = self.p
            k = K[p]
            if k == "RSQB":
                return refs
            if k == "COMMA":
                if not sep:
                    bail()  # a comma before any tool or after a comma
                self.p = p + 1
                sep = False
                continue
            if sep:
                bail()
            if k == "STRING":
                refs.append(ast.ToolRef(self.span(p), plain_text(self.V[p]), True))
                self.p = p + 1
            else:
                self.name()
                refs.append(ast.ToolRef(self.span(p), self.V[p], False))
            sep = True
