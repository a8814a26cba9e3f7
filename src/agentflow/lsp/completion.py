"""Completion: context-sensitive items at the cursor (docs/spec/LANGUAGE.md §2–8) — fields
after ``.``, types after ``expect``/``->``/``:``, tools in ``tools [...]``, agent clauses,
top-level words, and the names in scope where an expression may start.

The context comes from the raw scanner tokens before the cursor (:func:`_context`); names come
from an analysis in which the cursor's item parses (:func:`names_analysis`)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentflow.compiler import type_names
from agentflow.compiler import types as T
from agentflow.compiler.api import check_file, check_source
from agentflow.compiler.check_stub_steps import is_step, named_steps
from agentflow.compiler.checker import CheckResult
from agentflow.compiler.lower_parallel import effectful
from agentflow.core.functions import FUNCTIONS
from agentflow.core.vocabulary import (
    AGENT_CLAUSES,
    BUILTIN_TYPES,
    CALL_CLAUSES,
    EVAL_WORDS,
    EXPRESSION_WORDS,
    STATEMENT_WORDS,
    STUB_KINDS,
    TEST_WORDS,
    TOP_LEVEL_WORDS,
)
from agentflow.grammar import ast
from agentflow.grammar.scanner import COMMENTS, SynErr, Tok, comments, lex
from agentflow.lsp import errors_help, locate, user_functions

if TYPE_CHECKING:
    from agentflow.lsp.analysis import Analysis


_WORD_TAIL = re.compile(r"[A-Za-z0-9_]*\Z")
#: a `match` whose `{` ends the text before the cursor: its first arm is being written
_MATCH_OPEN = re.compile(r"\bmatch\b[^{\n]*\{\s*\Z")
#: a `loop`'s `until` before the cursor on its line, its condition being typed
_UNTIL_TYPED = re.compile(r"\buntil\b[^\n]*\Z")
#: ``stub step r.`` ending the text before the cursor's word: the branches of ``r`` follow
_STUB_BRANCH = re.compile(r"(?:^|\n)[ \t]*stub[ \t]+step[ \t]+([A-Za-z_][A-Za-z0-9_]*)\.\Z")


#: keywords offered where a statement or an expression may start
STATEMENT_KEYWORDS = (*STATEMENT_WORDS, "else", *EXPRESSION_WORDS)


@dataclass(slots=True)
class Completion:
    """One completion item: ``kind`` is ``field``, ``type``, ``tool``, ``function``,
    ``keyword``, ``variable``, ``stage``, ``agent`` or ``property``; ``detail`` a type or
    signature."""

    label: str
    kind: str
    detail: str | None = None
    doc: str | None = None


def completions(a: Analysis, offset: int, text: str | None = None) -> list[Completion]:
    """Completion items at ``offset`` of ``text`` (default: the analysed text; pass the
    current buffer when this analysis is of an older version)."""
    text = a.text if text is None else text
    offset = max(0, min(offset, len(text)))
    word = _WORD_TAIL.search(text, 0, offset)
    wstart = word.start() if word else offset
    before = text[:wstart]
    # 1. fields after `.` (in a test, `stub step r.`: the branches of `let r = parallel {…}`)
    if before.endswith(".") and not before.endswith(".."):
        stubbed = _STUB_BRANCH.search(before)
        if stubbed is not None:
            return branch_completions(names_analysis(a, text, wstart), stubbed.group(1))
        return member_completions(a, text, wstart - 1, offset)
    try:
        toks = [t for t in lex(before) if t.type not in COMMENTS]
    except SynErr:
        if locate.code_start(text, wstart):  # inside a string's `${…}`: an expression
            return expr_completions(names_analysis(a, text, wstart), wstart)
        return []  # inside a string or comment
    if _inside_comment(text, wstart):
        return []
    ctx = _context(toks)
    code = [t for t in toks if t.type != "NL"]
    prev = code[-1].value if code else None
    at_line_start = not text[text.rfind("\n", 0, wstart) + 1 : wstart].strip()
    if ctx.tools_list:
        return tool_completions(a)
    if prev == "(" and len(code) >= 2 and code[-2].value == "agent":  # `agent(|`: an alias
        return alias_completions(names_analysis(a, text, wstart))
    if ctx.test_block:
        # a `test` block (docs/reference/testing.md): its items, then stub targets
        if at_line_start:
            return [Completion(k, "keyword", "test item") for k in ("input", "expect")] + [
                Completion(TEST_WORDS[0], "keyword", "test item"),
                Completion("replay", "keyword", 'replay "cassette.jsonl"'),
            ]
        if prev == "stub":
            return [Completion(k, "keyword") for k in STUB_KINDS]
        if prev == "step" and len(code) >= 2 and code[-2].value == "stub":
            return step_completions(names_analysis(a, text, wstart))
        if (
            prev in ("agent", "stage", "tool", "ask")
            and len(code) >= 2
            and code[-2].value == "stub"
        ):
            return stub_completions(names_analysis(a, text, wstart), prev)
        failing = errors_help.stub_fail_codes(code)
        if failing is not None:  # `stub agent A fails |`: the codes it may fail with
            return [Completion(*c) for c in failing]
        if prev == "expect":
            extra = [Completion("fail", "keyword", 'expect fail "code"')] + [
                Completion(n, "variable") for n in ("output", "inferences", "calls")
            ]
            return extra + expr_completions(names_analysis(a, text, wstart), wstart)
    if ctx.eval_block:
        # an `eval` block (docs/reference/evals.md): its items, then the scorers' names
        if at_line_start:
            return [
                Completion("dataset", "keyword", 'dataset "cases.jsonl"'),
                Completion("expect", "keyword", "expect T: the type of `expected`"),
                Completion("score", "keyword", "score NAME = E [threshold N]"),
                Completion("judge", "keyword", 'judge NAME "rubric" [threshold N]'),
            ]
        if prev not in (*EVAL_WORDS, "judge", "expect"):  # not a scorer's name or a path
            names = [Completion(n, "variable") for n in ("output", "expected", "usage", "case")]
            return names + expr_completions(names_analysis(a, text, wstart), wstart)
    if ctx.depth == 1 and prev in ("{", ",") and _import_braces(code):
        return import_completions(a, code, text[offset:])
    listed = errors_help.open_on_list(code)
    if listed is not None:  # inside `catch on [ … ]`: what the guarded expression can fail with
        if code[-1].value not in ("[", ","):
            return []
        return [
            Completion(*c) for c in errors_help.code_completions(a, text, wstart, offset, listed)
        ]
    head = user_functions.header_at(code, text, at_line_start)
    if head is not None and head.in_body:  # a `fn` body: pure, whether or not it parses yet
        scope = names_analysis(a, text, wstart)
        return [Completion(*c) for c in user_functions.body_completions(scope, head)] + [
            c for c in function_completions() if c.label not in scope.result.functions
        ]
    if head is not None and prev == ":" and ctx.depth == 1:  # `fn f(x: |`
        return type_completions(names_analysis(a, text, wstart))
    if prev == "loop":  # `loop up to N as round, state = init { … }`
        return [Completion("up to", "keyword", "loop up to N as round, state = init { … }")]
    if prev == "parallel":  # `parallel map xs as x { … }`, `parallel [limit N] { a: …, b: … }`
        return [
            Completion("map", "keyword", "parallel map xs as x limit N { … }"),
            Completion("limit", "keyword", "parallel limit N { name: expr, … }: branches at once"),
        ]
    if prev == "up" and len(code) >= 2 and code[-2].value == "loop":
        return [Completion("to", "keyword", "loop up to N")]
    found = errors_help.completions(code)  # tolerate, catch on [codes] as
    if found is not None:
        return [Completion(*c) for c in found]
    if prev in ("{", ","):  # an arm of a `match` begins: the values its subject has left
        left = _match_arm_completions(names_analysis(a, text, wstart), wstart)
        if not left and prev == "{" and _MATCH_OPEN.search(before):
            # `match x { }`: no arm yet, so it does not parse — a placeholder arm after the
            # cursor makes it (and is no arm of the user's)
            filled = a.reanalyze(text[:wstart] + " _ => null" + text[offset:])
            left = _match_arm_completions(filled, wstart)
        if left:
            return left
    if (
        prev in ("expect", "->", "<")
        or (prev == ":" and ctx.type_colon)
        or (prev == "|" and ctx.in_type)
        or (prev == "=" and ctx.type_alias)
    ):
        return type_completions(names_analysis(a, text, wstart))
    if prev in ("input", "output") and len(code) >= 1 and ctx.depth == 0:
        return type_completions(names_analysis(a, text, wstart))
    if ctx.agent_block and at_line_start:
        present = _clauses_present(toks, text[offset:])
        return [Completion(c, "keyword", "agent clause") for c in AGENT_CLAUSES if c not in present]
    if ctx.depth == 0 and at_line_start:
        return [Completion(k, "keyword") for k in TOP_LEVEL_WORDS]
    catch = errors_help.after_expression(code)
    if at_line_start and prev != "}":
        catch = []
    elif _after_call(code):  # a tool call's clauses (docs/reference/tools.md)
        catch = catch + [
            (w, "keyword", f"tool call clause: {ex}") for w, ex in CALL_CLAUSES.items()
        ]
    if catch:  # a finished expression: the keyword an open `if`/`until` on the line waits for
        catch = _awaited_keywords(text[text.rfind("\n", 0, wstart) + 1 : wstart]) + catch
    return [Completion(*c) for c in catch] + expr_completions(
        names_analysis(a, text, wstart), wstart
    )


def step_completions(a: Analysis) -> list[Completion]:
    """After ``stub step`` (docs/reference/testing.md): the ``let``s of the stages that run as a
    step of their own, each with its type and stage; a ``parallel`` block with a branch that
    runs is offered too, its detail saying how its branches are stubbed."""
    out: list[Completion] = []
    seen: set[str] = set()
    for step in named_steps(a.result.stages, a.result.expr_types):
        value, name = step.value, step.name
        if name is None or name in seen:
            continue
        doc = None
        if isinstance(value, ast.ParallelExpr):
            runs = [b.key for b in value.branches if effectful(b.value)]
            if not runs:
                continue
            doc = (
                f"a `parallel` block: `stub step {name}` stubs it whole, `stub step "
                f"{name}.{runs[0]}` one branch"
                if len(runs) == len(value.branches)
                else f"a `parallel` block with a branch computed from other values: stub its "
                f"branches that run one by one (`stub step {name}.{runs[0]}`)"
            )
        elif not is_step(value):
            continue
        seen.add(name)
        out.append(
            Completion(
                name,
                "variable",
                f"{type_names.spelt(a.result.env, step.type)} (stage {step.stage})",
                doc,
            )
        )
    return out


def alias_completions(a: Analysis) -> list[Completion]:
    """Inside ``agent(`` and after ``stub agent``: the ``use`` aliases, each with what it uses."""
    return [
        Completion(alias, "agent", f'use {u.kind} "{u.target}"')
        for alias, u in a.result.uses.items()
    ]


def stub_completions(a: Analysis, kind: str) -> list[Completion]:
    """After ``stub agent|stage|tool|ask`` (docs/reference/testing.md): what that kind of stub
    names — the ``use`` aliases, the stages, the tools, or the ``let``s bound to an ``ask`` and
    the stages that ask."""
    if kind == "agent":
        return alias_completions(a)
    if kind == "tool":
        return tool_completions(a)
    res = a.result
    out: list[Completion] = []
    if kind == "ask":
        seen: set[str] = set()
        for step in named_steps(res.stages, res.expr_types):
            if step.name and step.name not in seen and isinstance(step.value, ast.AskExpr):
                seen.add(step.name)
                asked = type_names.spelt(res.env, step.type)
                out.append(Completion(step.name, "variable", f"{asked} (stage {step.stage})"))
    for stage in res.stages:
        name = stage.name.name
        if kind == "ask" and not any(isinstance(n, ast.AskExpr) for n in ast.walk(stage.body)):
            continue
        t = res.stage_types.get(name)
        shown = type_names.spelt(res.env, t) if t is not None else None
        out.append(
            Completion(name, "stage", "every `ask` of this stage" if kind == "ask" else shown)
        )
    return out


def branch_completions(a: Analysis, name: str) -> list[Completion]:
    """After ``stub step NAME.`` (docs/reference/testing.md "Stubbing a parallel block"): the
    branches of ``let NAME = parallel { … }`` that run as a step (a pure branch cannot be
    stubbed), each with its type, in the order written."""
    out: list[Completion] = []
    seen: set[str] = set()
    for step in named_steps(a.result.stages, a.result.expr_types):
        if step.name != name or not isinstance(step.value, ast.ParallelExpr):
            continue
        for b in step.value.branches:
            if b.key in seen or not effectful(b.value):
                continue
            seen.add(b.key)
            detail = (
                f"{type_names.spelt(a.result.env, a.result.type_of(b.value))} (branch of `{name}`)"
            )
            out.append(Completion(b.key, "field", detail))
    return out


def names_analysis(a: Analysis, text: str, offset: int) -> Analysis:
    """An analysis in which the item around ``offset`` parses: this one when it is of
    ``text`` and that item is fine, else one of ``text`` with the cursor's line blanked out
    (offsets unchanged), which is what lets half-typed statements see their scope."""
    if text == a.text and not any(
        isinstance(i, ast.ErrorItem) and i.span.start <= offset <= i.span.end
        for i in a.module.items
    ):
        return a
    if text != a.text:  # an older analysis: the text being typed may parse as it is
        current = a.reanalyze(text)
        if not any(
            isinstance(i, ast.ErrorItem) and i.span.start <= offset <= i.span.end
            for i in current.module.items
        ):
            return current
    ls = text.rfind("\n", 0, offset) + 1
    le = text.find("\n", offset)
    le = len(text) if le < 0 else le
    if _UNTIL_TYPED.search(text, ls, offset) and "else" not in text[offset:le]:
        # `} until ` / `} until acc >`: the condition being typed, the loop's `else` not yet —
        # the rest of the condition and an `else` filled in, the loop's names are in scope
        filled = a.reanalyze(text[:offset] + ' true else fail ""' + text[le:])
        if not any(
            isinstance(i, ast.ErrorItem) and i.span.start <= offset <= i.span.end
            for i in filled.module.items
        ):
            return filled
    return a.reanalyze(text[:ls] + " " * (le - ls) + text[le:])


def member_completions(a: Analysis, text: str, dot: int, offset: int) -> list[Completion]:
    """Fields after the ``.`` at ``dot``: the text is re-checked with ``.partial`` blanked out
    and the expression that ends at the dot is typed. In a string's ``${…}`` still open
    (``"hi ${input.``), a second try closes the interpolation and its strings there and drops
    the rest of the line."""
    m = re.compile(r"[A-Za-z0-9_]*").match(text, offset)
    end = m.end() if m else offset
    found = _typed_at(a, text[:dot] + " " * (end - dot) + text[end:], dot)
    close = locate.closers(text, dot)
    if found is None and close:
        le = text.find("\n", end)
        found = _typed_at(a, text[:dot] + " " + close + (text[le:] if le >= 0 else ""), dot)
    if found is None:
        found = _receiver_alone(a, text, dot)
    if found is None:
        return []
    best, patched_result = found
    t = patched_result.type_of(best)
    env = patched_result.env
    if isinstance(best, ast.Projection) and best.path is None:
        lt = env.resolve(t)
        if isinstance(lt, T.ListType):
            t = lt.elem
    return _fields_of(t, env)


#: the receiver of a ``.`` being typed, at the end of the text before it: a name, then fields,
#: indexes and call arguments (one level of brackets), ``it``, ``input.items[0]``, ``f(x).a``
_RECEIVER = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\[\]\n]*\]|\([^()\n]*\))*"
    r"(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\[[^\[\]\n]*\]|\([^()\n]*\))*)*\Z"
)


def _receiver_alone(a: Analysis, text: str, dot: int) -> tuple[ast.Expr, CheckResult] | None:
    """The last try of :func:`member_completions`: the receiver before the dot alone on its
    line, what precedes it on the line blanked out and what follows dropped (offsets kept), so
    that a half-written line that does not parse — ``let lab = if it.`` (no ``then`` yet),
    ``take(top[0].`` (no ``)``) — still types it. Not when the blanked text holds a brace (a
    block opened or closed on the line) or the receiver is a keyword's operand it needs."""
    ls = text.rfind("\n", 0, dot) + 1
    m = _RECEIVER.search(text, ls, dot)
    if m is None or m.start() == ls and not text[ls:dot].strip():
        return None
    prefix = text[ls : m.start()]
    if "{" in prefix or "}" in prefix or prefix.count('"') % 2 or "//" in prefix:
        return None
    le = text.find("\n", dot)
    le = len(text) if le < 0 else le
    if "{" in text[dot:le] or "}" in text[dot:le]:
        return None
    patched = text[:ls] + " " * len(prefix) + text[m.start() : dot] + " " * (le - dot) + text[le:]
    return _typed_at(a, patched, dot)


def _typed_at(a: Analysis, patched: str, dot: int) -> tuple[ast.Expr, CheckResult] | None:
    """The outermost expression of ``patched`` (checked) that ends at ``dot``, with the check."""
    patched_result = check_source(patched, a.module.file)
    best: ast.Expr | None = None
    for n in ast.walk(patched_result.module):
        if (
            isinstance(n, ast.Expr)
            and n.span.end == dot
            and not isinstance(
                n,
                (
                    ast.Binary,
                    ast.Unary,
                    ast.RangeExpr,
                    ast.FilterExpr,
                    ast.AskExpr,
                    ast.ProjectionItem,
                    ast.CondExpr,  # `if c then a else it.`: the dot ends `it`, not the `if`
                    ast.LoopExpr,  # `… until c else s.`
                ),
            )
        ):
            if best is None or n.span.start < best.span.start:
                best = n
    return None if best is None else (best, patched_result)


def _import_braces(code: list[Any]) -> bool:
    """Whether the tokens end inside the braces of ``import { … }``."""
    i = len(code) - 1
    while i >= 0 and (code[i].value == "," or _NAME.fullmatch(str(code[i].value))):
        i -= 1
    return i >= 1 and code[i].value == "{" and code[i - 1].value == "import"


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_IMPORT_REST = re.compile(r'[^}"]*\}\s*from\s*"([^"\n]+)"')


def import_completions(a: Analysis, code: list[Any], after: str) -> list[Completion]:
    """Inside ``import { … } from "PATH"``: the types PATH declares, those already named left
    out (docs/reference/programs.md "import")."""
    m = _IMPORT_REST.match(after)
    if m is None or not m.group(1).startswith(("./", "../")):
        return []
    try:
        result = check_file(os.path.join(os.path.dirname(a.module.file), m.group(1)))
    except OSError:
        return []
    named = {t.value for t in code}
    out = []
    for name, decl in result.type_decls.items():
        if decl.span.file == result.module.file and name not in named:
            if isinstance(decl, ast.ExternType):
                summary = f"extern type {name}"
            else:
                summary = f"type {name} = …" if decl.alias is not None else f"type {name} {{ … }}"
            out.append(Completion(name, "type", summary, decl.doc))
    return out


def type_completions(a: Analysis) -> list[Completion]:
    """Built-in and declared type names."""
    out = [Completion(n, "type", "built-in") for n in BUILTIN_TYPES]
    out.append(Completion("map", "type", "map<T>"))
    for name in locate.type_decls(a):
        out.append(
            Completion(
                name, "type", locate.type_summary(a, name).split("\n")[0], locate.type_doc(a, name)
            )
        )
    return out


def tool_completions(a: Analysis) -> list[Completion]:
    """Declared and prelude tools with their signatures, then untyped catalog tools."""
    out = []
    for name, sig in sorted(a.result.tool_decls.items()):
        out.append(
            Completion(name, "tool", locate.tool_text(a, sig), getattr(sig.decl, "doc", None))
        )
    for name in sorted(a.result.tools):
        if name not in a.result.tool_decls:
            out.append(Completion(name, "tool", "catalog tool (untyped)"))
    return out


def expr_completions(a: Analysis, offset: int) -> list[Completion]:
    """Names where an expression may start at ``offset``: ``input``, earlier stages, ``use``
    aliases, the ``let`` and loop variables in scope, tools and statement keywords."""
    res = a.result
    out: list[Completion] = [
        Completion("input", "variable", type_names.spelt(res.env, res.input_type))
    ]
    stage: ast.StageDecl | None = None
    for item in a.module.items:
        if isinstance(item, ast.StageDecl):
            if item.span.start <= offset <= item.span.end:
                stage = item
                break
            if item.span.end < offset and item.name.name in res.stage_types:
                out.append(
                    Completion(
                        item.name.name,
                        "stage",
                        type_names.spelt(res.env, res.stage_types[item.name.name]),
                    )
                )
    for alias, u in res.uses.items():
        out.append(Completion(alias, "agent", f'use {u.kind} "{u.target}"'))
    if stage is not None:
        seen: set[str] = set()
        for n in ast.walk(stage.body):
            if isinstance(n, ast.LetStmt) and n.span.end <= offset and n.name.name not in seen:
                seen.add(n.name.name)
                shown = type_names.spelt(res.env, T.widen(res.type_of(n.value)))
                out.append(Completion(n.name.name, "variable", shown))
            elif isinstance(n, (ast.MapExpr, ast.FilterExpr, ast.ReduceExpr)) and (
                n.span.start <= offset <= n.span.end
            ):
                if isinstance(n, ast.LoopExpr):  # `loop up to N as round, state = …`
                    out.append(Completion(n.var.name, "variable", "int (the round, 1-based)"))
                    out.append(Completion(n.acc.name, "variable", "loop state"))
                    continue
                out.append(Completion(n.var.name, "variable", "loop variable"))
                out.append(Completion("index", "variable", "int"))
                if isinstance(n, ast.ReduceExpr):
                    out.append(Completion(n.acc.name, "variable", "accumulator"))
            elif isinstance(n, (ast.CatchExpr, ast.TryExpr)) and n.var is not None:
                if n.body.span.start <= offset <= n.body.span.end:  # `catch … as err { … }`
                    out.append(Completion(n.var.name, "variable", "Error"))
    out.extend(tool_completions(a))
    out.extend(Completion(*c) for c in user_functions.completions(a))
    out.extend(function_completions())
    # `match` is a library function and a keyword: one item, the function's, inserts it
    out.extend(Completion(k, "keyword") for k in STATEMENT_KEYWORDS if k not in FUNCTIONS)
    return out


def function_completions() -> list[Completion]:
    """The library functions (docs/reference/functions.md), each with its signature and
    summary."""
    return [
        Completion(f.name, "function", f.signature, f"{f.summary}\n\ne.g. `{f.example}`")
        for f in FUNCTIONS.values()
    ]


def _fields_of(t: T.Type, env: T.TypeEnv) -> list[Completion]:
    t = env.resolve(T.strip_optional(env.resolve(t), env))
    out: list[Completion] = []
    if isinstance(t, T.VerdictType):
        t = T.VERDICT_OBJECT
    if isinstance(t, T.ObjectType):
        for k, f in t.fields.items():
            out.append(Completion(k, "field", type_names.spelt(env, f.type), f.doc))
    elif isinstance(t, (T.ListType, T.MapType)) or t == T.TEXT or t in (T.PATH, T.MEMBER):
        out.append(Completion("count", "property", "int"))
    elif isinstance(t, T.UseType) and t.kind == "team":
        out.append(Completion("main", "agent", "the team's main agent"))
        out.append(Completion("member", "agent", "member(name: text | member)"))
    return out


_OPEN = {"{", "[", "("}
_CLOSE = {"}", "]", ")"}


def _clauses_present(before: list[Tok], after: str) -> set[str]:
    """The clauses the agent block around the cursor already has: clause words at the start of
    one of its lines (or right after its ``{``), before the cursor (``before``: the lexed
    tokens up to it) and after it (``after``: the text from it, up to the block's ``}``)."""
    found: set[str] = set()
    start, depth = len(before) - 1, 0
    while start >= 0:  # back to the block's `{`
        tok = before[start]
        if tok.value in _CLOSE:
            depth += 1
        elif tok.value in _OPEN:
            if depth == 0:
                break
            depth -= 1
        start -= 1
    tokens = list(before[start + 1 :]) if start >= 0 else []
    try:
        tokens += [t for t in lex(after) if t.type not in COMMENTS]
    except SynErr:
        pass
    prev_value: object  # a token's value (text, or a string literal's), or a line break
    depth, prev_value = 0, "{"
    for tok in tokens:
        if tok.value in _OPEN:
            depth += 1
        elif tok.value in _CLOSE:
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and tok.value in AGENT_CLAUSES and prev_value in ("{", "\n", None):
            found.add(str(tok.value))
        prev_value = "\n" if tok.type == "NL" else tok.value
    return found


def _inside_comment(text: str, offset: int) -> bool:
    for c in comments(text):
        if c.start <= offset <= c.end and (c.type == "BLOCK" or offset > c.start):
            if (
                c.type != "BLOCK"
                and offset == c.end
                and offset < len(text)
                and text[offset] == "\n"
            ):
                return True
            return True
    return False


_BRACKETS = frozenset({"LPAR", "RPAR", "LSQB", "RSQB", "LBRACE", "RBRACE"})


@dataclass(slots=True)
class _Ctx:
    depth: int = 0
    in_type: bool = False
    type_colon: bool = False
    type_alias: bool = False
    tools_list: bool = False
    agent_block: bool = False
    test_block: bool = False
    eval_block: bool = False


def _context(toks: list[Tok]) -> _Ctx:
    """Bracket context at the end of ``toks`` (raw scanner tokens before the cursor)."""
    code = [t for t in toks if t.type != "NL"]
    stack: list[tuple[str, str]] = []  # (opener, role)
    last_closed_role = ""
    for i, t in enumerate(code):
        tx = t.value
        p1 = code[i - 1].value if i >= 1 else ""
        p2 = code[i - 2].value if i >= 2 else ""
        p3 = code[i - 3].value if i >= 3 else ""
        top = stack[-1][1] if stack else ""
        if t.type not in _BRACKETS:
            continue
        if tx == "{":
            if p2 == "type" or p1 == "->" or (p1 in ("input", "output") and not stack):
                role = "type"
            elif top == "type" and p1 in (":", "|", "(", "<", "[", "=", ","):
                role = "type"
            elif p1 == "=" and p3 == "type":
                role = "type"
            elif p1 == ")" and last_closed_role == "agent":
                role = "agent"
            elif p2 == "test" and not stack:
                role = "test"
            elif p2 == "eval" and not stack:
                role = "eval"
            else:
                role = "block"
            stack.append(("{", role))
        elif tx == "(":
            if p2 == "tool" and p3 == "extern":
                role = "type"
            elif p1 == "agent":
                role = "agent"
            else:
                role = "paren"
            stack.append(("(", role))
        elif tx == "[":
            stack.append(("[", "tools" if p1 == "tools" else ("type" if top == "type" else "list")))
        elif tx in ("}", ")", "]"):
            if stack:
                last_closed_role = stack.pop()[1]
    ctx = _Ctx(depth=len(stack))
    top = stack[-1][1] if stack else ""
    ctx.in_type = top == "type"
    ctx.tools_list = top == "tools"
    ctx.agent_block = top == "agent" and stack[-1][0] == "{"
    ctx.test_block = top == "test"
    ctx.eval_block = top == "eval"
    if code and code[-1].value == ":":
        ctx.type_colon = top == "type" or (len(code) >= 3 and code[-3].value == "let")
    if code and code[-1].value == "=":
        ctx.type_alias = len(code) >= 3 and code[-3].value == "type"
    if code and code[-1].value == "|":
        ctx.in_type = ctx.in_type or any(t.value == "type" for t in code[-12:])
    return ctx


#: on the line before the cursor, after a finished expression: an `if` still waiting for its
#: `then`, a `then` for its `else`, a loop's `until` for its `else`
_AWAITED = (
    (re.compile(r"\bif\b(?![^\n]*\bthen\b)[^\n{]*\S[ \t]*\Z"), "then", "if c then a else b"),
    (re.compile(r"\bthen\b(?![^\n]*\belse\b)[^\n]*\S[ \t]*\Z"), "else", "if c then a else b"),
    (
        re.compile(r"\buntil\b(?![^\n]*\belse\b)[^\n]*\S[ \t]*\Z"),
        "else",
        'until c else fail "…" (or else <value>)',
    ),
)


def _awaited_keywords(line: str) -> list[tuple[str, str, str]]:
    """The keywords the open construct of ``line`` (the text before the cursor on its line,
    after a finished expression) waits for: ``then`` after ``if c``, ``else`` after
    ``then a`` or a loop's ``until c``."""
    out: list[tuple[str, str, str]] = []
    for pattern, word, detail in _AWAITED:
        if pattern.search(line) and all(word != w for w, _, _ in out):
            out.append((word, "keyword", detail))
    return out


def _pattern_value(p: ast.Expr) -> Any:
    """The value of a literal ``match`` pattern (a negative number too), or the class itself
    for anything else (equal to no value)."""
    if isinstance(p, ast.StringLit) and p.is_plain:
        return p.text
    if isinstance(p, (ast.NumberLit, ast.BoolLit)):
        return p.value
    if isinstance(p, ast.NullLit):
        return None
    if isinstance(p, ast.Unary) and p.op == "-" and isinstance(p.operand, ast.NumberLit):
        return -p.operand.value
    return ast.Expr


def _match_arm_completions(a: Analysis, offset: int) -> list[Completion]:
    """Where an arm of a ``match`` begins (after its ``{`` or an arm's ``,``): the values of
    the subject's type no arm covers yet, as patterns to write (``"medium"``), and ``_``; empty
    when ``offset`` is in no ``match``'s arms or the subject's values are not a finite set."""
    best: ast.MatchExpr | None = None
    for n in ast.walk(a.module):
        if (
            isinstance(n, ast.MatchExpr)
            and n.subject.span.end < offset <= n.span.end
            and not any(arm.span.start <= offset <= arm.span.end for arm in n.arms)
            and (best is None or n.span.start >= best.span.start)
        ):
            best = n
    if best is None or id(best.subject) not in a.result.expr_types:
        return []
    values = T.finite_values(a.result.type_of(best.subject), a.result.env)
    if not values:
        return []
    covered = [_pattern_value(p) for arm in best.arms for p in arm.patterns]
    said = f"a value of `{type_names.spelt(a.result.env, a.result.type_of(best.subject))}`"
    out = [
        Completion(T.literal_str(v), "value", f"{said}: no arm covers it yet")
        for v in values
        if not any(v == c and type(v) is type(c) for c in covered)
    ]
    if out and not any(
        arm.wildcard_span is not None and arm.span.end < offset for arm in best.arms
    ):
        out.append(Completion("_", "keyword", "every other value (the last arm)"))
    return out


def _after_call(code: list[Any]) -> bool:
    """Whether the tokens ``code`` end with a call, ``name(…)``: where a tool call's
    ``timeout`` and ``retry`` clauses may follow."""
    if not code or code[-1].value != ")":
        return False
    depth = 0
    for i in range(len(code) - 1, -1, -1):
        v = code[i].value
        if v == ")":
            depth += 1
        elif v == "(":
            depth -= 1
            if depth == 0:
                return i >= 1 and code[i - 1].type == "NAME"
    return False
