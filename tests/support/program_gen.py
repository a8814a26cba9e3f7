"""Random well-typed `.flow` programs over every construct and clause position, each with a
Python model of what it computes (the compile property test, ``bench/compile_property.py``).

A :class:`Gen` draws from a :class:`Source` — hypothesis' ``draw`` (shrinkable) or a seeded
``random.Random`` (fast, for sweeps of tens of thousands of programs) — and builds the source
text and, side by side, functions that evaluate each expression in Python. A drawn
:class:`Program` carries:

- ``source``; ``evaluate(input) -> ("ok", value) | ("error", code, message)``, the result the
  run must give with the scripted model (agents answer :meth:`Program.reply`, judges say yes or
  no by a rule on their prompt, asks take their defaults);
- ``expected``: the diagnostic codes the check must give — empty for a program that must check
  clean, ``{"invalid-value"}`` for one that deliberately sets ``timeout``, ``retry { attempts }``
  or a budget from a value only known at run time (the refusal path of those positions);
- ``clauses``: what the compiled plan must hold for every clause and setting written (agent
  steps found by the ``[A<n>]`` marker of their task, map concurrencies, deadline, budgets) —
  :func:`dropped` lists what is missing, so a silently dropped clause fails;
- ``constructs``: the construct and clause-position tags it exercises (:data:`CONSTRUCTS` lists
  them all; a sweep asserts each one occurs).

:func:`sweep` puts ``count`` programs drawn from a seed through check → compile → plan
validation → :func:`dropped` (the test suite's fixed-seed sweep and ``bench/compile_property.py``).

``mode="run"`` draws only what the scripted runtime answers deterministically (no team targets,
no named models, no `ask` without a default). Programs use the tools of :func:`catalog_functions`.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentflow import api
from agentflow.compiler.api import check_source

#: every construct and clause position the generator covers (a sweep checks each occurs)
CONSTRUCTS = frozenset(
    """
    flow-header input output deadline budget-top use-agent use-team extern-tool extern-type
    untyped-tool type-object type-alias constraint-range constraint-length constraint-pattern
    doc-comment stage-typed stage-inferred
    let let-annotated require fail return expr-stmt expr-last if if-else else-if
    lit-int lit-neg lit-text lit-escape lit-triple lit-bool lit-null lit-list lit-object
    lit-object-quoted-key interp interp-alone arith modulo concat-text concat-list cmp eq in
    not-in in-range not and or coalesce count index projection member optional-field
    tool-call tool-effect-stmt map map-parallel limit-literal limit-const limit-let limit-run
    filter filter-judge reduce reduce-typed ask-default ask-expect ask-else-fail ask-bare
    loop loop-typed loop-bound-run loop-until loop-else-fail loop-else-value
    verify-check verify-judge verify-failures
    agent target-alias target-team-main target-team-member clause-task-triple clause-system
    clause-model clause-input clause-tools-none clause-tools-list clause-tools-pattern
    clause-write clause-timeout-literal clause-timeout-const clause-timeout-let
    clause-timeout-run clause-retry clause-retry-const clause-retry-run clause-max-iter-literal
    clause-max-iter-const clause-max-iter-run clause-budget clause-budget-run expect-object
    expect-scalar expect-list expect-union expect-constrained
    tolerate-count tolerate-percent outcome-values outcome-errors catch catch-on catch-as
    test-block test-stub-tool test-expect
    """.split()
)

TYPES = ("int", "text", "bool", "int[]", "text[]", "Item", "Item[]", "Kind", "int?")
ELEM = {"int[]": "int", "text[]": "text", "Item[]": "Item"}
KINDS = ("bug", "debt", "doc")
TEXTS = ("a", "bc", "", "x y", "é")
DUR_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


#: what the library and the conditional expression add to :data:`CONSTRUCTS`, and the types
#: :meth:`Gen.library` draws them for
CONSTRUCTS = CONSTRUCTS | frozenset({"cond-expr", "lib-text", "lib-list", "lib-number"})
LIBRARY_TYPES = frozenset({"int", "text", "bool", "int[]", "text[]", "Item[]"})


class Fail(Exception):
    """A run error in the Python model: ``code`` (``failed``, ``validation``) and message."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def interp(v: Any) -> str:
    """A value as interpolation and prompts render it (``to_text``)."""
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def flow_string(s: str) -> str:
    """``s`` as a `.flow` string literal (escapes for ``\\``, ``"``, ``$``, newlines)."""
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("\n", "\\n")
    return f'"{out}"'


def judge_says(prompt: str) -> bool:
    """The scripted judge's verdict on a rendered prompt (deterministic, varies by item)."""
    return sum(prompt.encode("utf-8")) % 3 != 0


def duration_text(ms: int) -> str:
    """Milliseconds as the checker writes a computed duration (``90000`` → ``1m30s``)."""
    out = []
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        n, ms = divmod(ms, size)
        if n:
            out.append(f"{n}{unit}")
    return "".join(out) or "0ms"


# -- sources of randomness ----------------------------------------------------------------------


class Source:
    """Where a generator's choices come from."""

    def integer(self, lo: int, hi: int) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def choice(self, xs: Sequence):
        return xs[self.integer(0, len(xs) - 1)]

    def flip(self, p: float = 0.5) -> bool:
        """True with probability ``p`` (shrinks towards False)."""
        return self.integer(0, 99) >= 100 - int(p * 100)


class RandomSource(Source):
    """Choices from a seeded ``random.Random``."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class DrawSource(Source):
    """Choices from hypothesis' ``draw`` (shrinkable)."""

    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))


# -- expressions --------------------------------------------------------------------------------


#: a scope key (never a type, so no variable is drawn from it) set once a guard may have
#: narrowed `input.o` (an `if` whose branches leave — `fail`, `return` — or a `require` on it):
#: the rest of the block and what nests in it compare no `input.o == null`
NARROWED_O = "#narrowed input.o"


@dataclass
class E:
    """An expression: its source, its Python model and whether it is a literal (a fresh literal
    type: two of them, or a literal against a list of literals, may never overlap)."""

    src: str
    fn: Callable[[dict], Any]
    lit: bool = False
    pre: list[str] = field(default_factory=list)  # `let`s the statement must emit first


@dataclass
class Clause:
    """What the plan must hold for an agent written with marker ``marker``."""

    marker: str
    checks: list[tuple[str, Any]] = field(default_factory=list)


@dataclass
class Program:
    source: str
    evaluate: Callable[[dict], tuple]
    expected: set[str]
    agents: dict[str, Any]  # marker -> the answer the scripted model gives (JSON value)
    clauses: list[Clause]
    concurrency: list[Any]  # a parallel map's expected concurrency (int or "template")
    top: dict[str, Any]  # deadline / budget expected at the plan's top level
    constructs: set[str]
    fields: list[str]  # the input fields it declares (:meth:`input_for` keeps those)
    tolerate: list[Any] = field(default_factory=list)  # each tolerating map's `tolerate`
    catches: int = 0  # the `catch` expressions written (each guards one step)

    def input_for(self, inp: dict) -> dict:
        """``inp`` (from :func:`draw_input`) restricted to the fields the program declares."""
        return {k: v for k, v in inp.items() if k in self.fields}

    def reply(self, request: dict) -> Any:
        """The scripted model's answer to a chat request: an agent's answer by the marker of
        its task, a judge's yes/no by :func:`judge_says` on its prompt."""
        messages = request.get("messages") or []
        system = " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")
        user = [m for m in messages if m.get("role") == "user"]
        text = str(user[-1].get("content")) if user else ""
        if "strict judge" in system:
            return "yes" if judge_says(text) else "no"
        for marker, value in self.agents.items():
            if f"[{marker}]" in text:
                return value
        raise AssertionError(f"no scripted answer for {text[:200]!r}")


class Gen:
    """Draws one program (see the module docstring)."""

    def __init__(self, src: Source, mode: str = "compile"):
        self.r = src
        self.mode = mode
        self.n = 0
        self.agents: dict[str, Any] = {}
        self.clauses: list[Clause] = []
        self.concurrency: list[Any] = []
        self.expected: set[str] = set()
        self.seen: set[str] = set()
        self.top: dict[str, Any] = {}
        self.tolerate: list[Any] = []
        self.catches = 0
        self.fail_ok = True

    # helpers
    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def pick(self, xs):
        return self.r.choice(list(xs))

    def flip(self, p: float = 0.5) -> bool:
        return self.r.flip(p)

    def tag(self, *names: str) -> None:
        self.seen.update(names)

    def names(self, scope: dict[str, str], ty: str) -> list[str]:
        return [n for n, t in scope.items() if t == ty]

    # -- pure expressions ----------------------------------------------------------------------
    def pure(self, ty: str, scope: dict[str, str], depth: int) -> E:
        names = self.names(scope, ty)
        leaf = depth <= 0 or not self.flip(0.45)
        if leaf and names and self.flip(0.7):
            n = self.pick(names)
            return E(n, lambda env, n=n: env[n])
        if not leaf and ty in LIBRARY_TYPES and self.flip(0.15):
            return self.library(ty, scope, depth)
        return getattr(self, "p_" + ty.replace("[]", "s").replace("?", "_opt"))(scope, depth, leaf)

    def p_int(self, scope, depth, leaf) -> E:
        if leaf:
            if self.flip(0.15):
                v = -self.r.integer(1, 5)
                self.tag("lit-neg")
                return E(f"-{-v}", lambda env, v=v: v, lit=True)
            v = self.r.integer(0, 9)
            self.tag("lit-int")
            return E(str(v), lambda env, v=v: v, lit=True)
        kind = self.pick(["+", "-", "*", "%", "count", "tcount", "coalesce", "id", "index"])
        if kind == "count":
            lt = self.pick(["int[]", "text[]", "Item[]"])
            a = self.pure(lt, scope, depth - 1)
            self.tag("count")
            return E(f"({a.src}).count", lambda env, f=a.fn: len(f(env)))
        if kind == "tcount":
            a = self.pure("text", scope, depth - 1)
            self.tag("count")
            return E(f"({a.src}).count", lambda env, f=a.fn: len(f(env)))
        if kind == "coalesce":
            a = self.pure("int?", scope, depth - 1)
            if a.lit:  # `null ?? 4` is the literal 4 (and `4 == 7` never overlaps)
                a = E("input.o", lambda env: env["input.o"])
            b = self.pure("int", scope, depth - 1)
            self.tag("coalesce")

            def co(env, fa=a.fn, fb=b.fn):
                v = fa(env)
                return fb(env) if v is None else v

            return E(f"({a.src} ?? {b.src})", co)
        if kind == "id":
            a = self.pure("Item", scope, depth - 1)
            self.tag("member")
            return E(f"({a.src}).id", lambda env, f=a.fn: f(env)["id"])
        if kind == "index":
            lst = self.pure("int[]", scope, depth - 1)
            i = self.r.integer(0, 3)
            d = self.pure("int", scope, depth - 1)
            self.tag("index", "coalesce")

            def at(env, fl=lst.fn, i=i, fd=d.fn):
                xs = fl(env)
                return xs[i] if i < len(xs) else fd(env)

            return E(f"(({lst.src})[{i}] ?? {d.src})", at)
        a = self.pure("int", scope, depth - 1)
        if kind == "%":
            m = self.r.integer(1, 4)
            self.tag("modulo")
            return E(f"({a.src} % {m})", lambda env, f=a.fn, m=m: f(env) % m)
        b = self.pure("int", scope, depth - 1)
        ops = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}
        self.tag("arith")
        return E(
            f"({a.src} {kind} {b.src})",
            lambda env, fa=a.fn, fb=b.fn, g=ops[kind]: g(fa(env), fb(env)),
        )

    def p_int_opt(self, scope, depth, leaf) -> E:
        if self.flip(0.6):
            self.tag("optional-field")
            return E("input.o", lambda env: env["input.o"])
        if self.flip(0.3):
            self.tag("lit-null")
            return E("null", lambda env: None, lit=True)
        return self.pure("int", scope, depth - 1)

    def p_text(self, scope, depth, leaf) -> E:
        if leaf:
            if self.flip(0.2):
                v = self.pick(['q"t', "1$2", "a\nb", "tab\there"])
                self.tag("lit-escape")
                return E(flow_string(v), lambda env, v=v: v, lit=True)
            v = self.pick(TEXTS)
            self.tag("lit-text")
            return E(json.dumps(v, ensure_ascii=False), lambda env, v=v: v, lit=True)
        kind = self.pick(["interp", "concat", "triple", "kind", "note", "alone"])
        if kind == "interp":
            a = self.pure(
                self.pick(["int", "text", "bool", "int[]", "Item", "int?"]), scope, depth - 1
            )
            b = self.pure("text", scope, depth - 1)
            self.tag("interp")
            return E(
                f'"<${{{a.src}}}:${{{b.src}}}>"',
                lambda env, fa=a.fn, fb=b.fn: f"<{interp(fa(env))}:{interp(fb(env))}>",
            )
        if kind == "alone":
            a = self.pure(self.pick(["int", "bool", "int[]", "text"]), scope, depth - 1)
            self.tag("interp-alone")
            return E(f'"${{{a.src}}}"', lambda env, fa=a.fn: interp(fa(env)))
        if kind == "triple":
            a = self.pure(self.pick(["int", "text"]), scope, depth - 1)
            self.tag("lit-triple", "interp")
            src = '"""\n      first ${' + a.src + '}\n        second\n      """'
            return E(src, lambda env, fa=a.fn: f"first {interp(fa(env))}\n  second")
        if kind == "kind":
            a = self.pure("Kind", scope, depth - 1)
            self.tag("concat-text")
            return E(f'("k:" + {a.src})', lambda env, fa=a.fn: "k:" + fa(env))
        if kind == "note":
            a = self.pure("Item", scope, depth - 1)
            b = self.pure("text", scope, depth - 1)
            self.tag("optional-field", "coalesce", "member")

            def note(env, fa=a.fn, fb=b.fn):
                v = fa(env).get("note")
                return fb(env) if v is None else v

            return E(f"(({a.src}).note ?? {b.src})", note)
        a = self.pure("text", scope, depth - 1)
        b = self.pure("text", scope, depth - 1)
        self.tag("concat-text")
        return E(f"({a.src} + {b.src})", lambda env, fa=a.fn, fb=b.fn: fa(env) + fb(env))

    def p_bool(self, scope, depth, leaf) -> E:
        kinds = ["cmp", "eq", "lit", "flag", "kindeq"]
        if not leaf:
            kinds += ["in", "not-in", "range", "not", "and", "or", "null"]
        kind = self.pick(kinds)
        if kind == "lit":
            v = self.flip()
            self.tag("lit-bool")
            return E("true" if v else "false", lambda env, v=v: v, lit=True)
        if kind == "flag":
            return E("input.flag", lambda env: env["input.flag"])
        if kind == "kindeq":
            a = self.pure("Kind", scope, depth - 1)
            k = self.pick(KINDS)
            op = self.pick(["==", "!="])
            self.tag("eq")
            if a.lit:  # `"bug" == "doc"` never overlaps: compare a field instead
                a = E("input.kind", lambda env: env["input.kind"])
            return E(
                f"({a.src} {op} {json.dumps(k)})",
                lambda env, fa=a.fn, k=k, op=op: (fa(env) == k) == (op == "=="),
            )
        if kind in ("cmp", "eq"):
            ty = "int" if kind == "cmp" else self.pick(["int", "text"])
            a = self.pure(ty, scope, depth - 1)
            b = self.pure(ty, scope, depth - 1)
            if a.lit and b.lit:
                b = E(a.src, a.fn, lit=True)  # two literals: only equal ones may be compared
            op = self.pick(["<", "<=", ">", ">=", "==", "!="]) if kind == "cmp" else "=="
            self.tag("cmp" if op not in ("==", "!=") else "eq")
            fns = {
                "<": lambda x, y: x < y,
                "<=": lambda x, y: x <= y,
                ">": lambda x, y: x > y,
                ">=": lambda x, y: x >= y,
                "==": lambda x, y: x == y,
                "!=": lambda x, y: x != y,
            }
            return E(
                f"({a.src} {op} {b.src})",
                lambda env, fa=a.fn, fb=b.fn, g=fns[op]: g(fa(env), fb(env)),
            )
        if kind in ("in", "not-in"):
            lt = self.pick(["int[]", "text[]"])
            a = self.pure(ELEM[lt], scope, depth - 1)
            b = self.pure(lt, scope, depth - 1)
            if a.lit and b.lit:  # `5 in [1, 2]` never overlaps: test a value of the input
                if lt == "int[]":
                    a = E("input.k", lambda env: env["input.k"])
                else:
                    a = E('"<${input.k}>"', lambda env: f"<{env['input.k']}>")
            op = "in" if kind == "in" else "not in"
            self.tag(kind)
            return E(
                f"({a.src} {op} {b.src})",
                lambda env, fa=a.fn, fb=b.fn, neg=(kind == "not-in"): (fa(env) in fb(env)) != neg,
            )
        if kind == "range":
            a = self.pure("int", scope, depth - 1)
            lo = self.r.integer(-2, 3)
            hi = lo + self.r.integer(0, 5)
            self.tag("in-range")
            return E(
                f"({a.src} in {lo}..{hi})", lambda env, fa=a.fn, lo=lo, hi=hi: lo <= fa(env) <= hi
            )
        if kind == "null":
            # after a guard on `input.o` (`if … { fail }`, `require … else fail`) the checker
            # may have narrowed it: `input.o == null` there is `no-overlap`
            if scope.get(NARROWED_O) or self.flip():
                a = self.pure("Item", scope, depth - 1)
                self.tag("optional-field", "eq")
                return E(
                    f"(({a.src}).note == null)", lambda env, fa=a.fn: fa(env).get("note") is None
                )
            self.tag("eq")
            return E("(input.o == null)", lambda env: env["input.o"] is None)
        if kind == "not":
            a = self.pure("bool", scope, depth - 1)
            self.tag("not")
            return E(f"(not {a.src})", lambda env, fa=a.fn: not fa(env))
        a = self.pure("bool", scope, depth - 1)
        b = self.pure("bool", scope, depth - 1)
        self.tag(kind)
        if kind == "and":
            return E(f"({a.src} and {b.src})", lambda env, fa=a.fn, fb=b.fn: fa(env) and fb(env))
        return E(f"({a.src} or {b.src})", lambda env, fa=a.fn, fb=b.fn: fa(env) or fb(env))

    def p_Kind(self, scope, depth, leaf) -> E:
        if leaf or self.flip(0.4):
            k = self.pick(KINDS)
            return E(json.dumps(k), lambda env, k=k: k, lit=True)
        if self.flip():
            return E("input.kind", lambda env: env["input.kind"])
        a = self.pure("Item", scope, depth - 1)
        self.tag("member")
        return E(f"({a.src}).kind", lambda env, fa=a.fn: fa(env)["kind"])

    def p_Item(self, scope, depth, leaf) -> E:
        """An `Item` that is not a literal (a name, or an index with a literal default): a
        bare object literal has an inline type, not `Item` (no `note` field to read)."""
        xs = (
            self.pure("Item[]", scope, depth - 1)
            if not leaf
            else E("input.items", lambda env: env["input.items"])
        )
        i = self.r.integer(0, 2)
        d = self.item_literal(scope, 0)
        self.tag("index", "coalesce")

        def at(env, fl=xs.fn, i=i, fd=d.fn):
            items = fl(env)
            return items[i] if i < len(items) else fd(env)

        return E(f"(({xs.src})[{i}] ?? {d.src})", at)

    def typed_value(self, ty: str, scope, depth: int) -> E:
        """A value where the type ``ty`` is expected (annotated `let`, typed stage's `return`,
        `ask … default`): object and list literals of `Item` may appear here."""
        if ty == "Item" and self.flip(0.5):
            return self.item_literal(scope, depth - 1)
        if ty == "Item[]" and self.flip(0.3):
            items = [self.item_literal(scope, depth - 1) for _ in range(self.r.integer(1, 2))]
            self.tag("lit-list")
            return E(
                "[" + ", ".join(i.src for i in items) + "]",
                lambda env, fs=[i.fn for i in items]: [f(env) for f in fs],
            )
        return self.pure(ty, scope, depth)

    def item_literal(self, scope, depth) -> E:
        """An `Item` object literal within the type's constraints (an `ask` default or an
        agent's answer is checked against them): ``id`` in 0…1000, a short ``note``."""
        i = self.pure("int", scope, depth)
        if not i.lit or i.fn({}) < 0:
            i = E(f"({i.src} % 7)", lambda env, f=i.fn: f(env) % 7)
        k = self.pure("Kind", scope, depth)
        tags = self.pure("text[]", scope, depth)
        note = None
        if self.flip(0.4):
            v = self.pick(TEXTS)
            note = (
                E(json.dumps(v, ensure_ascii=False), lambda env, v=v: v)
                if self.flip()
                else E("null", lambda env: None)
            )
        self.tag("lit-object")
        src = f"{{ id: {i.src}, kind: {k.src}, tags: {tags.src}"
        if note is not None:
            src += f", note: {note.src}"
        src += " }"

        def build(env, fi=i.fn, fk=k.fn, ft=tags.fn, fn=note.fn if note else None):
            out = {"id": fi(env), "kind": fk(env), "tags": ft(env)}
            if fn is not None:
                out["note"] = fn(env)
            return out

        return E(src, build)

    def p_ints(self, scope, depth, leaf) -> E:
        return self.list_expr("int[]", scope, depth, leaf)

    def p_texts(self, scope, depth, leaf) -> E:
        return self.list_expr("text[]", scope, depth, leaf)

    def p_Items(self, scope, depth, leaf) -> E:
        if leaf or self.flip(0.4):
            return E("input.items", lambda env: env["input.items"])
        return self.list_expr("Item[]", scope, depth, leaf)

    def list_expr(self, ty: str, scope, depth, leaf) -> E:
        if ty == "int[]" and not leaf and self.flip(0.2):
            a = self.pure("Item[]", scope, depth - 1)
            self.tag("projection")
            return E(f"({a.src})[*].id", lambda env, fa=a.fn: [x["id"] for x in fa(env)])
        if leaf or depth <= 0 or self.flip():
            items = [self.pure(ELEM[ty], scope, depth - 1) for _ in range(self.r.integer(1, 2))]
            if ty == "Item[]":
                items = [self.p_Item(scope, depth - 1, True) for _ in items]
            self.tag("lit-list")
            return E(
                "[" + ", ".join(i.src for i in items) + "]",
                lambda env, fs=[i.fn for i in items]: [f(env) for f in fs],
                lit=all(i.lit for i in items),
            )
        a = self.pure(ty, scope, depth - 1)
        b = self.pure(ty, scope, depth - 1)
        self.tag("concat-list")
        return E(f"({a.src} + {b.src})", lambda env, fa=a.fn, fb=b.fn: fa(env) + fb(env))

    # -- library functions and `if … then … else` (docs/reference/functions.md) -----------------
    def library(self, ty: str, scope: dict[str, str], depth: int) -> E:
        """A library call giving ``ty``, or a conditional expression whose arms do."""
        if self.flip(0.3):
            c = self.pure("bool", scope, depth - 1)
            a = self.pure(ty, scope, depth - 1)
            b = self.pure(ty, scope, depth - 1)
            self.tag("cond-expr")
            return E(
                f"(if {c.src} then {a.src} else {b.src})",
                lambda env, fc=c.fn, fa=a.fn, fb=b.fn: fa(env) if fc(env) else fb(env),
            )
        return getattr(self, "l_" + ty.replace("[]", "s"))(scope, depth - 1)

    def _call(self, tag: str, name: str, args: list[E], model: Callable, extra: str = "") -> E:
        self.tag(tag)
        src = f"{name}({', '.join(a.src for a in args)}{extra})"
        return E(src, lambda env, fs=[a.fn for a in args], m=model: m(*(f(env) for f in fs)))

    def l_int(self, scope, depth) -> E:
        kind = self.pick(["len", "tlen", "sum", "index_of", "abs", "clamp", "parse", "min"])
        if kind == "len":
            a = self.pure(self.pick(["int[]", "text[]", "Item[]"]), scope, depth)
            return self._call("lib-list", "len", [a], len)
        if kind == "tlen":
            return self._call("lib-text", "len", [self.pure("text", scope, depth)], len)
        if kind == "sum":
            return self._call("lib-list", "sum", [self.pure("int[]", scope, depth)], sum)
        if kind == "index_of":
            xs, x = self.pure("int[]", scope, depth), self.pure("int", scope, depth)
            return self._call(
                "lib-list", "index_of", [xs, x], lambda a, b: a.index(b) if b in a else -1
            )
        if kind == "abs":
            return self._call("lib-number", "abs", [self.pure("int", scope, depth)], abs)
        if kind == "clamp":
            lo = self.r.integer(-3, 3)
            hi = lo + self.r.integer(0, 6)
            return self._call(
                "lib-number",
                "clamp",
                [self.pure("int", scope, depth)],
                lambda x, lo=lo, hi=hi: max(lo, min(hi, x)),
                f", {lo}, {hi}" if lo >= 0 else f", ({lo}), {hi}",
            )
        if kind == "parse":
            a = self.pure("int", scope, depth)
            self.tag("lib-text")
            return E(f"parse_int(to_text({a.src}))", a.fn)
        xs, d = self.pure("int[]", scope, depth), self.pure("int", scope, depth)
        self.tag("lib-list", "coalesce")

        def least(env, fx=xs.fn, fd=d.fn):
            v = fx(env)
            return min(v) if v else fd(env)

        return E(f"(min({xs.src}) ?? {d.src})", least)

    def l_text(self, scope, depth) -> E:
        kind = self.pick(["join", "lower", "upper", "trim", "replace", "to_text", "slice", "pad"])
        if kind == "join":
            xs = self.pure(self.pick(["text[]", "int[]"]), scope, depth)
            sep = self.pick([", ", "", "-"])
            return self._call(
                "lib-text",
                "join",
                [xs],
                lambda v, sep=sep: sep.join(interp(x) for x in v),
                ", " + json.dumps(sep),
            )
        if kind == "to_text":
            a = self.pure(self.pick(["int", "int[]", "bool"]), scope, depth)
            return self._call("lib-text", "to_text", [a], interp)
        a = self.pure("text", scope, depth)
        if kind == "replace":
            return self._call(
                "lib-text", "replace", [a], lambda s: s.replace("a", "b"), ', "a", "b"'
            )
        if kind == "slice":
            i = self.r.integer(0, 2)
            return self._call("lib-text", "slice", [a], lambda s, i=i: s[i:], f", {i}")
        if kind == "pad":
            w = self.r.integer(0, 4)
            return self._call(
                "lib-text", "pad_start", [a], lambda s, w=w: s.rjust(w, "0"), f', {w}, "0"'
            )
        fns = {"lower": str.lower, "upper": str.upper, "trim": str.strip}
        return self._call("lib-text", kind, [a], fns[kind])

    def l_bool(self, scope, depth) -> E:
        kind = self.pick(["starts", "ends", "matches", "any", "all"])
        if kind in ("any", "all"):
            bs = [self.pure("bool", scope, depth) for _ in range(self.r.integer(1, 3))]
            self.tag("lib-list")
            fn = any if kind == "any" else all
            return E(
                f"{kind}([{', '.join(b.src for b in bs)}])",
                lambda env, fs=[b.fn for b in bs], fn=fn: fn([f(env) for f in fs]),
            )
        a = self.pure("text", scope, depth)
        if kind == "matches":
            return self._call(
                "lib-text",
                "matches",
                [a],
                lambda s: re.search("^[a-c]", s) is not None,
                ', "^[a-c]"',
            )
        b = self.pure("text", scope, depth)
        fn = str.startswith if kind == "starts" else str.endswith
        name = "starts_with" if kind == "starts" else "ends_with"
        return self._call("lib-text", name, [a, b], fn)

    def l_ints(self, scope, depth) -> E:
        kind = self.pick(["sort", "reverse", "unique", "take", "drop", "range", "flatten"])
        xs = self.pure("int[]", scope, depth)
        if kind in ("take", "drop"):
            n = self.r.integer(0, 3)
            fn = (lambda v, n=n: v[:n]) if kind == "take" else (lambda v, n=n: v[n:])
            return self._call("lib-list", kind, [xs], fn, f", {n}")
        if kind == "range":
            n = self.r.integer(0, 4)
            self.tag("lib-list")
            return E(f"range({n})", lambda env, n=n: list(range(n)))
        if kind == "flatten":
            ys = self.pure("int[]", scope, depth)
            self.tag("lib-list")
            return E(
                f"flatten([{xs.src}, {ys.src}])",
                lambda env, fa=xs.fn, fb=ys.fn: fa(env) + fb(env),
            )
        fns = {
            "sort": sorted,
            "reverse": lambda v: v[::-1],
            "unique": lambda v: list(dict.fromkeys(v)),
        }
        return self._call("lib-list", kind, [xs], fns[kind])

    def l_texts(self, scope, depth) -> E:
        kind = self.pick(["split", "lines", "sort", "keys"])
        if kind == "keys":
            a = self.pure("Item", scope, depth)
            return self._call("lib-list", "keys", [a], lambda o: list(o))
        a = self.pure("text" if kind != "sort" else "text[]", scope, depth)
        if kind == "split":
            return self._call("lib-text", "split", [a], lambda s: s.split(" "), ', " "')
        if kind == "lines":
            return self._call(
                "lib-text", "lines", [a], lambda s: re.split(r"\r\n|\r|\n", s.removesuffix("\n"))
            )
        return self._call("lib-list", "sort", [a], sorted)

    def l_Items(self, scope, depth) -> E:
        xs = self.pure("Item[]", scope, depth)
        desc = self.flip()
        return self._call(
            "lib-list",
            "sort_by",
            [xs],
            lambda v, desc=desc: sorted(v, key=lambda i: i["id"], reverse=desc),
            ', "-id"' if desc else ', "id"',
        )

    # -- effects ----------------------------------------------------------------------------------
    def effect(self, ty: str, scope: dict[str, str], depth: int, indent: str) -> E:
        """An effectful expression of type ``ty`` (a tool call, control expression, agent…)."""
        kinds = ["tool"] if ty in ("int", "text") else []
        if depth > 0:
            if ty in ("int[]", "text[]", "Item[]", "int"):
                kinds += ["map", "pmap"]
            if ty in ("int[]", "text[]", "Item[]"):
                kinds += ["filter", "judge"]
            if ty in ("int", "text"):
                kinds += ["reduce", "loop"]
        if ty in ("int", "text", "bool", "Item", "Kind", "text[]"):
            kinds += ["agent", "agent"]
        if ty in ("int", "text", "bool", "Kind", "Item"):
            kinds += ["ask"]
        if ty == "bool" or ty == "text[]":
            kinds += ["verify"]
        if ty == "int":
            kinds += ["untyped"]
        if ty == "text":
            kinds += ["handle"]
        if not kinds:
            return self.pure(ty, scope, 2)
        kind = self.pick(kinds)
        return getattr(self, "x_" + kind)(ty, scope, depth, indent)

    def x_tool(self, ty, scope, depth, indent) -> E:
        a = self.pure(ty, scope, 2)
        self.tag("tool-call")
        if ty == "int":
            e = E(f"user__inc(n: {a.src})", lambda env, fa=a.fn: fa(env) + 1)
        else:
            e = E(f"user__tag(t: {a.src})", lambda env, fa=a.fn: fa(env) + "!")
        return self.catch(e, ty, scope) if self.flip(0.25) else e

    def catch(self, guarded: E, ty: str, scope) -> E:
        """``guarded catch [on [codes]] [as err] { fallback }`` (the tools of
        :func:`catalog_functions` do not fail: its value is the guarded one's)."""
        self.catches += 1
        self.tag("catch")
        head = "catch"
        if self.flip():
            head += (
                " on [" + ", ".join(self.pick([["tool_error"], ["tool_error", "timeout"]])) + "]"
            )
            self.tag("catch-on")
        fallback = self.pure(ty, scope, 1).src
        if self.flip():
            head += " as err"
            self.tag("catch-as")
            fallback = "err.message.count" if ty == "int" else "err.message"
        src = f"{guarded.src} {head} {{ {fallback} }}"
        return E(f"({src})" if self.flip() else src, guarded.fn)

    def x_untyped(self, ty, scope, depth, indent) -> E:
        a = self.pure("int", scope, 2)
        self.tag("untyped-tool", "tool-call")
        return E(f"user__echo(v: {a.src})", lambda env, fa=a.fn: fa(env))

    def x_handle(self, ty, scope, depth, indent) -> E:
        a = self.pure("text", scope, 2)
        self.tag("extern-type", "tool-call")
        return E(f"user__read(h: user__open(t: {a.src}))", lambda env, fa=a.fn: fa(env) + "?")

    def limit(self, scope: dict[str, str], indent: str) -> tuple[str, Callable, Any, list[str]]:
        """A `limit`: ``(source, fn(env) -> value, expected concurrency, lets to emit)``; a
        limit read from the input (which may fail at run time) only where a failure may be
        drawn (not in a `parallel map` or tolerating `map` body: see :meth:`block`)."""
        kind = self.pick(["literal", "const", "let"] + (["run"] if self.fail_ok else []))
        if kind == "literal":
            v = self.r.integer(1, 3)
            self.tag("limit-literal")
            return str(v), lambda env, v=v: v, v, []
        if kind == "const":
            a, b = self.r.integer(1, 2), self.r.integer(0, 2)
            self.tag("limit-const")
            return f"{a} + {b}", lambda env, v=a + b: v, a + b, []
        if kind == "let":
            name = self.fresh("lim")
            v = self.r.integer(1, 3)
            self.tag("limit-let")
            return name, lambda env, v=v: v, v, [f"{indent}let {name} = {v}"]
        self.tag("limit-run")
        if self.flip(0.7):
            return "input.k + 3", lambda env: env["input.k"] + 3, "template", []
        return "input.k", lambda env: env["input.k"], "template", []

    def x_map(self, ty, scope, depth, indent, parallel: bool = False) -> E:
        over_ty = self.pick(["int[]", "text[]", "Item[]"])
        over = self.pure(over_ty, scope, 1)
        var = self.fresh("it")
        inner = {**scope, var: ELEM[over_ty], "index": "int"}
        elem = ELEM[ty] if ty in ELEM else "int"
        # a tolerating map's body does not fail here: its value is every item's (`.values`);
        # not over `Item` bodies: the expected type does not flow through `.values` into them
        tolerate = elem != "Item" and self.flip(0.3)
        may_fail = not parallel and not tolerate
        body, fbody = self.block(inner, elem, depth - 1, indent, may_fail=may_fail)
        head = f"map {over.src} as {var}"
        pre: list[str] = []
        limit_fn = None
        if parallel:
            self.tag("map-parallel")
            if self.flip(0.7):
                lsrc, limit_fn, conc, pre = self.limit(scope, indent)
                head = f"parallel map {over.src} as {var} limit {lsrc}"
                self.concurrency.append(conc)
            else:
                head = f"parallel map {over.src} as {var}"
                self.concurrency.append(4)
        else:
            self.tag("map")
        errors = False
        if tolerate:
            if self.flip():
                n: Any = self.r.integer(0, 3)
                head += f" tolerate {n}"
                self.tag("tolerate-count")
            else:
                n = f"{self.pick([0, 10, 50, 100])}%"
                head += f" tolerate {n}"
                self.tag("tolerate-percent")
            self.tolerate.append(n)
            errors = ty == "int" and self.flip()

        written = lsrc if limit_fn is not None else ""

        def run_map(env, fover=over.fn, fbody=fbody, var=var, limit_fn=limit_fn, lsrc=written):
            items = fover(env)
            if limit_fn is not None:
                n = limit_fn(env)
                if not 1 <= n <= 1000:
                    raise Fail(
                        "validation",
                        f"the limit `{lsrc}` of the `parallel map` must be an integer from 1 "
                        f"to 1000, got {n}",
                    )
            return [fbody({**env, var: x, "index": i}) for i, x in enumerate(items)]

        src = f"{head} {body}"
        if errors:
            self.tag("outcome-errors")
            return E(f"({src}).errors.count", lambda env, g=run_map: len(g(env)) * 0, pre=pre)
        if tolerate:
            self.tag("outcome-values")
            src = f"({src}).values"
        if ty == "int":
            return E(f"({src}).count", lambda env, g=run_map: len(g(env)), pre=pre)
        return E(src, run_map, pre=pre)

    def x_pmap(self, ty, scope, depth, indent) -> E:
        return self.x_map(ty, scope, depth, indent, parallel=True)

    def x_filter(self, ty, scope, depth, indent) -> E:
        over = self.pure(ty, scope, 1)
        var = self.fresh("it")
        inner = {**scope, var: ELEM[ty], "index": "int"}
        cond = self.pure("bool", inner, 2)
        self.tag("filter")

        def run_filter(env, fover=over.fn, fcond=cond.fn, var=var):
            return [x for i, x in enumerate(fover(env)) if fcond({**env, var: x, "index": i})]

        return E(f"filter {over.src} as {var} where {cond.src}", run_filter)

    def x_judge(self, ty, scope, depth, indent) -> E:
        over = self.pure(ty, scope, 1)
        var = self.fresh("it")
        inner = {**scope, var: ELEM[ty], "index": "int"}
        a = self.pure(self.pick([ELEM[ty], "int"]) if ELEM[ty] != "Item" else "int", inner, 1)
        marker = self.fresh("J")
        self.tag("filter-judge")
        prompt = f'"[{marker}] keep ${{{var}}} (${{{a.src}}})?"'

        def run_judge(env, fover=over.fn, fa=a.fn, var=var, marker=marker):
            out = []
            for i, x in enumerate(fover(env)):
                inner_env = {**env, var: x, "index": i}
                text = f"[{marker}] keep {interp(x)} ({interp(fa(inner_env))})?"
                if judge_says(text):
                    out.append(x)
            return out

        return E(f"filter {over.src} as {var} where judge {prompt}", run_judge)

    def x_reduce(self, ty, scope, depth, indent) -> E:
        over_ty = self.pick(["int[]", "text[]", "Item[]"])
        over = self.pure(over_ty, scope, 1)
        var = self.fresh("it")
        acc = self.fresh("acc")
        init = self.pure(ty, scope, 1)
        inner = {**scope, var: ELEM[over_ty], "index": "int", acc: ty}
        body, fbody = self.block(inner, ty, depth - 1, indent, may_fail=True)
        typed = self.flip()
        self.tag("reduce", *(["reduce-typed"] if typed else []))
        head = (
            f"reduce {over.src} as {var}, {acc}: {ty} = {init.src}"
            if typed
            else (f"reduce {over.src} as {var}, {acc} = {init.src}")
        )
        if not typed and init.lit:
            head = f"reduce {over.src} as {var}, {acc}: {ty} = {init.src}"

        def run_reduce(env, fover=over.fn, finit=init.fn, fbody=fbody, var=var, acc=acc):
            a = finit(env)
            for i, x in enumerate(fover(env)):
                a = fbody({**env, var: x, "index": i, acc: a})
            return a

        return E(f"{head} {body}", run_reduce)

    def x_loop(self, ty, scope, depth, indent) -> E:
        """``(loop up to N as r, s[: T] = init { … } [until c else (fail "m" | v)])``: the bound
        a literal, or ``input.k`` where a failure may be drawn (a bad bound fails the step)."""
        self.tag("loop")
        if self.fail_ok and self.flip(0.25):
            self.tag("loop-bound-run")
            bound_src, fbound = "input.k", (lambda env: env["input.k"])
        else:
            n = self.r.integer(0, 3)
            bound_src, fbound = str(n), (lambda env, n=n: n)
        var = self.fresh("round")
        st = self.fresh("st")
        init = self.pure(ty, scope, 1)
        inner = {**scope, var: "int", st: ty}
        body, fbody = self.block(inner, ty, depth - 1, indent, may_fail=True)
        typed = self.flip() or init.lit
        if typed:
            self.tag("loop-typed")
        head = f"loop up to {bound_src} as {var}, {st}{': ' + ty if typed else ''} = {init.src}"
        until = fail = value = None
        if self.flip(0.6):
            self.tag("loop-until")
            until = self.pure("bool", inner, 1)
            if self.fail_ok and self.flip():
                self.tag("loop-else-fail")
                fail = self.pick(["not done", "gave up"])
            else:
                self.tag("loop-else-value")
                value = self.pure(ty, inner, 1)
        tail = ""
        if until is not None:
            tail = f" until {until.src} else " + (f'fail "{fail}"' if fail else value.src)

        def run_loop(
            env, fb=fbound, fi=init.fn, fbody=fbody, u=until, f=fail, v=value, bs=bound_src
        ):
            n = fb(env)
            if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 1000:
                raise Fail(
                    "validation",
                    f"the loop bound `{bs}` must be an integer from 0 to 1000, got {n}",
                )
            state, r = fi(env), 0
            for r in range(1, n + 1):
                state = fbody({**env, var: r, st: state})
                if u is not None and u.fn({**env, var: r, st: state}):
                    return state
            if u is None:
                return state
            if f is not None:
                raise Fail("loop_exhausted", f)
            return v.fn({**env, var: r, st: state})

        return E(f"({head} {body}{tail})", run_loop)

    # agents
    def answer_for(self, ty: str) -> tuple[str, Any, Any, str]:
        """``(expect type source, value, wire answer, construct tag)`` for an agent's answer."""
        if ty == "int":
            if self.flip(0.3):
                v = self.r.integer(0, 10)
                return (
                    "Score",
                    {"value": v, "label": "ok"},
                    {"value": v, "label": "ok"},
                    "expect-constrained",
                )
            v = self.r.integer(-5, 20)
            return "int", v, {"value": v}, "expect-scalar"
        if ty == "text":
            v = self.pick(["fine", "é ok", ""])
            return "text", v, {"value": v}, "expect-scalar"
        if ty == "bool":
            v = self.flip()
            return "bool", v, {"value": v}, "expect-scalar"
        if ty == "Kind":
            v = self.pick(KINDS)
            if self.flip():
                return "Kind", v, {"value": v}, "expect-union"
            return '"bug" | "debt" | "doc"', v, {"value": v}, "expect-union"
        if ty == "Item":
            v = {"id": self.r.integer(0, 1000), "kind": self.pick(KINDS), "tags": ["t"]}
            if self.flip():
                v["note"] = self.pick(["n", None])
            return "Item", v, dict(v), "expect-object"
        v = [self.pick(TEXTS) for _ in range(self.r.integer(0, 2))]
        return "text[]", v, {"value": v}, "expect-list"

    def x_agent(self, ty, scope, depth, indent) -> E:
        marker = self.fresh("A")
        expect, value, wire, tag = self.answer_for(ty)
        self.agents[marker] = wire
        clause = Clause(marker)
        self.clauses.append(clause)
        self.tag("agent", tag)
        pre: list[str] = []
        inner = indent + "  "
        lines: list[str] = []
        # target
        target = "helper"
        if self.mode == "compile" and self.flip(0.3):
            if self.flip():
                target = "dev.main"
                self.tag("target-team-main")
            else:
                m = self.pick(['"alice"', "input.who"])
                target = f"dev.member({m})"
                self.tag("target-team-member")
        else:
            self.tag("target-alias")
        # task
        a = self.pure(self.pick(["int", "text", "Item"]), scope, 1)
        if self.flip(0.3):
            self.tag("clause-task-triple")
            lines.append(f'{inner}task """\n{inner}  [{marker}] do ${{{a.src}}}\n{inner}  """')
        else:
            lines.append(f'{inner}task "[{marker}] do ${{{a.src}}}"')
        lines.append(f"{inner}expect {expect}")
        extra = []
        if self.flip(0.3):
            s = self.pure("text", scope, 1)
            extra.append(f'system "Be brief. ${{{s.src}}}"')
            clause.checks.append(("system_prompt", None))
            self.tag("clause-system")
        if self.flip(0.3):
            name = "chat" if self.mode == "run" else self.pick(["chat", "fast", "judge"])
            extra.append(f'model "{name}"')
            clause.checks.append(("model", name))
            self.tag("clause-model")
        if self.flip(0.4):
            v = self.pure(self.pick(["int", "text[]", "Item"]), scope, 1)
            key = self.pick(["data", '"the data"'])
            if key.startswith('"'):
                self.tag("lit-object-quoted-key")
            extra.append(f"input {{ {key}: {v.src}, k: input.k }}")
            clause.checks.append(("input", None))
            self.tag("clause-input")
        r = self.r.integer(0, 3)
        if r == 0:
            extra.append("tools none")
            clause.checks.append(("tools", "none"))
            self.tag("clause-tools-none")
        elif r == 1:
            extra.append("tools [user__inc, user__tag]")
            clause.checks.append(("tools", ["user__inc", "user__tag"]))
            self.tag("clause-tools-list")
        elif r == 2:
            extra.append('tools ["user__*"]')
            clause.checks.append(("tools", ["user__*"]))
            self.tag("clause-tools-pattern")
        if self.flip(0.2):
            extra.append('write ["notes.md", input.dir]')
            clause.checks.append(("write", None))
            self.tag("clause-write")
        if self.flip(0.5):
            line, want, more = self.timeout_clause(scope, inner)
            extra.append(line)
            pre += more
            if want is not None:
                clause.checks.append(("timeout", want))
        if self.flip(0.4):
            line, want, more = self.retry_clause(inner)
            extra.append(line)
            pre += more
            if want is not None:
                clause.checks.append(("retry", want))
        max_fn = None
        if self.flip(0.5):
            line, want, more, max_fn = self.max_iterations_clause(inner)
            extra.append(line)
            pre += more
            clause.checks.append(("max_iterations", want))
        if self.flip(0.25):
            line, want = self.budget_clause()
            extra.append(line)
            if want is not None:
                clause.checks.append(("budget", want))
        self.r_shuffle(extra)
        lines += [f"{inner}{x}" for x in extra]
        src = f"agent({target}) {{\n" + "\n".join(lines) + f"\n{indent}}}"
        if expect == "Score":
            src = f"({src}).value"
            value = value["value"]

        def run_agent(env, value=value, max_fn=max_fn):
            if max_fn is not None:
                n = max_fn(env)
                if not 1 <= n <= 1000:
                    raise Fail(
                        "validation", f"`max_iterations` must be an integer from 1 to 1000, got {n}"
                    )
            return value

        return E(src, run_agent, pre=pre)

    def r_shuffle(self, xs: list) -> None:
        for i in range(len(xs) - 1, 0, -1):
            j = self.r.integer(0, i)
            xs[i], xs[j] = xs[j], xs[i]

    def timeout_clause(self, scope, indent) -> tuple[str, Any, list[str]]:
        kinds = ["literal", "literal", "const", "let"] + (["run"] if self.mode == "compile" else [])
        kind = self.pick(kinds)
        if kind == "literal":
            t = self.pick(["30s", "2m", "1h30m", "1500ms"])
            self.tag("clause-timeout-literal")
            return f"timeout {t}", t, []
        if kind == "const":
            a, b = self.pick(["1m", "2m"]), self.pick(["30s", "250ms"])
            ms = sum(
                int(x[:-1]) * DUR_MS[x[-1]] if not x.endswith("ms") else int(x[:-2]) for x in (a, b)
            )
            self.tag("clause-timeout-const")
            return f"timeout {a} + {b}", duration_text(ms), []
        if kind == "let":
            name = self.fresh("t")
            t = self.pick(["45s", "3m"])
            self.tag("clause-timeout-let")
            return f"timeout {name}", t, [f"{indent[:-2]}let {name} = {t}"]
        self.tag("clause-timeout-run")
        self.expected.add("invalid-value")
        return self.pick(["timeout input.t", "timeout input.t + 1s"]), None, []

    def retry_clause(self, indent) -> tuple[str, Any, list[str]]:
        on = self.pick([None, ["transient"], ["timeout", "rate_limit"]])
        on_src = f", on: [{', '.join(on)}]" if on else ""
        want_on = on or ["transient"]
        kinds = ["literal", "literal", "const", "let"] + (["run"] if self.mode == "compile" else [])
        kind = self.pick(kinds)
        self.tag("clause-retry")
        if kind == "literal":
            n = self.r.integer(0, 2)
            return f"retry {{ attempts: {n}{on_src} }}", {"attempts": n, "on": want_on}, []
        if kind == "const":
            self.tag("clause-retry-const")
            return f"retry {{ attempts: 1 + 1{on_src} }}", {"attempts": 2, "on": want_on}, []
        if kind == "let":
            self.tag("clause-retry-const")
            name = self.fresh("tries")
            return (
                f"retry {{ attempts: {name}{on_src} }}",
                {"attempts": 1, "on": want_on},
                [f"{indent[:-2]}let {name} = 1"],
            )
        self.tag("clause-retry-run")
        self.expected.add("invalid-value")
        return f"retry {{ attempts: input.k{on_src} }}", None, []

    def max_iterations_clause(self, indent):
        # read from the input only where a run-time failure may be drawn (as `limit`)
        kind = self.pick(["literal", "const", "let"] + (["run"] if self.fail_ok else []))
        if kind == "literal":
            n = self.r.integer(1, 8)
            self.tag("clause-max-iter-literal")
            return f"max_iterations {n}", n, [], None
        if kind == "const":
            self.tag("clause-max-iter-const")
            return "max_iterations 2 * 3", 6, [], None
        if kind == "let":
            self.tag("clause-max-iter-const")
            name = self.fresh("rounds")
            return f"max_iterations {name}", 4, [f"{indent[:-2]}let {name} = 4"], None
        self.tag("clause-max-iter-run")
        if self.flip(0.7):
            return "max_iterations input.k + 3", "template", [], lambda env: env["input.k"] + 3
        return "max_iterations input.k", "template", [], lambda env: env["input.k"]

    def budget_clause(self) -> tuple[str, Any]:
        self.tag("clause-budget")
        if self.mode == "compile" and self.flip(0.15):
            self.tag("clause-budget-run")
            self.expected.add("invalid-value")
            return "budget { inferences: input.k }", None
        if self.flip():
            return "budget { inferences: 50, tokens: 1000 * 100 }", {
                "inferences": 50,
                "tokens": 100000,
            }
        return "budget { cost: 2.5 }", {"cost": 2.5}

    def x_ask(self, ty, scope, depth, indent) -> E:
        q = self.pure("text", scope, 1)
        exp = {"int": "int", "text": "text", "bool": "bool", "Kind": "Kind", "Item": "Item"}[ty]
        d = self.pure(ty, scope, 1)
        kinds = ["default"]
        if self.mode == "compile":
            kinds += ["else", "bare"]
        elif depth >= 99:  # pragma: no cover - run mode: only at the top of a statement
            kinds += ["else"]
        kind = self.pick(kinds)
        if kind == "default":
            self.tag("ask-default", "ask-expect")
            if ty == "text" and self.flip():
                return E(f'ask "Q: ${{{q.src}}}" default {d.src}', lambda env, fd=d.fn: fd(env))
            return E(
                f'ask "Q: ${{{q.src}}}" expect {exp} default {d.src}', lambda env, fd=d.fn: fd(env)
            )
        if kind == "else":
            self.tag("ask-else-fail", "ask-expect")
            return E(
                f'ask "Q?" expect {exp} else fail "no answer"',
                lambda env: (_ for _ in ()).throw(Fail("failed", "no answer")),
            )
        self.tag("ask-bare")
        if ty != "text":
            return E(f'ask "Q?" expect {exp} default {d.src}', lambda env, fd=d.fn: fd(env))
        return E('ask "Q?"', lambda env: None)

    def x_verify(self, ty, scope, depth, indent) -> E:
        checks = []
        for _ in range(self.r.integer(0, 2)):
            c = self.pure("bool", scope, 1)
            msg = self.fresh("check failed ")
            checks.append((c, msg))
        judges = []
        if not checks or self.flip(0.5):
            a = self.pure("int", scope, 1)
            judges.append((self.fresh("V"), a))
        items = [f'check {c.src} else "{m}"' for c, m in checks]
        items += [f'judge "[{mk}] is ${{{a.src}}} right?"' for mk, a in judges]
        self.tag(*(["verify-check"] if checks else []), *(["verify-judge"] if judges else []))

        def run_verify(env, checks=checks, judges=judges):
            failures = [m for c, m in checks if not c.fn(env)]
            for mk, a in judges:
                prompt = f"[{mk}] is {interp(a.fn(env))} right?"
                if not judge_says(prompt):
                    failures.append(prompt)
            return {"passed": not failures, "failures": failures}

        src = "verify { " + "  ".join(items) + " }"
        if ty == "bool":
            return E(f"({src}).passed", lambda env, g=run_verify: g(env)["passed"])
        self.tag("verify-failures")
        return E(f"({src}).failures", lambda env, g=run_verify: g(env)["failures"])

    # -- statements -------------------------------------------------------------------------------
    def stmts(self, scope, ret: str, depth: int, indent: str, *, top: bool = True):
        """Statements ending in a value; returns ``(lines, fn(env) -> value)``. ``top``: the
        block of a stage or control body, whose last expression statement is its value (in an
        `if` branch it is not: branches end in `return`)."""
        scope = dict(scope)
        lines: list[str] = []
        steps: list = []
        for _ in range(self.r.integer(0, 2 if top else 1)):
            ty = self.pick(TYPES[:-1])
            name = self.fresh("v")
            # `Kind`, `Item`, `Item[]` values are annotated: an unannotated literal widens
            annotated = ty in ("Kind", "Item", "Item[]") or self.flip(0.25)
            if self.flip(0.6):
                e = self.effect(ty, scope, depth, indent)
            elif annotated:
                e = self.typed_value(ty, scope, 2)
            else:
                e = self.pure(ty, scope, 2)
            lines += e.pre
            if annotated:
                lines.append(f"{indent}let {name}: {ty} = {e.src}")
                self.tag("let-annotated")
            else:
                lines.append(f"{indent}let {name} = {e.src}")
                self.tag("let")
            steps.append(("let", name, e.fn))
            scope[name] = ty
        if self.flip(0.15) and depth > 0:
            e = self.effect("int", scope, 0, indent)
            lines += e.pre
            lines.append(f"{indent}{e.src}")
            self.tag("tool-effect-stmt", "expr-stmt")
            steps.append(("effect", e.fn))
        if self.fail_ok and self.flip(0.2):
            cond = self.pure("bool", scope, 2)
            msg = self.fresh("m")
            lines.append(f'{indent}require {cond.src} else fail "failed {msg}"')
            if "input.o" in cond.src:
                scope[NARROWED_O] = NARROWED_O
            self.tag("require")
            steps.append(("require", cond.fn, f"failed {msg}"))
        if self.flip(0.3):
            cond = self.pure("bool", scope, 2)
            shapes = ["if", "if-else", "else-if"] + (["fail"] if self.fail_ok else [])
            shape = self.pick(shapes)
            if shape != "fail":
                then_lines, fthen = self.stmts(scope, ret, depth - 1, indent + "  ", top=False)
            if shape == "fail":
                msg = self.fresh("f")
                lines += [
                    f"{indent}if {cond.src} {{",
                    f'{indent}  fail "failed {msg}"',
                    f"{indent}}}",
                ]
                self.tag("fail", "if")
                if "input.o" in cond.src:
                    scope[NARROWED_O] = NARROWED_O
                steps.append(("require", lambda env, c=cond.fn: not c(env), f"failed {msg}"))
            elif shape == "if":
                lines += [f"{indent}if {cond.src} {{", *then_lines, f"{indent}}}"]
                self.tag("if")
                if "input.o" in cond.src:  # its branch returns: a guard as `fail` is
                    scope[NARROWED_O] = NARROWED_O
                steps.append(("if", cond.fn, fthen))
            elif shape == "if-else":
                else_lines, felse = self.stmts(scope, ret, depth - 1, indent + "  ", top=False)
                lines += [f"{indent}if {cond.src} {{", *then_lines, f"{indent}}} else {{"]
                lines += [*else_lines, f"{indent}}}"]
                self.tag("if-else")
                steps.append(("ifelse", cond.fn, fthen, felse))
                return lines, self._runner(steps)  # both branches leave: the block ends here
            else:
                else_lines, felse = self.stmts(scope, ret, depth - 1, indent + "  ", top=False)
                c2 = self.pure("bool", scope, 1)
                lines += [
                    f"{indent}if {cond.src} {{",
                    *then_lines,
                    f"{indent}}} else if {c2.src} {{",
                ]
                lines += [*else_lines, f"{indent}}}"]
                self.tag("else-if")
                if "input.o" in cond.src or "input.o" in c2.src:  # both branches return
                    scope[NARROWED_O] = NARROWED_O
                steps.append(("if", cond.fn, fthen))
                steps.append(("if", c2.fn, felse))
        if self.flip(0.5) and depth > 0:
            e = self.effect(ret, scope, depth, indent)
        else:
            e = self.typed_value(ret, scope, 2)
        lines += e.pre
        if top and self.flip(0.3):
            lines.append(f"{indent}{e.src}")
            self.tag("expr-last")
        else:
            lines.append(f"{indent}return {e.src}")
            self.tag("return")
        steps.append(("return", e.fn))
        return lines, self._runner(steps)

    @staticmethod
    def _runner(steps):
        def run(env, steps=steps):
            env = dict(env)
            for s in steps:
                if s[0] == "let":
                    env[s[1]] = s[2](env)
                elif s[0] == "effect":
                    s[1](env)
                elif s[0] == "require":
                    if not s[1](env):
                        raise Fail("failed", s[2])
                elif s[0] == "if":
                    if s[1](env):
                        return s[2](env)
                elif s[0] == "ifelse":
                    return s[2](env) if s[1](env) else s[3](env)
                else:
                    return s[1](env)
            raise AssertionError("unreachable")

        return run

    def block(self, scope, ret: str, depth: int, indent: str, *, may_fail: bool = True):
        """A control body ``{ … }``; ``may_fail=False`` (a `parallel map` or tolerating `map`
        body) draws nothing that can fail at run time in it or below: no `require`/`fail`, no
        `limit` or `max_iterations` read from the input (concurrent items failing differently
        would make the reported error depend on timing, and a tolerated failure is wrapped in
        a message the model does not build)."""
        saved = self.fail_ok
        self.fail_ok = saved and may_fail
        try:
            lines, run = self.stmts(scope, ret, depth, indent + "  ")
        finally:
            self.fail_ok = saved
        return "{\n" + "\n".join(lines) + f"\n{indent}}}", run


#: declarations, each emitted when the program uses what it declares (fewer tokens to parse
#: per program: the sweep's cost is mostly the front end's)
DECLS: list[tuple[str, str, tuple[str, ...]]] = [
    # (pattern in the stages' text, declaration, construct tags)
    (
        r"\bItem\b|input\.items",
        "/// Items to triage.\n"
        "type Item { id: int @range(0, 1000), kind: Kind, tags: text[], "
        "note: text? @length(0, 50) }",
        ("type-object", "constraint-range", "constraint-length", "doc-comment"),
    ),
    (
        r"\bItem\b|\bKind\b|input\.(items|kind)",
        'type Kind = "bug" | "debt" | "doc"',
        ("type-alias",),
    ),
    (
        r"\bScore\b",
        'type Score { value: int @range(0, 10), label: text @pattern("^[a-z]+$") }',
        ("constraint-pattern",),
    ),
    (r"user__inc\(", "extern tool user__inc(n: int) -> int", ("extern-tool",)),
    (r"user__tag\(", "extern tool user__tag(t: text) -> text", ("extern-tool",)),
    (
        r"user__open\(",
        "extern type Handle\nextern tool user__open(t: text) -> Handle\n"
        "extern tool user__read(h: Handle) -> text",
        ("extern-type",),
    ),
    (r"agent\(helper\)", 'use agent "helper" as helper', ("use-agent",)),
    (r"agent\(dev\.", 'use team "dev-team" as dev', ("use-team",)),
]

#: the input's fields, in declaration order (a program declares those it reads)
INPUT_FIELDS = {
    "xs": "int[]",
    "ws": "text[]",
    "k": "int",
    "items": "Item[]",
    "kind": "Kind",
    "o": "int?",
    "flag": "bool",
    "t": "duration",
    "dir": "path",
    "who": "member",
}


def draw_program(src: Source, mode: str = "compile") -> Program:
    """One random program (see the module docstring)."""
    g = Gen(src, mode)
    scope = {
        "input.xs": "int[]",
        "input.ws": "text[]",
        "input.k": "int",
        "input.items": "Item[]",
        "input.flag": "bool",
    }
    head: list[str] = []
    if g.flip(0.5):
        head.append('flow prop "A generated program"')
        g.tag("flow-header")
    out: list[str] = []
    if g.flip(0.3):
        d = g.pick(["10m", "1h"])
        out.append(f"deadline {d}")
        g.top["deadline"] = d
        g.tag("deadline")
    if g.flip(0.3):
        out.append("budget { inferences: 500, cost: 10 * 2 }")
        g.top["budget"] = {"inferences": 500, "cost": 20}
        g.tag("budget-top")
    stages = []
    for _ in range(1 if src.flip(0.75) else 2):
        name = g.fresh("s")
        ty = g.pick(TYPES[:-1])
        lines, run = g.stmts(scope, ty, 2, "  ")
        if ty in ("int", "text", "bool", "int[]", "text[]") and g.flip(0.2):
            out.append(f"stage {name} {{")
            g.tag("stage-inferred")
        else:
            out.append(f"stage {name} -> {ty} {{")
            g.tag("stage-typed")
        out += lines
        out.append("}")
        stages.append((name, ty, run))
        scope[name] = ty
    body = "\n".join(out)
    used = set(re.findall(r"\binput\.(\w+)", body)) or {"k"}
    fields_in = [f for f in INPUT_FIELDS if f in used]
    head.append("input { " + ", ".join(f"{f}: {INPUT_FIELDS[f]}" for f in fields_in) + " }")
    g.tag("input")
    if "items" in used or "kind" in used:
        body += " Item"
    for pattern, decl, tags in DECLS:
        if re.search(pattern, body):
            head.append(decl)
            g.tag(*tags)
    out = head + out
    fields = ", ".join(f"{n}: {t}" for n, t, _ in stages)
    values = ", ".join(f"{n}: {n}" for n, _, _ in stages)
    if g.flip(0.3):
        out.append(f"output {{ {fields} }}")
        g.tag("output")
    out.append(f"stage all -> {{ {fields} }} {{")
    out.append(f"  return {{ {values} }}")
    out.append("}")
    if g.flip(0.15):
        out += test_block(src, fields_in, [n for n, _, _ in stages], "user__inc(" in body)
        g.tag("test-block", "test-expect")
        if "user__inc(" in body:
            g.tag("test-stub-tool")
    source = "\n".join(out) + "\n"

    def evaluate(inp: dict) -> tuple:
        env = {f"input.{k}": v for k, v in inp.items()}
        env.setdefault("input.o", None)
        try:
            for n, _, run in stages:
                env[n] = run(env)
        except Fail as e:
            return ("error", e.code, e.message)
        return ("ok", {n: env[n] for n, _, _ in stages})

    return Program(
        source,
        evaluate,
        g.expected,
        g.agents,
        g.clauses,
        g.concurrency,
        g.top,
        g.seen,
        fields_in,
        g.tolerate,
        g.catches,
    )


def flow_literal(value: Any, ty: str = "") -> str:
    """A JSON value as a `.flow` literal (``ty`` "duration": a duration literal)."""
    if ty == "duration":
        return str(value)
    if isinstance(value, str):
        return flow_string(value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(flow_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k}: {flow_literal(v)}" for k, v in value.items()) + " }"
    return str(value)


def test_block(src: Source, fields: list[str], stages: list[str], stub_inc: bool) -> list[str]:
    """A `test` block for a program reading input ``fields``: an input drawn by
    :func:`draw_input`, a stubbed tool when the program calls ``user__inc``, and expectations
    that hold whatever the stages compute."""
    inp = draw_input(src)
    value = ", ".join(f"{f}: {flow_literal(inp.get(f), INPUT_FIELDS[f])}" for f in fields)
    lines = ['test "generated" {', f"  input {{ {value} }}"]
    if stub_inc:
        lines.append(f"  stub tool user__inc returns {src.integer(0, 9)}")
    stage = src.choice(stages)
    lines += [f"  expect {stage} == {stage} or inferences >= 0", "}"]
    return lines


def draw_input(src: Source) -> dict:
    """An input the program's `input` type accepts (constraints included)."""
    items = []
    for _ in range(src.integer(0, 3)):
        item: dict[str, Any] = {
            "id": src.integer(0, 30),
            "kind": src.choice(KINDS),
            "tags": [src.choice(TEXTS) for _ in range(src.integer(0, 2))],
        }
        if src.flip(0.5):
            item["note"] = src.choice(["n", "a note"])
        items.append(item)
    inp: dict[str, Any] = {
        "xs": [src.integer(-3, 9) for _ in range(src.integer(0, 4))],
        "ws": [src.choice(TEXTS) for _ in range(src.integer(0, 3))],
        "k": src.integer(-2, 5),
        "items": items,
        "kind": src.choice(KINDS),
        "flag": src.flip(),
        "t": src.choice(["1s", "90s"]),
        "dir": "out",
        "who": "alice",
    }
    if src.flip(0.6):
        inp["o"] = src.integer(0, 5)
    return inp


def catalog_functions() -> dict[str, Callable]:
    """The user tools generated programs call, as the Python model computes them."""
    return {
        "user__inc": lambda n: n + 1,
        "user__tag": lambda t: t + "!",
        "user__echo": lambda v: v,
        "user__open": lambda t: {"handle": t},
        "user__read": lambda h: h["handle"] + "?",
    }


# -- what the compiled plan must hold ----------------------------------------------------------


def _steps(plan: dict):
    """Every step of a plan and of its sub-plans, bodies included."""

    def walk(step):
        yield step
        inp = step.get("input")
        if isinstance(inp, dict):
            for key in ("do", "then", "else"):
                if isinstance(inp.get(key), dict) and "tool_name" in inp[key]:
                    yield from walk(inp[key])

    for p in [plan, *(plan.get("plans") or {}).values()]:
        for s in p.get("steps", []):
            yield from walk(s)


def dropped(program: Program, plan: dict) -> list[str]:
    """What the plan lacks of the clauses and settings the program wrote (empty: nothing)."""
    problems: list[str] = []
    agents = [s for s in _steps(plan) if s.get("tool_name") == "agent"]
    for clause in program.clauses:
        found = [s for s in agents if f"[{clause.marker}]" in str(s["input"].get("prompt"))]
        if len(found) != 1:
            problems.append(f"agent {clause.marker}: {len(found)} steps")
            continue
        step = found[0]
        for key, want in clause.checks:
            holder = step if key in ("timeout", "retry") else step["input"]
            got = holder.get(key)
            if got is None:
                problems.append(f"agent {clause.marker}: `{key}` dropped")
            elif want == "template":
                if not (isinstance(got, str) and got.startswith("{{")):
                    problems.append(f"agent {clause.marker}: `{key}` is {got!r}, not a template")
            elif want is not None and got != want:
                problems.append(f"agent {clause.marker}: `{key}` is {got!r}, not {want!r}")
    order = lambda c: (isinstance(c, str), str(c))  # noqa: E731
    got_conc = sorted(
        (
            "template" if isinstance(c, str) else c
            for s in _steps(plan)
            if s.get("tool_name") == "map" and (c := s["input"].get("concurrency")) is not None
        ),
        key=order,
    )
    want_conc = sorted(program.concurrency, key=order)
    if got_conc != want_conc:
        problems.append(f"map concurrency {got_conc} (wrote {want_conc})")
    got_tol = sorted(
        str(s["input"]["on_item_error"].get("tolerate"))
        for s in _steps(plan)
        if s.get("tool_name") == "map" and isinstance(s["input"].get("on_item_error"), dict)
    )
    if got_tol != sorted(map(str, program.tolerate)):
        problems.append(f"map tolerate {got_tol} (wrote {program.tolerate})")
    # a `catch` is the guarded step's own `catch`, or a `try` step (a fallback reading `err`)
    got_catches = sum(
        1 for s in _steps(plan) if s.get("catch") is not None or s.get("tool_name") == "try"
    )
    if got_catches != program.catches:
        problems.append(f"{got_catches} steps with a `catch` (wrote {program.catches})")
    for key, want in program.top.items():
        if plan.get(key) != want:
            problems.append(f"`{key}` is {plan.get(key)!r}, not {want!r}")
    return problems


def sweep(seed: int, count: int, max_chars: int | None = None) -> dict:
    """Draw ``count`` programs from ``seed`` and put each through check → compile → validate →
    :func:`dropped`. Returns counts, how many programs used each construct tag (``seen``, a
    :class:`~collections.Counter`) and the first failures (source and what went wrong): an
    internal compiler error, a clean check the generator did not expect (or an unexpected
    diagnostic), or a clause missing from the plan.

    ``max_chars``: programs longer than that are drawn again (counted in ``redrawn``), so a
    sweep of many programs costs less — the front end's cost grows with the text, and a longer
    program nests the same constructs deeper."""
    rng = random.Random(seed)
    out: dict[str, Any] = {
        "programs": 0,
        "clean": 0,
        "refused": 0,
        "redrawn": 0,
        "seen": Counter(),
        "failures": [],
    }
    for _ in range(count):
        program = draw_program(RandomSource(rng))
        while max_chars is not None and len(program.source) > max_chars:
            out["redrawn"] += 1
            program = draw_program(RandomSource(rng))
        out["programs"] += 1
        out["seen"].update(program.constructs)
        result = check_source(program.source, "prop.flow")
        codes = {d.code for d in result.errors}
        if codes != program.expected:
            out["failures"].append((program.source, f"check gave {sorted(codes)}: {result.errors}"))
            continue
        if codes:
            out["refused"] += 1
            continue
        try:
            compiled = api.compile_checked(result, program.source, "prop.flow")
        except api.CompileError as e:
            out["failures"].append((program.source, f"compile failed: {e.diagnostics}"))
            continue
        missing = dropped(program, compiled.plan)
        if missing:
            out["failures"].append((program.source, f"dropped: {missing}"))
            continue
        out["clean"] += 1
    out["failed"] = len(out["failures"])
    out["failures"] = out["failures"][:3]
    return out
