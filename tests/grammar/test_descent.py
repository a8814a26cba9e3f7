"""The fast path of ``parse_module`` (grammar/descent.py) builds exactly the LALR path's AST, and
answers only for files the LALR path parses without a diagnostic (every other file, and so every
diagnostic, is the LALR path's)."""

from __future__ import annotations

import dataclasses
import importlib.util
import random
from pathlib import Path
from typing import Any

import pytest

from agentflow.core.spans import Span
from agentflow.core.vocabulary import KEYWORDS
from agentflow.grammar.descent import parse_clean
from agentflow.grammar.lalr import DRIVER
from agentflow.grammar.parser import parse_module, parse_module_lalr
from agentflow.grammar.scanner import SynErr, lex

ROOT = Path(__file__).resolve().parents[2]


def _corpus() -> list[Path]:
    """Every `.flow` file of the repository (examples, tutorials, test corpora, the prelude)."""
    return sorted(
        p
        for p in ROOT.rglob("*.flow")
        if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
    )


def _generated(lines: int) -> str:
    """The benchmark's generated program (bench/check_speed.py)."""
    spec = importlib.util.spec_from_file_location("check_speed", ROOT / "bench" / "check_speed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text: str = module.generate(lines)
    return text


def difference(a: Any, b: Any, path: str = "items") -> str | None:
    """Where two ASTs differ (node classes, field values, spans, list classes), or None."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, list | tuple):
        if len(a) != len(b):
            return f"{path}: {len(a)} != {len(b)} entries"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, Span) or not dataclasses.is_dataclass(a):
        return None if a == b else f"{path}: {a!r} != {b!r}"
    for f in dataclasses.fields(a):
        found = difference(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
        if found:
            return found
    return None


def assert_same_as_lalr(text: str, file: str = "t.flow", *, taken: bool | None = None) -> None:
    """The fast path gives the LALR path's items, or declines where the LALR path reports; and
    ``parse_module`` (which starts the LALR path after the items the fast path kept) gives the
    LALR path's module and diagnostics."""
    module, diags = parse_module_lalr(text, file)
    fast, fast_diags = parse_module(text, file)
    assert fast_diags == diags, f"{file}: {fast_diags} != {diags}"
    found = difference(fast, module, "module")
    assert found is None, f"{file}: {found}"
    if any("\udc80" <= c <= "\udcff" for c in text):
        return  # parse_module does not ask the fast path about bytes that are not UTF-8
    items = parse_clean(text, file, DRIVER)
    if items is None:
        assert taken is not True, f"the fast path declined a clean file: {file}"
        return
    assert not diags, f"the fast path took a file with a syntax error: {diags[0].message}"
    found = difference(items, module.items)
    assert found is None, f"{file}: {found}"


def test_every_clean_corpus_file_takes_the_fast_path_and_gives_the_lalr_ast():
    clean = 0
    for path in _corpus():
        text = path.read_text(encoding="utf-8")
        has_errors = bool(parse_module_lalr(text, str(path))[1])
        assert_same_as_lalr(text, str(path), taken=not has_errors)
        clean += not has_errors
    assert clean >= 80  # the corpus is not empty


def test_the_generated_benchmark_program_gives_the_lalr_ast():
    assert_same_as_lalr(_generated(600), taken=True)


@pytest.mark.parametrize(
    "text",
    [
        # contextual keywords: names where the grammar does not expect the keyword
        "stage s -> int {\n  let x = 1\n  input.limit\n}\n",
        "stage s -> int {\n  let limit = 3\n  let map = { input: 1, limit: 2 }\n  limit\n}\n",
        "type T { input: text, map: int, limit: int? }\nstage s -> T { { input: "
        '"a", map: 1, limit: null } }\n',
        "stage s -> int {\n  let test = 1\n  test\n}\n",
        "stage s -> int { x.input.map.stage.type }\n",
        "extern tool limit(map: int, input?: text) -> int\n",
        # the newline rule: these begin a statement, never continue one
        "stage s -> int {\n  a\n  (b)\n}\n",
        "stage s -> int {\n  a\n  -b\n}\n",
        "stage s -> int {\n  a\n  [1, 2]\n}\n",
        "stage s -> int {\n  a\n  not b\n}\n",
        "stage s -> int {\n  f(a,\n    (b))\n}\n",
        "stage s -> int { a not in b and not c }\n",
        # doc comments, comments, strings
        "/// one\n// not doc\n/// two\nstage s -> int { 1 }\n/** block\n */ type T { /// f\n x: int }\n",
        'stage s -> text { "a ${x.y} b ${f(x)} c" }\n',
        'stage s -> text {\n  """\n    a ${x}\n      b\n  """\n}\n',
        # separators: commas and line breaks
        "stage s -> int { [,1,,2,] }\n",
        "stage s -> int { f(a,,b,) }\n",
        "type T {\n  a: int,\n  b: int\n  c: int @range(0, 1) @length(1, 2)\n}\n",
        # every kind of expression the grammar has
        "stage s -> int {\n  let a = filter xs as x where judge x\n  let b = ask q expect T "
        "default 1\n  let c = try { 1 } catch on [timeout, rate_limit,] as e { 2 }\n  let d = "
        "if a then b else if c then d else e\n  let e = loop up to 3 as i, acc: int = 0 { acc }"
        ' until acc > 1 else fail "x"\n  let f = verify { check a else "m" judge "j" }\n  '
        "let g = reduce xs as x, acc = 0 { acc }\n  let h = xs[*].a[0].b\n  let i = (xs[*].a).b"
        "\n  let j = parallel map xs as x limit 2 tolerate 10 % { x }\n  a catch { 1 }\n}\n",
        # `sleep`: a statement at a statement's start, a name elsewhere (`sleep(`: a call)
        "stage s -> int {\n  sleep 5m\n  sleep input.wait + 1s\n  let sleep_x = input.sleep\n"
        "  if a { sleep 1s } else { sleep (x) }\n  sleep(n: 1)\n  1\n}\n",
        # imports: names separated by commas (a trailing one too), over several lines
        'import { A, B, } from "./shared.flow"\nimport {\n  C,\n  D\n} from "../x.flow"\n'
        "type T { from: int, import: text }\nstage s -> int {\n  let from = 1\n  from\n}\n",
        # a test and an eval block
        'test "t" map cases as c {\n  input {}\n  stub agent a returns 1 then fails "timeout" '
        'then always 2\n  stub ask q returns "y" then always "n"\n  stub step s returns 1\n  '
        'expect fail "timeout"\n  expect x == 1\n  replay "c.jsonl"\n}\neval "e" {\n  dataset '
        '"d.jsonl"\n  expect T\n  score s = x threshold 50%\n  judge j "r" threshold 0.5\n}\n',
    ],
)
def test_constructs_give_the_lalr_ast(text):
    assert_same_as_lalr(text)


@pytest.mark.parametrize(
    "text",
    [
        "stage s -> int {\n  a +\n}\n",  # a syntax error
        "type T { a: int b: int }\n",  # a line break or comma missing between fields
        "stage s -> int { a < b < c }\n",  # comparisons do not chain
        "stage s -> int { 1 }\n\x00",  # an unexpected character
        'stage s -> int { "\udcff" }\n',  # bytes that are not UTF-8
        "stage s -> int {\n",  # unclosed
        # errors after items the fast path kept (the LALR path starts at the last item but one)
        "type A = int\ntype B = text\ntype C = B\n  ]\nstage s -> int { 1 }\n",
        "type A = int\n/// b\ntype B = text\n/// c\ntype C = A |\nstage s -> int { 1 }\n",
        "type A = int\ntype B = text type C = int\nstage s -> int { a + }\n",
        "type A = int\ntype B = text\nstage s -> int {\n  x +\n}\nstage t -> int { 1 }\n",
        'flow f "d"\ntype A = int\nstage s -> int { 1 } )\nstage t -> int { "a ${b +} c" }\n',
    ],
)
def test_files_with_a_diagnostic_take_the_lalr_path(text):
    assert parse_module_lalr(text, "t.flow")[1]
    assert_same_as_lalr(text)


#: what a mutation inserts: every keyword, brackets, operators, line breaks, names, literals
_INSERTS = sorted(KEYWORDS) + (
    "( ) [ ] { } , : . - ? | @ == .. * = -> x 1 5m".split()
    + ["\n", "\n(", "\n-", "\n[", "\nnot ", '"s"', "not in", "///d\n"]
)


_WORDS = sorted(KEYWORDS)
#: line breaks and comments, mostly insignificant (not before `(`, `[`, `-` or `not`)
_BREAKS = ["\n", "\n  ", " // c\n", " /* c\n */ ", "\n/// d\n"]


def mutants(texts: list[str], count: int, seed: int) -> list[str]:
    """``count`` texts made from ``texts`` by one to three token edits each: a token deleted or
    duplicated; a word, bracket, operator or line break inserted before or after a token; a
    name replaced by a keyword; a line break or comment inserted before a token."""
    rnd = random.Random(seed)
    out = []
    while len(out) < count:
        text = rnd.choice(texts)
        for _ in range(rnd.randint(1, 3)):
            try:
                toks = [t for t in lex(text) if t.type != "NL"]
            except SynErr:
                break
            if not toks:
                break
            tok = rnd.choice(toks)
            op = rnd.random()
            a, b = tok.start, tok.end
            gap = rnd.choice(["", " "])
            if op < 0.2:
                text = text[:a] + text[b:]
            elif op < 0.3:
                text = text[:a] + text[a:b] + " " + text[a:]
            elif op < 0.55:
                text = text[:a] + rnd.choice(_INSERTS) + gap + text[a:]
            elif op < 0.65:
                text = text[:b] + gap + rnd.choice(_INSERTS) + text[b:]
            elif op < 0.85 and tok.type == "NAME":
                # a keyword where a name was: a name wherever the grammar does not expect it
                text = text[:a] + rnd.choice(_WORDS) + text[b:]
            else:
                text = text[:a] + rnd.choice(_BREAKS) + text[a:]
        out.append(text)
    return out


def test_mutated_programs_give_the_lalr_ast_or_take_the_lalr_path():
    """A small run of ``bench/descent_fuzz.py`` (which runs thousands)."""
    texts = [p.read_text(encoding="utf-8") for p in _corpus()[:40]] + [_generated(120)]
    for text in mutants(texts, 150, seed=35):
        assert_same_as_lalr(text)


TOOL_CALL_CLAUSES = """\
extern tool user__f(n: int) -> int
input { n: int, xs: int[] }
stage s -> int {
  let a = user__f(n: input.n) timeout 10s retry { attempts: 2, on: [timeout, transient] }
  let b = user__f(n: a) retry { attempts: 1 } timeout 1m + 30s
  let c = user__f(n: b) retry { attempts: 1, on: [rate_limit,] } catch on [timeout] as e { 0 }
  let d = (user__f(n: c) timeout 1s) + 1
  let e = map input.xs as x { user__f(n: x) timeout 2s }
  return user__f(n: d + e.count) timeout 3s
}
"""


@pytest.mark.parametrize(
    ("text", "taken"),
    [
        (TOOL_CALL_CLAUSES, True),
        # a clause word starting a line where a statement may start is a name: the fast path
        # leaves that to the LALR path, which has the parser's state
        (TOOL_CALL_CLAUSES.replace("  return", "  let timeout = 1\n  timeout\n  return"), False),
        (TOOL_CALL_CLAUSES.replace(" timeout 3s", "\n  retry"), False),
    ],
    ids=["clauses", "name-after-let", "name-after-return"],
)
def test_tool_call_clauses_give_the_lalr_ast(text, taken):
    assert_same_as_lalr(text, taken=taken)
