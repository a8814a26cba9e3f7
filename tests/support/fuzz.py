"""Fuzzers for the front end, plans, templates, the formatter and the language server (issue 16).

Each fuzzer is deterministic for a seed: :func:`run` draws ``n`` inputs of one kind, feeds each to
its checker and counts *failures* — an exception that is not the documented error for a bad input
(a traceback for the user), a diagnostic with an impossible span, an internal compiler or
formatter error, ``flowc fmt`` output that is not a fixed point or changes what ``check`` says,
or an input that takes longer than ``time_limit`` seconds (a hang). The CI tests
(``tests/robustness/``) run small fixed-seed budgets; ``bench/fuzz.py`` runs large ones and prints
``N inputs, N failures``.

Kinds: ``programs`` (generated and mutated ``.flow`` sources: check, render, compile, fmt),
``plans`` (mutated plan files: load, validate, resolve tools, dump, ``plan fmt``), ``templates``
(``{{ … }}`` texts: parse, render against a scope), ``lsp`` (random sessions against one
``flowc lsp`` process: every request answered, no traceback, the server alive).
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent.parent

_PIECES = [
    "}", "{", "(", ")", "[", "]", '"', '"""', "${", "}}", "{{", "x", "agent", "let", "stage",
    "type", "[*]", ".", "?", "??", "? ?", "..", "->", "|", "@range(", "\x00", "\n", "/*", "//",
    "\\", "$", "map", "filter", "where", "reduce", "as", ",", ":", "=", "not", "-", "1h", "0ms",
    "99999", "\ufeff", "\u202e", "é", "\t", "input", "return", "null", "true", "+", "*", "and",
    "or", "in", "not in", "ask", "verify", "judge", "require", "else", "fail", "expect", "tools",
    "write", "use", "extern", "tool", "team", "parallel", "limit", "if", "==", "!=", "<=", "1.5",
    "-0", "1e308", "'", "`", "@", "#",
]  # fmt: skip


def mutate(src: str, rng: random.Random) -> str:
    """One random mutation of ``src`` (1–4 edits: cut, duplicate, insert a token, flip a
    character, swap two lines)."""
    for _ in range(rng.randint(1, 4)):
        n = len(src)
        at = rng.randint(0, n)
        op = rng.randrange(5)
        if op == 0:
            src = src[:at] + src[at + rng.randint(1, 40) :]
        elif op == 1:
            j = min(n, at + rng.randint(1, 80))
            src = src[:j] + src[at:j] + src[j:]
        elif op == 2:
            src = src[:at] + rng.choice(_PIECES) + src[at:]
        elif op == 3 and n:
            src = (
                src[:at]
                + chr(rng.choice([rng.randint(0, 0x7F), rng.randint(0, 0x2FF)]))
                + src[at + 1 :]
            )
        elif rng.random() < 0.5:  # layout only: what `flowc fmt` has to undo
            src = src.replace(" ", rng.choice(["  ", " \t", "   "]), rng.randint(1, 20))
        else:
            lines = src.split("\n")
            if len(lines) > 1:
                a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[a], lines[b] = lines[b], lines[a]
                src = "\n".join(lines)
    return src


# --------------------------------------------------------------------------- programs


class _Gen:
    """A random (mostly well-formed) ``.flow`` program."""

    TYPES = ["int", "text", "bool", "number", "path", "json", "int?", "text[]", "int[]", "T", "T?"]
    BINOPS = ["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "and", "or", "??", "in"]

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.names: list[str] = ["input"]

    def type_(self, depth: int = 0) -> str:
        r = self.rng
        if depth < 2 and r.random() < 0.2:
            return (
                "{ "
                + ", ".join(f"f{i}: {self.type_(depth + 1)}" for i in range(r.randint(1, 3)))
                + " }"
            )
        if depth < 2 and r.random() < 0.15:
            return " | ".join(json.dumps(f"v{i}") for i in range(r.randint(2, 6)))
        t = r.choice(self.TYPES)
        if r.random() < 0.1:
            t += "?" if not t.endswith("?") else " ?"
        return t

    def expr(self, depth: int = 0) -> str:
        r = self.rng
        if depth > 4 or r.random() < 0.3:
            return r.choice(
                [
                    str(r.randint(-5, 100)),
                    "1.5",
                    json.dumps(r.choice(["a", "b", "hello ${input.a}", "x\\ny"])),
                    "true",
                    "null",
                    r.choice(self.names) + (".a" if r.random() < 0.5 else ""),
                    "input.xs",
                ]
            )
        k = r.randrange(12)
        if k < 4:  # a chain of one family of operators (comparisons do not chain)
            family = r.choice([["+", "-", "*", "/", "%"], ["and", "or"], ["??"], ["+"]])
            chain = [self.operand(depth + 1) for _ in range(r.randint(2, 6))]
            out = chain[0]
            for item in chain[1:]:
                out += f" {r.choice(family)} {item}"
            return out
        if k == 4:
            cmp = r.choice(["==", "!=", "<", "<=", ">", ">=", "in", "not in"])
            return f"{self.operand(depth + 1)} {cmp} {self.operand(depth + 1)}"
        if k == 5:
            return r.choice(["not ", "-"]) + f"({self.expr(depth + 1)})"
        if k == 6:
            return "[" + ", ".join(self.expr(depth + 1) for _ in range(r.randint(0, 3))) + "]"
        if k == 7:
            return (
                "{ "
                + ", ".join(f"k{i}: {self.expr(depth + 1)}" for i in range(r.randint(0, 3)))
                + " }"
            )
        if k == 8:  # a member chain, now and then a very long one
            n = r.randint(1, 5) if r.random() < 0.9 else r.randint(300, 1500)
            steps = [".a", ".b", "[0]", "[*]", ".count"] if n < 10 else [".a", ".b", "[0]"]
            return r.choice(self.names) + "".join(r.choice(steps) for _ in range(n))
        if k == 9:
            return f'read_file(path: "{r.choice(["a.txt", "${input.a}"])}")'
        if k == 10:
            return f"map input.xs as x {{ {self.expr(depth + 1)} }}"
        return f"filter input.xs as x where {self.expr(depth + 1)}"

    def operand(self, depth: int) -> str:
        """An operand of a binary operator: atomic, or parenthesised."""
        e = self.expr(depth)
        atomic = e.replace(".", "").replace("_", "").isalnum() or e.startswith(("[", "{", '"'))
        return e if atomic and " " not in e else f"({e})"

    def stmt(self, depth: int = 0) -> str:
        r = self.rng
        k = r.randrange(6)
        if k <= 2:
            name = f"v{len(self.names)}"
            text = f"let {name} = {self.expr()}"
            self.names.append(name)
            return text
        if k == 3:
            return f'require {self.expr()} else fail "no"'
        if k == 4 and depth < 2:
            inner = "\n    ".join(self.stmt(depth + 1) for _ in range(r.randint(1, 2)))
            return f"if {self.expr()} {{\n    {inner}\n  }}"
        return (
            "let a"
            + str(len(self.names))
            + ' = agent(helper) {\n    task "do ${input.a}"\n    tools ['
            + ", ".join(r.sample(["read_file", "grep", "glob", "list_dir"], r.randint(0, 2)))
            + f"]\n    expect {self.type_()}\n  }}"
        )

    def typed(self, t: str, depth: int = 0) -> str:
        """An expression of type ``t`` (int, bool, text, int[]) that checks."""
        r = self.rng
        leaf = depth > 3 or r.random() < 0.35
        if t == "int":
            if leaf:
                return r.choice([str(r.randint(0, 99)), "input.xs.count", "input.a.count"])
            k = r.randrange(4)
            if k == 0 and r.random() < 0.1:  # a long chain (the lowering once nested each `+`)
                return " + ".join(str(r.randint(0, 9)) for _ in range(r.randint(100, 190)))
            if k <= 1:
                op = r.choice(["+", "-", "*"])
                return f"{self.typed('int', depth + 1)} {op} {self.typed('int', depth + 1)}"
            if k == 2:
                return f"({self.typed('int', depth + 1)})"
            return f"(input.n ?? {self.typed('int', depth + 1)})"
        if t == "bool":
            if leaf:
                return r.choice(["true", "false", "input.xs.count > 0"])
            k = r.randrange(4)
            if k == 0:
                cmp = r.choice(["==", "!=", "<", "<=", ">", ">="])
                return f"{self.typed('int', depth + 1)} {cmp} {self.typed('int', depth + 1)}"
            if k == 1:
                op = r.choice(["and", "or"])
                return f"{self.typed('bool', depth + 1)} {op} {self.typed('bool', depth + 1)}"
            if k == 2:
                return f"not ({self.typed('bool', depth + 1)})"
            return f"{self.typed('int', depth + 1)} in input.xs"
        if t == "text":
            if leaf:
                return r.choice(['"x"', "input.a", '"n=${input.xs.count}"'])
            return f"{self.typed('text', depth + 1)} + {self.typed('text', depth + 1)}"
        # int[]
        if leaf:
            return r.choice(["input.xs", "[1, 2]", "[]"])
        k = r.randrange(3)
        if k == 0:
            return f"map input.xs as x {{ x * {self.typed('int', depth + 1)} }}"
        if k == 1:
            return f"filter input.xs as x where x > {self.typed('int', depth + 1)}"
        return f"({self.typed('int[]', depth + 1)}) + [{self.typed('int', depth + 1)}]"

    def typed_program(self) -> str:
        """A program that checks (and so compiles and runs)."""
        r = self.rng
        parts = ["input { a: text, xs: int[], n: int? }"]
        for s in range(r.randint(1, 3)):
            t = r.choice(["int", "bool", "text", "int[]"])
            lines = []
            for i in range(r.randint(0, 3)):
                lt = r.choice(["int", "bool", "text", "int[]"])
                lines.append(f"let v{i} = {self.typed(lt)}")
                if r.random() < 0.5:
                    lines.append(f'require v{i} == v{i} else fail "never"')
            if r.random() < 0.3:
                lines.append(f"if {self.typed('bool')} {{\n    return {self.typed(t)}\n  }}")
            body = "".join(f"  {line}\n" for line in lines)
            parts.append(f"stage s{s} -> {t} {{\n{body}  return {self.typed(t)}\n}}")
        return "\n".join(parts) + "\n"

    def program(self) -> str:
        r = self.rng
        parts = []
        if r.random() < 0.3:
            parts.append('flow fuzzed "a generated program"')
        parts.append("input { a: text, xs: int[], n: int? }")
        parts.append("type T { a: int, b: text? }")
        if r.random() < 0.5:
            parts.append(f"type U = {self.type_()}")
        parts.append('use agent "helper" as helper')
        if r.random() < 0.3:
            parts.append("extern tool tracker__get(id: text) -> json")
        for s in range(r.randint(1, 3)):
            self.names = ["input"] + [f"s{i}" for i in range(s)]
            body = "\n  ".join(self.stmt() for _ in range(r.randint(0, 4)))
            parts.append(f"stage s{s} -> {self.type_()} {{\n  {body}\n  return {self.expr()}\n}}")
        return "\n".join(parts) + "\n"


def _seed_files(pattern: str) -> list[Path]:
    return sorted(p for p in REPO.glob(pattern) if ".venv" not in p.parts)


def seed_programs() -> list[str]:
    """The repository's ``.flow`` files (tests and examples) that are not huge."""
    out = []
    for p in _seed_files("tests/**/*.flow") + _seed_files("examples/*.flow"):
        text = p.read_text(encoding="utf-8", errors="replace")
        if len(text) < 20_000:
            out.append(text)
    return out


def gen_program(rng: random.Random, seeds: list[str]) -> str:
    """A fuzzed program: generated, a mutated seed, or a mutated generated program."""
    k = rng.randrange(4)
    if k == 3:
        return _Gen(rng).typed_program()
    if k == 0:
        return _Gen(rng).program()
    if k == 1 and seeds:
        return mutate(rng.choice(seeds), rng)
    return mutate(_Gen(rng).program(), rng)


def _span_problem(d: Any, text: str) -> str | None:
    s = d.span
    if s is None:
        return f"diagnostic {d.code} has no span"
    if s.line < 1 or s.column < 1 or (s.end_line, s.end_column) < (s.line, s.column):
        return f"diagnostic {d.code} has an impossible span {s}"
    if not (0 <= s.start <= s.end <= len(text)) and getattr(s, "file", "") == "fuzz.flow":
        return f"diagnostic {d.code} offsets {s.start}..{s.end} outside the text ({len(text)})"
    return None


@contextlib.contextmanager
def _parse_each_text_once() -> Iterator[None]:
    """Within the block, a second ``parse_module`` of the same text and file name returns the
    first one's result (a fresh list of its diagnostics) instead of parsing again.

    ``check_source``, ``format_source`` and the check of the formatted text each parse what
    they are given; for one input that is the same two texts four times, and parsing was most
    of a program's time. Only reused within one input; nothing that reads the tree changes it
    (were the checker to change it, ``format_source`` would see a different tree and report an
    internal formatter error: a failure shown, never one hidden).

    Likewise the compiled plan: ``compile_checked`` loads (validates) it, and running it loads
    the same plan data again; the second ``load_plan_data`` of the same object returns the
    first one's plan."""
    from agentflow.grammar import parser
    from agentflow.ir import loader

    original = parser.parse_module
    original_load = loader.load_plan_data
    seen: dict[tuple[str, str], tuple[Any, list[Any]]] = {}
    loaded: dict[int, tuple[Any, Any]] = {}  # id(data) → (data, plan); `data` keeps the id

    def parse_module(text: str, file: str) -> tuple[Any, list[Any]]:
        key = (text, file)
        if key not in seen:
            seen[key] = original(text, file)
        module, diags = seen[key]
        return module, list(diags)

    def load_plan_data(data: Any, file: str = "<plan>", **kw: Any) -> Any:
        if kw or id(data) not in loaded:
            plan = original_load(data, file, **kw)
            if not kw:
                loaded[id(data)] = (data, plan)
            return plan
        return loaded[id(data)][1]

    parser.parse_module = parse_module  # type: ignore[assignment]
    loader.load_plan_data = load_plan_data  # type: ignore[assignment]
    try:
        yield
    finally:
        parser.parse_module = original  # type: ignore[assignment]
        loader.load_plan_data = original_load  # type: ignore[assignment]


def check_program(src: str) -> str | None:
    """Check, render, compile and format ``src``; the failure found, or None."""
    with _parse_each_text_once():
        return _check_program(src)


def _check_program(src: str) -> str | None:
    from agentflow.api import CompileError, compile_checked
    from agentflow.compiler.api import check_source
    from agentflow.compiler.fmt import FormatError, _layout, format_source, tokenize
    from agentflow.compiler.render import render_json, render_sarif, render_text

    result = check_source(src, "fuzz.flow")
    for d in result.diagnostics:
        problem = _span_problem(d, src)
        if problem:
            return problem
        if "internal" in d.message and ("compiler" in d.message or "flowc bug" in (d.hint or "")):
            return f"internal error diagnostic: {d.message}"
    render_text(result.diagnostics, {"fuzz.flow": src})
    render_json(result.diagnostics)
    render_sarif(result.diagnostics)
    codes = sorted(d.code for d in result.diagnostics)
    if result.ok:
        try:
            # what compile_source does after its own parse and check of the same text
            compiled = compile_checked(result, src, "fuzz.flow")
        except CompileError as e:
            internal = [d.message for d in e.diagnostics if "internal compiler error" in d.message]
            if internal:
                return f"compile: {internal[0]}"
        else:
            if "agent" not in src and "ask" not in src and "judge" not in src:
                problem = _run_compiled(compiled.plan)
                if problem:
                    return problem
    try:
        out = format_source(src, "fuzz.flow")
    except FormatError as e:
        if "internal formatter error" in e.message:
            return f"fmt: {e.message}"
        return None
    # `format_source(out)`, less its parse of `out`: `format_source(src)` parsed `out` already
    # (no syntax error, the same AST as `src`), so what it would return is this layout
    again = out if out == src else _layout(out, tokenize(out))
    if again != out:
        return "fmt is not idempotent (formatting the output changes it again)"
    if out != src:
        after = sorted(d.code for d in check_source(out, "fuzz.flow").diagnostics)
        if after != codes:
            return f"fmt changed what check reports: {codes} → {after}"
    return None


def _run_compiled(plan: dict) -> str | None:
    """Run a compiled plan that needs no model; an internal error is a failure (a step error
    a program can cause — a failed `require`, a division by zero — is not)."""
    from agentflow.errors import FlowError
    from agentflow.ir.loader import load_plan_data
    from agentflow.runtime.executor import run_plan_sync

    try:
        result = run_plan_sync(
            load_plan_data(plan, "fuzz.yaml"), {"a": "x", "xs": [1, 2, 3], "n": None}
        )
    except FlowError:  # the input does not fit a mutated program's own `input`
        return None
    if result.status == "error" and (result.error or {}).get("code") in ("internal", None):
        return f"run: {result.error}"
    return None


# --------------------------------------------------------------------------- plans


#: libyaml's safe loader when PyYAML has it (the same data, read faster)
_SEED_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def seed_plans() -> list[Any]:
    """The repository's plan files (tests and examples), as data."""
    out = []
    for p in _seed_files("tests/**/*.plan.yaml") + _seed_files("examples/*.plan.yaml"):
        try:
            out.append(yaml.load(p.read_text(encoding="utf-8"), Loader=_SEED_LOADER))
        except yaml.YAMLError:
            continue
    return out


_VALUES: list[Any] = [
    [], {}, ["a"], {"a": 1}, 3, -1, 0, 1.5, None, True, "", ".", "*", "__", "a__", "{{",
    "{{ }}", "{{ input.x }}", "{{ E0.missing.deep }}", "x" * 300, "1h", "0ms", "-5s", "none",
    "builtin__*", "plan__x", "\x00", "é", {"$ref": "#"}, {"type": "object"}, [[[]]],
    {"kind": "alias", "name": "x"}, {"op": "==", "value": 1, "to": 1}, 10**30, float("nan"),
]  # fmt: skip


def _paths(node: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*path, i))


def _mutate_plan(data: Any, rng: random.Random) -> Any:
    data = json.loads(json.dumps(data))
    for _ in range(rng.randint(1, 3)):
        nodes = list(_paths(data))
        leaves = [(p, v) for p, v in nodes if p and not isinstance(v, dict | list)]
        if leaves and rng.random() < 0.5:  # type confusion: a list, mapping, number… for a leaf
            path, node = rng.choice(leaves)
            parent = data
            for p in path[:-1]:
                parent = parent[p]
            parent[path[-1]] = json.loads(json.dumps(rng.choice(_VALUES), allow_nan=True))
            continue
        path, node = rng.choice(nodes)
        op = rng.randrange(5)
        parent = data
        for p in path[:-1]:
            parent = parent[p]
        if not path:
            continue
        key = path[-1]
        if op <= 1:
            parent[key] = json.loads(json.dumps(rng.choice(_VALUES), allow_nan=True))
        elif op == 2 and isinstance(parent, dict):
            del parent[key]
        elif op == 2 and isinstance(parent, list):
            parent.pop(key)
        elif op == 3 and isinstance(node, dict):
            node[
                rng.choice(["extra", "tool_name", "input", "timeout", "retry", "id", "select"])
            ] = rng.choice(_VALUES)
        elif op == 4 and isinstance(node, str):
            parent[key] = mutate(node, rng)
        elif isinstance(node, list) and node:
            node.append(json.loads(json.dumps(rng.choice(node))))
    return data


#: libyaml's emitter when PyYAML has it (writing the inputs was a quarter of a plan run's time)
_GEN_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def gen_plan(rng: random.Random, seeds: list[Any]) -> str:
    """A fuzzed plan text: a mutated seed plan as YAML (or, sometimes, text-level mutations)."""
    data = _mutate_plan(rng.choice(seeds), rng)
    text = yaml.dump(data, Dumper=_GEN_DUMPER, allow_unicode=True, sort_keys=False)
    if rng.random() < 0.2:
        text = mutate(text, rng)
    return text


_CATALOG: Any = None


@contextlib.contextmanager
def _load_each_text_once() -> Iterator[None]:
    """Within the block, a second ``check_plan_text`` (under ``load_plan_text``) of the same
    text and file name returns the first one's result instead of loading again.

    ``plan fmt`` loads the text it is given and the text it writes, and the fuzzer loads the
    input and formats the output again: the same texts up to five times, and loading was most
    of a plan's time. Only reused within one input; the later loads (inside ``fmt_plan_text``)
    only ask whether the text loads, which the first answer says."""
    from agentflow.ir import loader

    original = loader.check_plan_text
    seen: dict[tuple[str, str], tuple[Any, list[Any]]] = {}

    def check_plan_text(text: str, file: str = "<plan>") -> tuple[Any, list[Any]]:
        key = (text, file)
        if key not in seen:
            seen[key] = original(text, file)
        plan, problems = seen[key]
        return plan, list(problems)

    loader.check_plan_text = check_plan_text  # type: ignore[assignment]
    try:
        yield
    finally:
        loader.check_plan_text = original  # type: ignore[assignment]


def check_plan(text: str) -> str | None:
    """Load, validate, resolve tools, dump and ``plan fmt`` ``text``; the failure, or None."""
    with _load_each_text_once():
        return _check_plan(text)


def _check_plan(text: str) -> str | None:
    global _CATALOG
    from agentflow.errors import FlowError
    from agentflow.ir import load_plan_text
    from agentflow.ir.dump import dump_plan, fmt_plan_text
    from agentflow.ir.resolve import resolve_tools

    if _CATALOG is None:
        from agentflow.runtime.tools.builtin import default_catalog

        _CATALOG = default_catalog()
    try:
        plan = load_plan_text(text, "fuzz.yaml")
    except FlowError:
        return None
    resolve_tools(plan, set(_CATALOG.names()), set(_CATALOG.configured_prefixes))
    dumped = dump_plan(plan)
    try:
        load_plan_text(dumped, "dumped.yaml")
    except FlowError as e:
        return f"a loaded plan, dumped, does not load again: {e}"
    try:
        formatted = fmt_plan_text(text, "fuzz.yaml")
    except FlowError:
        return None
    if fmt_plan_text(formatted, "fuzz.yaml") != formatted:
        return "plan fmt is not idempotent"
    return None


# --------------------------------------------------------------------------- templates

_TEMPLATE_SEEDS = [
    "{{ input.a }}",
    "Hello {{ input.name }}, you have {{ input.n * 2 + 1 }} items",
    "{{ E0.items[0].title ?? 'none' }}",
    "{{ [x for x in input.xs] }}",
    "{{ input.xs[*].a }}",
    '{{ "${input.a} and ${input.b}" }}',
    "{{ input.n in 0..10 and not input.flag }}",
    "{{ {a: 1, b: [1, 2, {c: null}]} }}",
    "literal {{ stays }} text",
    "{{ input.xs.count > 0 ? 1 : 2 }}",
]


def gen_template(rng: random.Random) -> str:
    """A fuzzed template text."""
    base = rng.choice(_TEMPLATE_SEEDS)
    if rng.random() < 0.3:
        gen = _Gen(rng)
        base = "{{ " + gen.expr() + " }}"
    return mutate(base, rng) if rng.random() < 0.8 else base


_SCOPE = {
    "input": {
        "a": "x",
        "b": [1, 2],
        "n": 3,
        "xs": [{"a": 1}, {"a": None}],
        "name": "é",
        "flag": True,
    },
    "E0": {"items": [{"title": "t"}]},
}


def check_template(text: str) -> str | None:
    """Parse ``text`` as a template and render it against a fixed scope; the failure, or None."""
    from agentflow.errors import FlowError, RunError
    from agentflow.grammar.parser import parse_template
    from agentflow.runtime.expressions import render

    try:
        template = parse_template(text, "fuzz")
    except FlowError:
        return None
    try:
        render(template, _SCOPE)
    except (RunError, FlowError):
        pass
    return None


# --------------------------------------------------------------------------- the LSP


def lsp_session(rng: random.Random, messages: int, seeds: list[str]) -> tuple[int, list[str]]:
    """Drive one ``flowc lsp`` process with ``messages`` random messages (document edits with
    fuzzed programs, requests at random positions, malformed params); ``(messages sent,
    failures)`` — a request without an answer in 20 s, an exit, a traceback on stderr."""
    import sys
    import tempfile

    from agentflow.lsp.client import LspClient, LspError

    failures: list[str] = []
    err = tempfile.TemporaryFile()
    client = LspClient([sys.executable, "-m", "agentflow", "lsp"], stderr=err)
    sent = 0
    try:
        if rng.random() < 0.5:  # a request before `initialize` is an error reply, not silence
            try:
                client.request("textDocument/hover", {}, timeout=30)
            except LspError as e:
                if e.code is None:
                    failures.append("no reply to a request before initialize")
        client.initialize(options={"debounce_ms": 0})
        uris = [f"file:///fuzz/doc{i}.flow" for i in range(3)]
        versions = dict.fromkeys(uris, 0)
        texts: dict[str, str] = {}
        methods = [
            "textDocument/hover",
            "textDocument/definition",
            "textDocument/completion",
            "textDocument/documentSymbol",
            "textDocument/references",
            "textDocument/prepareRename",
            "textDocument/rename",
            "textDocument/formatting",
            "textDocument/codeAction",
        ]
        for _ in range(messages):
            sent += 1
            uri = rng.choice(uris)
            k = rng.randrange(10)
            if k < 3 or uri not in texts:
                text = gen_program(rng, seeds)
                versions[uri] += 1
                if uri not in texts:
                    client.open(uri, text, versions[uri])
                else:
                    client.change(uri, text, versions[uri])
                texts[uri] = text
                continue
            method = rng.choice(methods)
            lines = texts[uri].split("\n")
            line = rng.randrange(len(lines) + 2)
            char = rng.randrange(len(lines[line]) + 3 if line < len(lines) else 5)
            position: Any = {"line": line, "character": char}
            if rng.random() < 0.05:
                position = rng.choice([{"line": -1, "character": 0}, {"line": "x"}, None])
            params: dict[str, Any] = {"textDocument": {"uri": uri}, "position": position}
            if method == "textDocument/rename":
                params["newName"] = rng.choice(["y", "input", "1x", "renamed"])
            elif method == "textDocument/references":
                params["context"] = {"includeDeclaration": True}
            elif method == "textDocument/formatting":
                params = {
                    "textDocument": {"uri": uri},
                    "options": {"tabSize": 2, "insertSpaces": True},
                }
            elif method == "textDocument/codeAction":
                p0 = {"line": line, "character": 0}
                params = {
                    "textDocument": {"uri": uri},
                    "range": {"start": p0, "end": p0},
                    "context": {"diagnostics": []},
                }
            elif method == "textDocument/documentSymbol":
                params = {"textDocument": {"uri": uri}}
            try:
                client.request(method, params, timeout=20)
            except LspError as e:
                if e.code is None:
                    failures.append(f"{method}: {e}")
                    break
                if e.code == -32603:
                    failures.append(f"{method}: internal error {e}")
    finally:
        client.close()
        err.seek(0)
        log = err.read().decode("utf-8", "replace")
        err.close()
    if "Traceback" in log:
        failures.append("traceback on stderr: " + log[log.index("Traceback") :][:500])
    return sent, failures


# --------------------------------------------------------------------------- running


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`_Hang` in the main thread after ``seconds`` (no-op off the main thread)."""
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise _Hang()

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Outcome:
    """What a fuzzing run found: ``inputs`` tried, ``failures`` (with up to ``keep`` samples of
    ``(reason, input)``), ``slowest`` input in seconds."""

    kind: str
    inputs: int = 0
    failures: int = 0
    samples: list[tuple[str, str]] = field(default_factory=list)
    slowest: float = 0.0
    seconds: float = 0.0
    #: seconds each input took, in the order tried (``lsp``: empty)
    times: list[float] = field(default_factory=list)
    #: the slowest inputs seen, ``(seconds, input)``, slowest first (at most ``keep``)
    slow: list[tuple[float, str]] = field(default_factory=list)

    def percentile(self, q: float) -> float:
        """The ``q``-quantile (0–1) of :attr:`times` in seconds (nearest rank), 0 when empty."""
        if not self.times:
            return 0.0
        ordered = sorted(self.times)
        return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]

    def line(self) -> str:
        """``N inputs, N failures`` and the timing (per-input p50/p99/max in milliseconds)."""
        return (
            f"{self.kind}: {self.inputs} inputs, {self.failures} failures "
            f"(per input p50 {self.percentile(0.5) * 1000:.1f} ms, "
            f"p99 {self.percentile(0.99) * 1000:.1f} ms, max {self.slowest * 1000:.0f} ms; "
            f"{self.seconds:.0f} s in all)"
        )


def run(
    kind: str,
    n: int,
    seed: int = 0,
    *,
    time_limit: float = 20.0,
    keep: int = 5,
    progress: Callable[[Outcome], None] | None = None,
) -> Outcome:
    """Fuzz ``n`` inputs of ``kind`` (programs, plans, templates, lsp: ``n`` messages) with
    ``seed``; an input running longer than ``time_limit`` seconds counts as a hang."""
    rng = random.Random(seed)
    out = Outcome(kind)
    started = time.perf_counter()
    if kind == "lsp":
        sessions = max(1, n // 200)
        seeds = seed_programs()
        for _ in range(sessions):
            sent, failures = lsp_session(rng, n // sessions, seeds)
            out.inputs += sent
            out.failures += len(failures)
            out.samples += [(f, "") for f in failures][: keep - len(out.samples)]
        out.seconds = time.perf_counter() - started
        return out
    if kind == "programs":
        seeds = seed_programs()
        make: Callable[[], str] = lambda: gen_program(rng, seeds)  # noqa: E731
        check: Callable[[str], str | None] = check_program
    elif kind == "plans":
        plan_seeds = seed_plans()
        make = lambda: gen_plan(rng, plan_seeds)  # noqa: E731
        check = check_plan
    elif kind == "templates":
        make = lambda: gen_template(rng)  # noqa: E731
        check = check_template
    else:
        raise ValueError(f"unknown fuzz kind {kind!r}")
    for i in range(n):
        text = make()
        t0 = time.perf_counter()
        try:
            with _time_limit(time_limit):
                reason = check(text)
        except _Hang:
            reason = f"hang: no answer within {time_limit:g} s"
        except RecursionError:
            reason = "RecursionError"
        except Exception as exc:  # noqa: BLE001 - every other exception is a failure
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            reason = f"{type(exc).__name__} at {Path(tb.filename).name}:{tb.lineno}: {exc}"[:300]
        took = time.perf_counter() - t0
        out.slowest = max(out.slowest, took)
        out.times.append(took)
        if len(out.slow) < keep or took > out.slow[-1][0]:
            out.slow = sorted([*out.slow, (took, text)], key=lambda p: -p[0])[:keep]
        out.inputs += 1
        if reason is not None:
            out.failures += 1
            if len(out.samples) < keep:
                out.samples.append((reason, text))
        if progress is not None and (i + 1) % 1000 == 0:
            out.seconds = time.perf_counter() - started
            progress(out)
    out.seconds = time.perf_counter() - started
    return out
