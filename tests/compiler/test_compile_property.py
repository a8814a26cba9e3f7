"""Property test of the compiler (docs/spec/LANGUAGE.md §10): random well-typed programs compile,
load, validate, and run to the value a direct Python evaluation of the same program gives.

The generator builds `.flow` source and a Python model of it side by side: stages, ``let``s,
``map`` / ``parallel map`` / ``filter`` / ``reduce`` over ``int[]`` and ``text[]``, tool calls
(``user__inc``, ``user__tag``), ``if`` with leaving branches (the rest becomes the else),
``require … else fail``, nested bodies and filter gates that read outer loop variables (which
exercise outlining into sub-plans).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentflow import api
from agentflow.compiler.lowering import lower
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.tools.catalog import Catalog

ELEM = {"int[]": "int", "text[]": "text"}
LIST = {"int": "int[]", "text": "text[]"}


class Fail(Exception):
    """A `fail` in the Python model."""


def _interp(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))


class Gen:
    """Draws a program; every expression is ``(source, fn(env) -> value)``."""

    def __init__(self, draw):
        self.draw = draw
        self.n = 0

    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def pick(self, xs):
        return self.draw(st.sampled_from(list(xs)))

    def flip(self, p: float = 0.5) -> bool:
        """True with probability ``p``; shrinks towards False."""
        return self.draw(st.integers(0, 99)) >= 100 - int(p * 100)

    # -- pure expressions ------------------------------------------------------------------
    def pure(self, ty: str, scope: dict[str, str], depth: int):
        names = [n for n, t in scope.items() if t == ty]
        leaf = depth <= 0 or not self.flip(0.6)
        if ty == "int":
            if leaf:
                if names and self.flip(0.7):
                    n = self.pick(names)
                    return n, lambda env, n=n: env[n]
                v = self.draw(st.integers(0, 9))
                return str(v), lambda env, v=v: v
            kind = self.pick(["+", "-", "*", "count", "tcount"])
            if kind == "count":
                s, f = self.pure(self.pick(["int[]", "text[]"]), scope, depth - 1)
                return f"({s}).count", lambda env, f=f: len(f(env))
            if kind == "tcount":
                s, f = self.pure("text", scope, depth - 1)
                return f"({s}).count", lambda env, f=f: len(f(env))
            a, fa = self.pure("int", scope, depth - 1)
            b, fb = self.pure("int", scope, depth - 1)
            ops = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}
            op = ops[kind]
            return f"({a} {kind} {b})", lambda env, fa=fa, fb=fb, op=op: op(fa(env), fb(env))
        if ty == "text":
            if leaf:
                if names and self.flip(0.7):
                    n = self.pick(names)
                    return n, lambda env, n=n: env[n]
                v = self.pick(["a", "bc", "", "x y"])
                return json.dumps(v), lambda env, v=v: v
            if self.flip():
                a, fa = self.pure("int", scope, depth - 1)
                b, fb = self.pure("text", scope, depth - 1)
                return (
                    f'"<${{{a}}}:${{{b}}}>"',
                    lambda env, fa=fa, fb=fb: f"<{_interp(fa(env))}:{_interp(fb(env))}>",
                )
            a, fa = self.pure("text", scope, depth - 1)
            b, fb = self.pure("text", scope, depth - 1)
            return f"({a} + {b})", lambda env, fa=fa, fb=fb: fa(env) + fb(env)
        if ty == "bool":
            kind = self.pick(
                ["cmp", "eq", "in", "not", "and", "or", "lit"] if not leaf else ["cmp", "eq", "lit"]
            )
            if kind == "lit":
                v = self.flip()
                return ("true" if v else "false"), lambda env, v=v: v
            if kind == "cmp":
                a, fa = self.pure("int", scope, depth - 1)
                b, fb = self.pure("int", scope, depth - 1)
                op = self.pick(["<", "<=", ">", ">=", "==", "!="])
                fns = {
                    "<": lambda x, y: x < y,
                    "<=": lambda x, y: x <= y,
                    ">": lambda x, y: x > y,
                    ">=": lambda x, y: x >= y,
                    "==": lambda x, y: x == y,
                    "!=": lambda x, y: x != y,
                }
                return f"({a} {op} {b})", lambda env, fa=fa, fb=fb, g=fns[op]: g(fa(env), fb(env))
            if kind == "eq":
                a, fa = self.pure("text", scope, depth - 1)
                b, fb = self.pure("text", scope, depth - 1)
                return f"({a} == {b})", lambda env, fa=fa, fb=fb: fa(env) == fb(env)
            if kind == "in":
                lt = self.pick(["int[]", "text[]"])
                a, fa = self.pure(ELEM[lt], scope, depth - 1)
                b, fb = self.pure(lt, scope, depth - 1)
                return f"({a} in {b})", lambda env, fa=fa, fb=fb: fa(env) in fb(env)
            if kind == "not":
                a, fa = self.pure("bool", scope, depth - 1)
                return f"(not {a})", lambda env, fa=fa: not fa(env)
            a, fa = self.pure("bool", scope, depth - 1)
            b, fb = self.pure("bool", scope, depth - 1)
            if kind == "and":
                return f"({a} and {b})", lambda env, fa=fa, fb=fb: fa(env) and fb(env)
            return f"({a} or {b})", lambda env, fa=fa, fb=fb: fa(env) or fb(env)
        # lists
        if leaf and names:
            n = self.pick(names)
            return n, lambda env, n=n: env[n]
        if self.flip() or depth <= 0:
            a, fa = self.pure(ELEM[ty], scope, depth - 1)
            return f"[{a}]", lambda env, fa=fa: [fa(env)]
        a, fa = self.pure(ty, scope, depth - 1)
        b, fb = self.pure(ty, scope, depth - 1)
        return f"({a} + {b})", lambda env, fa=fa, fb=fb: fa(env) + fb(env)

    # -- effectful let values ----------------------------------------------------------------
    def effect(self, ty: str, scope: dict[str, str], depth: int):
        """An effectful expression of type ``ty`` (a tool call or a control expression)."""
        kinds = ["tool"]
        if depth > 0:
            kinds += ["map", "pmap", "reduce"] if ty in ("int[]", "text[]", "int") else []
            kinds += ["filter"] if ty in ("int[]", "text[]") else []
        kinds = [k for k in kinds if not (k == "tool" and ty not in ("int", "text"))]
        if ty in ("int[]", "text[]"):
            kinds = [k for k in kinds if k != "reduce"] or ["map"]
        if ty == "bool" or not kinds:
            return self.pure(ty, scope, 2)
        kind = self.pick(kinds)
        if kind == "tool":
            a, fa = self.pure(ty, scope, 2)
            if ty == "int":
                return f"user__inc(n: {a})", lambda env, fa=fa: fa(env) + 1
            return f"user__tag(t: {a})", lambda env, fa=fa: fa(env) + "!"
        lt = self.pick(["int[]", "text[]"])
        over, fover = self.pure(lt, scope, 1)
        var = self.fresh("it")
        inner = {**scope, var: ELEM[lt], "index": "int"}
        if kind in ("map", "pmap"):
            elem = ELEM[ty] if ty in ELEM else "int"
            body, fbody = self.block(inner, elem, depth - 1)
            head = f"map {over} as {var}"
            if kind == "pmap":
                limit = self.draw(st.integers(1, 3))
                head = f"parallel map {over} as {var} limit {limit}"

            def run_map(env, fover=fover, fbody=fbody, var=var):
                return [fbody({**env, var: x, "index": i}) for i, x in enumerate(fover(env))]

            if ty == "int":  # a map used where an int is wanted: count it
                return f"({head} {body}).count", lambda env, g=run_map: len(g(env))
            return f"{head} {body}", run_map
        if kind == "filter":
            over, fover = self.pure(ty, scope, 1)
            inner = {**scope, var: ELEM[ty], "index": "int"}
            cond, fcond = self.pure("bool", inner, 2)

            def run_filter(env, fover=fover, fcond=fcond, var=var):
                return [x for i, x in enumerate(fover(env)) if fcond({**env, var: x, "index": i})]

            return f"filter {over} as {var} where {cond}", run_filter
        # reduce → int
        acc = self.fresh("acc")
        init, finit = self.pure("int", scope, 1)
        inner[acc] = "int"
        body, fbody = self.block(inner, "int", depth - 1)

        def run_reduce(env, fover=fover, finit=finit, fbody=fbody, var=var, acc=acc):
            a = finit(env)
            for i, x in enumerate(fover(env)):
                a = fbody({**env, var: x, "index": i, acc: a})
            return a

        return f"reduce {over} as {var}, {acc}: int = {init} {body}", run_reduce

    # -- blocks ----------------------------------------------------------------------------
    def stmts(self, scope: dict[str, str], ret: str, depth: int, indent: str):
        """Statements ending in `return`; returns (lines, fn(env) -> value)."""
        scope = dict(scope)
        lines: list[str] = []
        steps: list = []
        for _ in range(self.draw(st.integers(0, 2))):
            ty = self.pick(["int", "text", "int[]", "text[]"])
            name = self.fresh("v")
            if self.flip(0.6):
                src, f = self.effect(ty, scope, depth)
            else:
                src, f = self.pure(ty, scope, 2)
            lines.append(f"{indent}let {name} = {src}")
            steps.append(("let", name, f))
            scope[name] = ty
        if self.flip(0.25):
            cond, fc = self.pure("bool", scope, 2)
            msg = self.fresh("m")
            lines.append(f'{indent}require {cond} else fail "failed {msg}"')
            steps.append(("require", fc, f"failed {msg}"))
        if self.flip(0.3):
            cond, fc = self.pure("bool", scope, 2)
            then_lines, fthen = self.stmts(scope, ret, depth - 1, indent + "  ")
            lines.append(f"{indent}if {cond} {{")
            lines.extend(then_lines)
            lines.append(f"{indent}}}")
            steps.append(("if", fc, fthen))
        if self.flip(0.5):
            src, f = self.effect(ret, scope, depth) if depth > 0 else self.pure(ret, scope, 2)
        else:
            src, f = self.pure(ret, scope, 2)
        lines.append(f"{indent}return {src}")
        steps.append(("return", f))

        def run(env, steps=steps):
            env = dict(env)
            for s in steps:
                if s[0] == "let":
                    env[s[1]] = s[2](env)
                elif s[0] == "require":
                    if not s[1](env):
                        raise Fail(s[2])
                elif s[0] == "if":
                    if s[1](env):
                        return s[2](env)
                else:
                    return s[1](env)
            raise AssertionError("unreachable")

        return lines, run

    def block(self, scope: dict[str, str], ret: str, depth: int):
        lines, run = self.stmts(scope, ret, depth, "    ")
        return "{\n" + "\n".join(lines) + "\n  }", run


@st.composite
def programs(draw):
    g = Gen(draw)
    scope = {"input.xs": "int[]", "input.ws": "text[]", "input.k": "int"}
    stages = []
    out = ["flow prop", "input { xs: int[], ws: text[], k: int }", ""]
    out += ["extern tool user__inc(n: int) -> int", "extern tool user__tag(t: text) -> text", ""]
    for _ in range(draw(st.integers(1, 3))):
        name = g.fresh("s")
        ty = g.pick(["int", "text", "int[]", "text[]"])
        lines, run = g.stmts(scope, ty, 2, "  ")
        out.append(f"stage {name} -> {ty} {{")
        out.extend(lines)
        out.append("}")
        out.append("")
        stages.append((name, ty, run))
        scope[name] = ty
    fields = ", ".join(f"{n}: {t}" for n, t, _ in stages)
    values = ", ".join(f"{n}: {n}" for n, _, _ in stages)
    out.append(f"stage all -> {{ {fields} }} {{")
    out.append(f"  return {{ {values} }}")
    out.append("}")

    def evaluate(inp):
        env = {"input.xs": inp["xs"], "input.ws": inp["ws"], "input.k": inp["k"]}
        try:
            for n, _, run in stages:
                env[n] = run(env)
        except Fail as e:
            return ("error", str(e))
        return ("ok", {n: env[n] for n, _, _ in stages})

    return "\n".join(out) + "\n", evaluate


inputs = st.fixed_dictionaries(
    {
        "xs": st.lists(st.integers(-3, 9), max_size=4),
        "ws": st.lists(st.sampled_from(["a", "bc", "", "x y", "zz"]), max_size=3),
        "k": st.integers(-2, 5),
    }
)


def _catalog() -> Catalog:
    cat = Catalog()
    cat.register_function("user__inc", lambda n: n + 1)
    cat.register_function("user__tag", lambda t: t + "!")
    return cat


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
@given(programs(), inputs)
def test_random_programs_compile_validate_and_run(program, inp):
    source, evaluate = program
    try:
        compiled = api.compile_source(source, "prop.flow")  # check, lower, load (validate)
    except api.CompileError as e:
        raise AssertionError(
            "generator produced an ill-typed program:\n" + source + "\n" + str(e.diagnostics)
        ) from None
    # deterministic: lowering the same checked program again gives the same plan
    again = lower(compiled.check, file="prop.flow")
    assert json.dumps(again) == json.dumps(compiled.plan)
    plan = load_plan_text(compiled.to_yaml(), "prop.plan.yaml")  # the YAML round trip loads
    status, expected = evaluate(inp)
    run = api.run_sync(plan, inp, catalog=_catalog(), shape_cache=False)
    if status == "ok":
        assert run.status == "ok", (source, run.error)
        assert run.output == expected, source
    else:
        assert run.status == "error", source
        assert run.error["code"] == "failed"
        assert run.error["message"] == expected
