"""What is under the cursor, and the lookups every editor feature shares.

:func:`target` classifies the node at an offset (``symbol``, ``tool``, ``type``, ``param``,
``member``, ``expr`` and the declaration kinds ``fielddecl``/``letdecl``/``stagedecl``/
``usedecl``/``loopdecl``/``catchdecl`` (``catch … as e``)/``paramdecl``, a user function's parameter; a test's ``stub`` name
is classified as what it names, :mod:`.stubs`) for hover, navigation and rename; the rest read declared types, doc comments (``///``) and tool signatures out of
one :class:`~agentflow.lsp.analysis.Analysis`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentflow.compiler import type_names
from agentflow.compiler import types as T
from agentflow.compiler.checker import ToolSig
from agentflow.core.spans import Span
from agentflow.core.text import source_lines
from agentflow.core.vocabulary import VERDICT_TYPE
from agentflow.grammar import ast
from agentflow.grammar.scanner import comments
from agentflow.lsp import errors_help, stubs
from agentflow.stdlib import PRELUDE

if TYPE_CHECKING:
    from agentflow.lsp.analysis import Analysis


def children(node: ast.Node) -> Iterator[ast.Node]:
    """The AST nodes directly under ``node`` (its node-valued fields and list items)."""
    for name in type(node).__dataclass_fields__:
        if name == "span":
            continue
        v = getattr(node, name, None)
        if isinstance(v, ast.Node):
            yield v
        elif isinstance(v, list):
            for x in v:
                if isinstance(x, ast.Node):
                    yield x


def fence(code: str) -> str:
    """``code`` in a Markdown ``flow`` code fence."""
    return f"```flow\n{code}\n```"


def sig_str(sig: ToolSig, env: T.TypeEnv | None = None) -> str:
    """``name(p: T, q: U?, r?: V) -> R`` for a tool signature (``r?:`` may be left out, not
    given as null); an ``extern tool "catalog-name" as name`` shows its catalog name too.
    With ``env`` (the checked document's), a type that is an alias's is spelt by its name
    (:func:`~agentflow.compiler.type_names.spelt`: ``Sev``, not ``"low" | "high"``)."""

    def said(t: T.Type) -> str:
        return T.type_str(t) if env is None else type_names.spelt(env, t)

    params = ", ".join(
        f"{k}{'?' if omittable(t, opt) else ''}: {said(t)}" for k, (t, opt) in sig.params.items()
    )
    head = f'"{sig.catalog}" as {sig.name}' if sig.catalog else sig.name
    return f"{head}({params}) -> {said(sig.returns)}"


def omittable(t: T.Type, optional: bool) -> bool:
    """A parameter that may be left out but does not take ``null`` (``name?: T``)."""
    return optional and not (isinstance(t, T.OptionalType) or t == T.NULL or t == T.JSON)


def node_path(a: Analysis, offset: int) -> list[ast.Node]:
    """The nodes whose span contains ``offset`` (end inclusive), outermost first, following
    the innermost match at each level."""
    path: list[ast.Node] = []
    node: ast.Node = a.module
    while True:
        path.append(node)
        best = None
        for c in children(node):
            s = c.span
            if s.start <= offset <= s.end and s.end > s.start:
                if best is None or (s.end - s.start) < (best.span.end - best.span.start):
                    best = c
        if best is None:
            return path
        node = best


def type_decls(a: Analysis) -> dict[str, ast.TypeDecl | ast.ExternType]:
    """Declared type names → their first declaration; then the imported ones (their spans
    name their own files: docs/reference/programs.md "import")."""
    out: dict[str, Any] = {}
    for item in a.module.items:
        if isinstance(item, (ast.TypeDecl, ast.ExternType)):
            out.setdefault(item.name.name, item)
    for name, item in a.result.type_decls.items():
        out.setdefault(name, item)
    return out


def import_local_name(decl: ast.ImportDecl, ident: ast.Ident) -> str:
    """The name this file knows the import written at ``ident`` by (``Case`` for either
    name of ``Ticket as Case``)."""
    for name, local in decl.pairs():
        if ident is name or ident is local:
            return local.name
    return ident.name


def source_of(a: Analysis, file: str) -> str | None:
    """The text of ``file``: the document's, or an imported file's as it was checked."""
    if file == a.module.file:
        return a.text
    imports = a.result.imports
    return imports.sources.get(file) if imports is not None else None


def target(a: Analysis, offset: int) -> tuple[str, Any, list[ast.Node]] | None:
    """Classify what is under ``offset``: ``(kind, payload, path)``."""
    path = node_path(a, offset)
    # prefer a name right before the cursor when the cursor sits just after it
    node = path[-1]
    parent = path[-2] if len(path) > 1 else None
    if isinstance(node, ast.Name):
        if isinstance(parent, ast.Call) and parent.callee is node:
            sig = a.result.tool_decls.get(node.name) or a.result.tools.get(node.name)
            if sig is not None:
                return "tool", sig, path
        sym = a.result.references.get(id(node))
        if sym is not None:
            return "symbol", (sym, node), path
        return "expr", node, path
    if isinstance(node, ast.NamedType):
        return "type", node.name, path
    if isinstance(node, ast.GenericType) and node.name_span.start <= offset <= node.name_span.end:
        return "type", node.name, path  # `Outcome` of `Outcome<T>`
    if isinstance(node, ast.Ident):
        if isinstance(parent, (ast.TypeDecl, ast.ExternType)) and parent.name is node:
            return "type", node.name, path
        if isinstance(parent, ast.ImportDecl):  # `import { Ticket as Case } from "./x.flow"`
            local = import_local_name(parent, node)
            decl = a.result.type_decls.get(local)
            return ("type", local, path) if decl is not None else None
        if isinstance(parent, ast.FieldDecl):
            return "fielddecl", parent, path
        if isinstance(parent, ast.LetStmt):
            return "letdecl", parent, path
        if isinstance(parent, ast.StageDecl):
            return "stagedecl", parent, path
        if isinstance(parent, ast.UseDecl):
            return "usedecl", parent, path
        stub = stubs.stub_of(path)
        if stub is not None:  # `stub stage total …`: what it names (path ends at its name)
            found = stubs.resolve(a, stub)
            return (found[0], found[1], path) if found is not None else None
        if isinstance(parent, ast.ExternTool):
            sig = a.result.tool_decls.get(node.name)
            return ("tool", sig, path) if sig is not None else None
        if isinstance(parent, ast.Param) and len(path) > 2:
            owner = path[-3]
            if isinstance(owner, ast.ExternTool):
                sig = a.result.tool_decls.get(owner.name.name)
                if sig is not None and sig.decl is owner and node.name in sig.params:
                    return "param", (sig, node.name), path
            if isinstance(owner, ast.FnDecl):  # `fn rank(s: Severity)`: the name `s`
                return "paramdecl", parent, path
            return None
        if isinstance(parent, (ast.MapExpr, ast.FilterExpr, ast.ReduceExpr)):
            return "loopdecl", (parent, node), path
        if isinstance(parent, ast.CatchExpr | ast.TryExpr) and node is parent.var:
            return "catchdecl", (parent, node), path  # `catch … as err`, `try … catch as err`
        return None
    if isinstance(node, ast.Argument):
        s = node.name_span
        if s.start <= offset <= s.end and isinstance(parent, ast.Call):
            sig = call_sig(a, parent)
            if sig is not None and node.name in sig.params:
                return "param", (sig, node.name), path
        return None
    if isinstance(node, ast.Member):
        s = node.name_span
        if s.start <= offset <= s.end:
            return "member", node, path
        return "expr", node, path
    if isinstance(node, ast.ObjectEntry) and isinstance(parent, ast.ObjectLit):
        key = literal_key(a, parent, node, offset)
        return ("member", key, path) if key is not None else None
    if isinstance(node, ast.ToolRef):
        if not node.pattern:
            sig = a.result.tool_decls.get(node.name) or a.result.tools.get(node.name)
            if sig is not None:
                return "tool", sig, path
        return None
    if isinstance(node, ast.Expr) and not isinstance(node, ast.ProjectionItem):
        return "expr", node, path
    return None


def literal_key(
    a: Analysis, lit: ast.ObjectLit, entry: ast.ObjectEntry, offset: int
) -> ast.Member | None:
    """The key of ``entry`` under ``offset`` as the field it gives a value to —
    ``{ approved: true }`` where a ``Result`` is expected: the field ``approved`` of
    ``Result`` — told as a :class:`ast.Member` of the literal (name span without the quotes of
    a quoted key), so that hover, definition, references and rename treat it as ``r.approved``;
    None when the literal's type has no such field."""
    sp = entry.key_span
    if not sp.start <= offset <= sp.end or id(lit) not in a.result.expr_types:
        return None
    obj = object_of(a, a.result.type_of(lit))
    if obj is None or entry.key not in obj.fields:
        return None
    if sp.end - sp.start == len(entry.key) + 2 and sp.line == sp.end_line:  # `"title": …`
        sp = Span(
            sp.file, sp.line, sp.column + 1, sp.line, sp.end_column - 1, sp.start + 1, sp.end - 1
        )
    return ast.Member(sp, lit, entry.key, sp)


def branch_under(a: Analysis, offset: int) -> ast.ObjectEntry | None:
    """The branch of a ``parallel { name: expr, … }`` block whose name is under ``offset``
    (docs/reference/control.md "parallel blocks") — or that the ``B`` under ``offset`` of a
    test's ``stub step NAME.B`` names (the first block's, :func:`stubs.branches`) — or None."""
    stub = stubs.branch_stub_at(a, offset)
    if stub is not None:
        named = stubs.branches(a, stub)
        return named[0] if named else None
    for node in reversed(node_path(a, offset)):
        if isinstance(node, ast.ParallelExpr):
            for b in node.branches:
                if b.key_span.start <= offset <= b.key_span.end:
                    return b
            return None
    return None


def call_sig(a: Analysis, call: ast.Call) -> ToolSig | None:
    """The signature ``call`` resolves to (a tool call's callee is looked up as a tool
    first, as the checker does), or None."""
    callee = call.callee
    if not isinstance(callee, ast.Name):
        return None
    return a.result.tool_decls.get(callee.name) or a.result.tools.get(callee.name)


def doc_before(a: Analysis, span: Span) -> str | None:
    """The ``///`` lines directly above the line of ``span`` (string-aware), joined."""
    if a.doc_lines is None:
        a.doc_lines = set()
        for c in comments(a.text):
            if c.type == "DOC":
                ls = a.text.rfind("\n", 0, c.start) + 1
                if not a.text[ls : c.start].strip():
                    a.doc_lines.add(ls)
    lines: list[str] = []
    ls = a.text.rfind("\n", 0, span.start) + 1
    while ls > 0:
        prev = a.text.rfind("\n", 0, ls - 1) + 1
        if prev not in a.doc_lines:
            break
        d = a.text[prev : ls - 1].strip()[3:]
        lines.append(d[1:] if d.startswith(" ") else d)
        ls = prev
    return "\n".join(reversed(lines)) if lines else None


def type_doc(a: Analysis, name: str) -> str | None:
    """The doc comment of the declared type ``name``, or None."""
    return a.result.env.docs.get(name)


def object_of(a: Analysis, t: T.Type) -> T.ObjectType | None:
    """The object type behind ``t`` (aliases resolved, optional stripped; a verdict is its
    object), or None."""
    env = a.result.env
    t = T.strip_optional(env.resolve(t), env)
    t = env.resolve(t)
    if isinstance(t, T.VerdictType):
        return T.VERDICT_OBJECT
    return t if isinstance(t, T.ObjectType) else None


def type_summary(a: Analysis, name: str) -> str:
    """``type N { f: T … }`` / ``type N = T`` / ``extern type N`` for a declared type: a type
    declared in the document as it is written there — its fields' ``///`` descriptions and
    constraints (``score: int @range(0, 10)``) included — else as the checker resolved it."""
    env = a.result.env
    written = _written_type(a, name)
    if written is not None:
        return written
    if name in env.objects:
        obj = env.objects[name]
        body = "\n".join(f"  {k}: {T.type_str(f.type)}" for k, f in obj.fields.items())
        return f"type {name} {{\n{body}\n}}" if body else f"type {name} {{}}"
    if name in env.aliases:
        return f"type {name} = {T.type_str(env.aliases[name])}"
    if name in env.externs:
        return f"extern type {name}"
    if name == VERDICT_TYPE:
        return f"type {VERDICT_TYPE} {{ passed: bool, failures: text[] }}"
    if (builtin := errors_help.type_summary(name)) is not None:  # Outcome, Error, ErrorPlace
        return builtin
    if name in T.PRIMS:
        return f"{name}  (built-in)"
    return name


#: a type declaration longer than this many lines is summarised, not shown as written
_WRITTEN_TYPE_LINES = 40


def _written_type(a: Analysis, name: str) -> str | None:
    """The source text of ``type name …`` in the document (None when it is not declared there,
    or is too long to show)."""
    item = type_decls(a).get(name)
    if isinstance(item, ast.TypeDecl):
        source = source_of(a, item.span.file)
        if source is not None:
            text = source[item.span.start : item.span.end]
            lines = source_lines(text)
            if not text.startswith("type") or len(lines) > _WRITTEN_TYPE_LINES:
                return None
            return "\n".join(line.rstrip() for line in lines)
    return None


def tool_text(a: Analysis, sig: ToolSig) -> str:
    """The tool's signature as declared (aliases unexpanded), else as resolved with each
    alias's type spelt by the alias's name (an imported tool, a tool of the catalog)."""
    decl = sig.decl
    if isinstance(decl, ast.ExternTool):
        if decl.span.file == a.module.file:
            src = a.text
        elif decl.span.file == "<prelude>":
            src = prelude_text()
        else:
            src = ""
        written = src[decl.span.start : decl.span.end]
        if written.startswith("extern tool"):
            return " ".join(written[len("extern tool") :].split())
    return sig_str(sig, a.result.env)


@functools.cache
def prelude_text() -> str:
    """The text of ``stdlib/prelude.flow`` (empty when unreadable), read once."""
    try:
        return PRELUDE.read_text(encoding="utf-8")
    except OSError:  # pragma: no cover
        return ""


def with_doc(text: str, doc: str | None) -> str:
    """Hover text followed by ``doc`` as a paragraph of its own, when there is one."""
    return f"{text}\n\n{doc}" if doc else text


def span_key(s: Span) -> tuple[str, int, int]:
    """``(file, start, end)`` of a span: equal for spans of the same text."""
    return (s.file, s.start, s.end)


def unique(spans: list[Span]) -> list[Span]:
    """``spans`` in source order without repeats."""
    seen: set[tuple[str, int, int]] = set()
    out = []
    for s in sorted(spans, key=lambda s: (s.file, s.start)):
        if span_key(s) not in seen:
            seen.add(span_key(s))
            out.append(s)
    return out


def code_start(text: str, offset: int) -> int | None:
    """Where the code that ``offset`` of ``text`` is in begins: 0 outside any string, just
    past the ``${`` of the innermost interpolation (``"${f(1, "x", |`` → the ``f``) the
    offset is in, or None in a string's own text or a comment.

    Strings are followed with a mode stack like the scanner's (docs/reference/expressions.md,
    string interpolation): ``"…"`` and ``\"\"\"…\"\"\"``, ``\\`` escapes, ``${`` opening an
    interpolation that its unmatched ``}`` closes, strings nested in it. Text need not be
    complete: an unterminated string or interpolation is simply still open at ``offset``; a
    one-line string that meets a line break ends there (the scanner's error, not ours)."""
    stack = _frames(text, offset)
    if stack is None or stack[-1][0] != "code":
        return None
    return int(stack[-1][1])


def closers(text: str, offset: int) -> str:
    """What closes the interpolations and strings open at ``offset`` of ``text``, innermost
    first (``"hi ${input.`` → ``}"``); empty outside strings or in a comment."""
    stack = _frames(text, offset) or []
    shut = {"str": '"', "str3": '"""'}
    return "".join("}" * (f[2] + 1) if f[0] == "code" else shut[f[0]] for f in reversed(stack[1:]))


def _frames(text: str, offset: int) -> list[list[Any]] | None:
    """The strings and interpolations open at ``offset`` of ``text`` (see :func:`code_start`),
    outermost first, each ``[mode, start, open braces]`` (mode ``code``, ``str`` or ``str3``);
    None in a comment."""
    # frames: [mode ("code", "str", "str3"), where its code starts, open `{` in it]
    stack: list[list[Any]] = [["code", 0, 0]]
    i = 0
    while i < offset:
        top = stack[-1]
        c = text[i]
        if top[0] == "code":
            if text.startswith("//", i, offset):
                j = text.find("\n", i)
                if j < 0 or j >= offset:
                    return None
                i = j
            elif text.startswith("/*", i, offset):
                j = text.find("*/", i + 2)
                if j < 0 or j + 2 > offset:
                    return None
                i = j + 2
            elif text.startswith('"""', i, offset):
                stack.append(["str3", i, 0])
                i += 3
            elif c == '"':
                stack.append(["str", i, 0])
                i += 1
            else:
                if c == "{":
                    top[2] += 1
                elif c == "}":
                    if top[2] == 0 and len(stack) > 1:
                        stack.pop()  # the interpolation's own `}`: back in its string
                    else:
                        top[2] = max(0, top[2] - 1)
                i += 1
        elif c == "\\":
            i += 2
        elif top[0] == "str3" and text.startswith('"""', i, offset):
            stack.pop()
            i += 3
            while i < offset and text[i] == '"':
                i += 1
        elif top[0] == "str" and c in '"\n':
            stack.pop()
            i += 1
        elif text.startswith("${", i, offset):
            stack.append(["code", i + 2, 0])
            i += 2
        else:
            i += 1
    return stack
