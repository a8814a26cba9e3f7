"""Editor queries over one checked `.flow` document, independent of the LSP transport.

:class:`Analysis` wraps the source text and the :class:`~agentflow.compiler.checker.CheckResult`
of the *same* checker ``flowc check`` runs, and answers in code-point offsets and
:class:`~agentflow.grammar.Span` values (the server converts them to LSP positions):

- :meth:`Analysis.node_path` — the chain of AST nodes under an offset;
- :meth:`Analysis.hover` — Markdown: kind, name and type of what is under the cursor, plus its
  doc comment (``///``);
- :meth:`Analysis.definition` — where a name, type, tool, tool parameter, field, stage, agent or
  team is declared;
- :meth:`Analysis.references` — every span naming the same thing (find references);
- :meth:`Analysis.references_for_rename` / :meth:`Analysis.rename_problem` — every span to
  rewrite when renaming a ``let`` (or loop variable), a stage, a ``use`` alias or a type, and
  why a rename must be refused;
- :meth:`Analysis.fixes` — the quick fixes a diagnostic's hint states exactly;
- :meth:`Analysis.completions` — context-sensitive completion items (docs/spec/LANGUAGE.md §2–8);
- :meth:`Analysis.symbols` — the document outline (flow, types with fields, tools, uses,
  stages).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agentflow.compiler import types as T
from agentflow.compiler.checker import CheckResult, Symbol, ToolSig
from agentflow.core.diagnostics import Diagnostic
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    AGENT_CLAUSES,
    BUILTIN_TYPES,
    EXPRESSION_WORDS,
    KEYWORDS,
    STATEMENT_WORDS,
    STUB_KINDS,
    TEST_WORDS,
    TOP_LEVEL_WORDS,
    VERDICT_TYPE,
)
from agentflow.grammar import ast
from agentflow.grammar.scanner import COMMENTS, SynErr, comments, lex
from agentflow.lsp import errors_help
from agentflow.stdlib import PRELUDE

__all__ = ["Analysis", "Completion", "DocSymbol", "Fix", "analyze", "IDENT_RE"]

IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WORD_TAIL = re.compile(r"[A-Za-z0-9_]*\Z")

#: keywords offered where a statement or an expression may start
STATEMENT_KEYWORDS = (*STATEMENT_WORDS, "else", *EXPRESSION_WORDS)
#: longest type text shown in an expression hover (characters); longer ones are cut with "…"
HOVER_MAX_TYPE = 500
#: value bindings a rename may change (``input`` and the implicit ``index`` may not)
_RENAMABLE = frozenset({"let", "loopvar", "acc", "stage", "use"})


@dataclass(slots=True)
class Completion:
    """One completion item: ``kind`` is ``field``, ``type``, ``tool``, ``keyword``,
    ``variable``, ``stage``, ``agent`` or ``property``; ``detail`` a type or signature."""

    label: str
    kind: str
    detail: str | None = None
    doc: str | None = None


@dataclass(slots=True)
class DocSymbol:
    """An outline entry: ``kind`` is ``flow``, ``type``, ``field``, ``tool``, ``agent``,
    ``team``, ``stage`` or ``let``; ``span`` the whole item; ``name_span`` its name."""

    name: str
    kind: str
    span: Span
    name_span: Span
    detail: str | None = None
    children: list[DocSymbol] = field(default_factory=list)


@dataclass(slots=True)
class Fix:
    """A quick fix for one diagnostic: ``edits`` are ``(start, end, new_text)`` with
    code-point offsets into the analysed text (end exclusive); ``preferred`` marks the fix an
    editor may apply on its own (LSP ``isPreferred``)."""

    title: str
    edits: list[tuple[int, int, str]]
    preferred: bool = False


_DID_YOU_MEAN = re.compile(r"did you mean `([^`]+)`\?\Z")
_LAST_TICKED = re.compile(r"`([^`]*)`[^`]*\Z")
_UNUSED_HINT = re.compile(r"remove it, or name it `(_[A-Za-z0-9_]*)`\Z")
_DECLARE_USE = re.compile(r'declare it: `(use agent "([A-Za-z_][A-Za-z0-9_]*)" as \2)`\Z')
_FOREIGN_TYPE = re.compile(r"agentflow's [\w-]+ type is `([A-Za-z_][A-Za-z0-9_]*)`")
_EMPTY_TOOLS = re.compile(r"tools\s*\[\s*\]\Z")


def _children(node: ast.Node):
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


_walk = ast.walk


def _fence(code: str) -> str:
    return f"```flow\n{code}\n```"


def sig_str(sig: ToolSig) -> str:
    """``name(p: T, q: U?, r?: V) -> R`` for a tool signature (``r?:`` may be left out, not
    given as null); an ``extern tool "catalog-name" as name`` shows its catalog name too."""
    params = ", ".join(
        f"{k}{'?' if _omittable(t, opt) else ''}: {T.type_str(t)}"
        for k, (t, opt) in sig.params.items()
    )
    head = f'"{sig.catalog}" as {sig.name}' if sig.catalog else sig.name
    return f"{head}({params}) -> {T.type_str(sig.returns)}"


def _omittable(t: T.Type, optional: bool) -> bool:
    """A parameter that may be left out but does not take ``null`` (``name?: T``)."""
    return optional and not (isinstance(t, T.OptionalType) or t == T.NULL or t == T.JSON)


class Analysis:
    """Queries over ``text`` and its :class:`CheckResult` (see the module docstring)."""

    def __init__(self, text: str, result: CheckResult) -> None:
        self.text = text
        self.result = result
        self.module = result.module
        self._doc_lines: set[int] | None = None

    # -- locating ------------------------------------------------------------------------------

    def node_path(self, offset: int) -> list[ast.Node]:
        """The nodes whose span contains ``offset`` (end inclusive), outermost first, following
        the innermost match at each level."""
        path: list[ast.Node] = []
        node: ast.Node = self.module
        while True:
            path.append(node)
            best = None
            for c in _children(node):
                s = c.span
                if s.start <= offset <= s.end and s.end > s.start:
                    if best is None or (s.end - s.start) < (best.span.end - best.span.start):
                        best = c
            if best is None:
                return path
            node = best

    def type_decls(self) -> dict[str, ast.TypeDecl | ast.ExternType]:
        """Declared type names → their first declaration."""
        out: dict[str, Any] = {}
        for item in self.module.items:
            if isinstance(item, (ast.TypeDecl, ast.ExternType)):
                out.setdefault(item.name.name, item)
        return out

    def _target(self, offset: int) -> tuple[str, Any, list[ast.Node]] | None:
        """Classify what is under ``offset``: ``(kind, payload, path)``."""
        path = self.node_path(offset)
        # prefer a name right before the cursor when the cursor sits just after it
        node = path[-1]
        parent = path[-2] if len(path) > 1 else None
        if isinstance(node, ast.Name):
            if isinstance(parent, ast.Call) and parent.callee is node:
                sig = self.result.tool_decls.get(node.name) or self.result.tools.get(node.name)
                if sig is not None:
                    return "tool", sig, path
            sym = self.result.references.get(id(node))
            if sym is not None:
                return "symbol", (sym, node), path
            return "expr", node, path
        if isinstance(node, ast.NamedType):
            return "type", node.name, path
        if (
            isinstance(node, ast.GenericType)
            and node.name_span.start <= offset <= node.name_span.end
        ):
            return "type", node.name, path  # `Outcome` of `Outcome<T>`
        if isinstance(node, ast.Ident):
            if isinstance(parent, (ast.TypeDecl, ast.ExternType)) and parent.name is node:
                return "type", node.name, path
            if isinstance(parent, ast.FieldDecl):
                return "fielddecl", parent, path
            if isinstance(parent, ast.LetStmt):
                return "letdecl", parent, path
            if isinstance(parent, ast.StageDecl):
                return "stagedecl", parent, path
            if isinstance(parent, ast.UseDecl):
                return "usedecl", parent, path
            if isinstance(parent, ast.ExternTool):
                sig = self.result.tool_decls.get(node.name)
                return ("tool", sig, path) if sig is not None else None
            if isinstance(parent, ast.Param) and len(path) > 2:
                owner = path[-3]
                if isinstance(owner, ast.ExternTool):
                    sig = self.result.tool_decls.get(owner.name.name)
                    if sig is not None and sig.decl is owner and node.name in sig.params:
                        return "param", (sig, node.name), path
                return None
            if isinstance(parent, (ast.MapExpr, ast.FilterExpr, ast.ReduceExpr)):
                return "loopdecl", (parent, node), path
            if isinstance(parent, ast.CatchExpr) and node is parent.var:
                return "loopdecl", (parent, node), path  # `catch … as err`
            return None
        if isinstance(node, ast.Argument):
            s = node.name_span
            if s.start <= offset <= s.end and isinstance(parent, ast.Call):
                sig = self._call_sig(parent)
                if sig is not None and node.name in sig.params:
                    return "param", (sig, node.name), path
            return None
        if isinstance(node, ast.Member):
            s = node.name_span
            if s.start <= offset <= s.end:
                return "member", node, path
            return "expr", node, path
        if isinstance(node, ast.ToolRef):
            if not node.pattern:
                sig = self.result.tool_decls.get(node.name) or self.result.tools.get(node.name)
                if sig is not None:
                    return "tool", sig, path
            return None
        if isinstance(node, ast.Expr) and not isinstance(node, ast.ProjectionItem):
            return "expr", node, path
        return None

    def _call_sig(self, call: ast.Call) -> ToolSig | None:
        """The signature ``call`` resolves to (a tool call's callee is looked up as a tool
        first, as the checker does), or None."""
        callee = call.callee
        if not isinstance(callee, ast.Name):
            return None
        return self.result.tool_decls.get(callee.name) or self.result.tools.get(callee.name)

    # -- docs ----------------------------------------------------------------------------------

    def doc_before(self, span: Span) -> str | None:
        """The ``///`` lines directly above the line of ``span`` (string-aware), joined."""
        if self._doc_lines is None:
            self._doc_lines = set()
            for c in comments(self.text):
                if c.type == "DOC":
                    ls = self.text.rfind("\n", 0, c.start) + 1
                    if not self.text[ls : c.start].strip():
                        self._doc_lines.add(ls)
        lines: list[str] = []
        ls = self.text.rfind("\n", 0, span.start) + 1
        while ls > 0:
            prev = self.text.rfind("\n", 0, ls - 1) + 1
            if prev not in self._doc_lines:
                break
            d = self.text[prev : ls - 1].strip()[3:]
            lines.append(d[1:] if d.startswith(" ") else d)
            ls = prev
        return "\n".join(reversed(lines)) if lines else None

    def _type_doc(self, name: str) -> str | None:
        return self.result.env.docs.get(name)

    def _object_of(self, t: T.Type) -> T.ObjectType | None:
        env = self.result.env
        t = T.strip_optional(env.resolve(t), env)
        t = env.resolve(t)
        if isinstance(t, T.VerdictType):
            return T.VERDICT_OBJECT
        return t if isinstance(t, T.ObjectType) else None

    def type_summary(self, name: str) -> str:
        """``type N { f: T … }`` / ``type N = T`` / ``extern type N`` for a declared type."""
        env = self.result.env
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

    # -- hover ---------------------------------------------------------------------------------

    def hover(self, offset: int) -> tuple[str, Span] | None:
        """Markdown for what is under ``offset`` and the span it describes, or None."""
        target = self._target(offset)
        if target is None:
            return None
        kind, payload, path = target
        node = path[-1]
        res = self.result
        if kind == "symbol":
            sym, name = payload
            text = _fence(f"({sym.kind}) {sym.name}: {T.type_str(sym.type)}")
            doc = self._symbol_doc(sym)
            return _with_doc(text, doc), name.span
        if kind == "tool":
            sig: ToolSig = payload
            origin = (
                "prelude tool"
                if sig.prelude
                else ("tool" if sig.declared else "catalog tool (untyped)")
            )
            doc = getattr(sig.decl, "doc", None)
            return _with_doc(_fence(f"({origin}) {self.tool_text(sig)}"), doc), node.span
        if kind == "type":
            return _with_doc(_fence(self.type_summary(payload)), self._type_doc(payload)), node.span
        if kind == "fielddecl":
            fd: ast.FieldDecl = payload
            owner = next((p for p in reversed(path) if isinstance(p, ast.TypeDecl)), None)
            ftype = None
            if owner is not None and owner.name.name in res.env.objects:
                f = res.env.objects[owner.name.name].fields.get(fd.name.name)
                ftype = T.type_str(f.type) if f is not None else None
            return (
                _with_doc(_fence(f"(field) {fd.name.name}: {ftype or '?'}"), fd.doc),
                fd.name.span,
            )
        if kind == "letdecl":
            let: ast.LetStmt = payload
            t = res.type_of(let.value)
            if let.annotation is not None:
                sym = self._let_symbol(let)
                t = sym.type if sym is not None else t
            return (
                _with_doc(
                    _fence(f"(let) {let.name.name}: {T.type_str(t)}"), self.doc_before(let.span)
                ),
                let.name.span,
            )
        if kind == "stagedecl":
            st: ast.StageDecl = payload
            t = res.stage_types.get(st.name.name, T.ERROR)
            doc = st.doc or self.doc_before(st.span)
            return _with_doc(_fence(f"(stage) {st.name.name}: {T.type_str(t)}"), doc), st.name.span
        if kind == "usedecl":
            u: ast.UseDecl = payload
            return (
                _with_doc(
                    _fence(f'use {u.kind} "{u.target}" as {u.alias.name}'), self.doc_before(u.span)
                ),
                u.alias.span,
            )
        if kind == "param":
            sig, pname = payload
            pt, opt = sig.params[pname]
            if _omittable(pt, opt):  # `name?: T`: may be left out, never null
                label, shown = f"{pname}?", T.type_str(pt)
            else:
                label = pname
                shown = T.type_str(pt) + ("?" if opt and not T.type_str(pt).endswith("?") else "")
            here = node.name_span if isinstance(node, ast.Argument) else node.span
            return _fence(f"(parameter of {sig.name}) {label}: {shown}"), here
        if kind == "loopdecl":
            _, ident = payload
            for sym in res.references.values():
                if sym.decl is payload[0] and sym.name == ident.name:
                    return _fence(f"({sym.kind}) {sym.name}: {T.type_str(sym.type)}"), ident.span
            return None
        if kind == "member":
            m: ast.Member = payload
            t = res.type_of(m)
            obj = self._object_of(res.type_of(m.obj))
            doc = None
            if obj is not None and m.name in obj.fields:
                doc = obj.fields[m.name].doc
            return _with_doc(_fence(f"(field) {m.name}: {T.type_str(t)}"), doc), m.name_span
        if kind == "expr":
            e = payload
            t = res.expr_types.get(id(e))
            if t is None:
                return None
            doc = None
            if isinstance(t, T.NamedRef):
                doc = self._type_doc(t.name)
            shown = T.type_str(t)
            if len(shown) > HOVER_MAX_TYPE:  # e.g. the literal type of a huge string
                shown = shown[:HOVER_MAX_TYPE] + "…"
            return _with_doc(_fence(shown), doc), e.span
        return None

    def tool_text(self, sig: ToolSig) -> str:
        """The tool's signature as declared (aliases unexpanded), else as resolved."""
        decl = sig.decl
        if isinstance(decl, ast.ExternTool):
            if decl.span.file == self.module.file:
                src = self.text
            elif decl.span.file == "<prelude>":
                src = _prelude_text()
            else:
                src = ""
            written = src[decl.span.start : decl.span.end]
            if written.startswith("extern tool"):
                return " ".join(written[len("extern tool") :].split())
        return sig_str(sig)

    def _symbol_doc(self, sym: Symbol) -> str | None:
        d = sym.decl
        if sym.kind == "stage" and isinstance(d, ast.StageDecl):
            return d.doc or self.doc_before(d.span)
        if sym.kind in ("let", "use") and isinstance(d, ast.Node):
            return self.doc_before(d.span)
        if sym.kind == "input":
            t = self.result.input_type
            if isinstance(t, T.NamedRef):
                return self._type_doc(t.name)
        return None

    def _let_symbol(self, let: ast.LetStmt) -> Symbol | None:
        for sym in self.result.references.values():
            if sym.decl is let:
                return sym
        return None

    # -- definition ----------------------------------------------------------------------------

    def definition(self, offset: int) -> Span | None:
        """The span of the declaration of what is under ``offset`` (its name), or None.

        Prelude tools point into ``stdlib/prelude.flow`` (span file ``"<prelude>"``)."""
        target = self._target(offset)
        if target is None:
            return None
        kind, payload, _path = target
        if kind == "symbol":
            sym, _name = payload
            return _decl_span(sym)
        if kind == "tool":
            decl = payload.decl
            return decl.name.span if isinstance(decl, ast.ExternTool) else None
        if kind == "type":
            decl = self.type_decls().get(payload)
            return decl.name.span if decl is not None else None
        if kind == "member":
            obj = self._object_of(self.result.type_of(payload.obj))
            if obj is not None and payload.name in obj.fields:
                sp = obj.fields[payload.name].span
                return sp if isinstance(sp, Span) else None
            return None
        if kind == "letdecl":
            return payload.name.span
        if kind == "stagedecl":
            return payload.name.span
        if kind == "usedecl":
            return payload.alias.span
        if kind == "fielddecl":
            return payload.name.span
        if kind == "loopdecl":
            return payload[1].span
        if kind == "param":
            return self._param_span(*payload)
        return None

    def _param_span(self, sig: ToolSig, name: str) -> Span | None:
        """The name span of parameter ``name`` in the ``extern tool`` declaring ``sig``."""
        decl = sig.decl
        if isinstance(decl, ast.ExternTool):
            for p in decl.params:
                if p.name.name == name:
                    return p.name.span
        return None

    # -- references ----------------------------------------------------------------------------

    def _binding(self, kind: str, payload: Any) -> tuple[Any, str, str] | None:
        """``(declaring node, name, symbol kind)`` of a value binding target (a name, or the
        name in a ``let``/``stage``/``use``/loop declaration), else None.  The declaring node is
        ``None`` for ``input`` without an ``input`` item."""
        if kind == "symbol":
            sym, _name = payload
            return sym.decl, sym.name, sym.kind
        if kind == "letdecl":
            return payload, payload.name.name, "let"
        if kind == "stagedecl":
            return payload, payload.name.name, "stage"
        if kind == "usedecl":
            return payload, payload.alias.name, "use"
        if kind == "loopdecl":
            decl, ident = payload
            k = "acc" if isinstance(decl, ast.ReduceExpr) and decl.acc is ident else "loopvar"
            return decl, ident.name, k
        return None

    def _binding_decl_span(self, decl: Any, name: str, kind: str) -> Span | None:
        """The name token declaring a value binding (``input``: the keyword of the ``input``
        item; the implicit ``index``: None)."""
        if isinstance(decl, (ast.LetStmt, ast.StageDecl)):
            return decl.name.span
        if isinstance(decl, ast.UseDecl):
            return decl.alias.span
        if isinstance(decl, ast.InputDecl):
            s = decl.span
            return Span(s.file, s.line, s.column, s.line, s.column + 5, s.start, s.start + 5)
        if isinstance(decl, ast.ReduceExpr) and kind == "acc":
            return decl.acc.span
        if isinstance(decl, (ast.MapExpr, ast.FilterExpr, ast.ReduceExpr)) and kind == "loopvar":
            return decl.var.span
        if isinstance(decl, ast.CatchExpr) and decl.var is not None:
            return decl.var.span
        return None

    def _binding_uses(self, decl: Any, name: str, kind: str) -> list[Span]:
        """Every name resolving to the binding; for a stage also the names the checker
        reported as ``forward-stage-reference`` to it (they spell it, and a rename must keep
        them spelling it)."""
        out: list[Span] = []
        refs = self.result.references
        forward: set[tuple[int, int]] = set()
        if kind == "stage":
            key = _span_key(decl.name.span)
            for d in self.result.diagnostics:
                if d.code == "forward-stage-reference" and any(
                    n.span is not None and _span_key(n.span) == key for n in d.notes
                ):
                    forward.add((d.span.start, d.span.end))
        for n in _walk(self.module):
            if not isinstance(n, ast.Name):
                continue
            sym = refs.get(id(n))
            if sym is None:
                if forward and n.name == name and (n.span.start, n.span.end) in forward:
                    out.append(n.span)
                continue
            if sym.name != name or sym.kind != kind:
                continue
            if kind == "input" or sym.decl is decl:
                out.append(n.span)
        return out

    def _field_key(self, kind: str, payload: Any) -> tuple[str, int, int] | None:
        """The declaration of the field under the cursor, as a span key, when resolvable."""
        if kind == "fielddecl":
            return _span_key(payload.name.span)
        obj = self._object_of(self.result.type_of(payload.obj))
        if obj is None or payload.name not in obj.fields:
            return None
        sp = obj.fields[payload.name].span
        return _span_key(sp) if isinstance(sp, Span) else None

    def references(self, offset: int, include_declaration: bool = True) -> list[Span] | None:
        """Every span naming what is under ``offset`` (LSP ``textDocument/references``), in
        source order, or None when nothing resolvable is there.

        Covers what :meth:`definition` resolves: ``let``/loop variables/accumulators, ``index``,
        ``input``, stages, ``use`` aliases (names and agent targets), declared and built-in
        types, tools (calls and ``tools [...]`` entries), tool parameters (call arguments), and
        fields (member accesses and object-literal keys typed by the declaring type).  With
        ``include_declaration`` the declaring name is included too — for prelude tools, their
        parameters and fields of prelude types a span in ``"<prelude>"``."""
        target = self._target(offset)
        if target is None:
            return None
        kind, payload, path = target
        uses: list[Span] = []
        decls: list[Span] = []
        binding = self._binding(kind, payload)
        if binding is not None:
            uses = self._binding_uses(*binding)
            ds = self._binding_decl_span(*binding)
            decls = [ds] if ds is not None else []
        elif kind == "tool":
            sig: ToolSig = payload
            for n in _walk(self.module):
                if isinstance(n, ast.Call) and isinstance(n.callee, ast.Name):
                    if n.callee.name == sig.name and self._call_sig(n) is sig:
                        uses.append(n.callee.span)
                elif isinstance(n, ast.ToolRef) and not n.pattern and n.name == sig.name:
                    uses.append(n.span)
            if isinstance(sig.decl, ast.ExternTool):
                decls = [sig.decl.name.span]
        elif kind == "param":
            sig, pname = payload
            for n in _walk(self.module):
                if isinstance(n, ast.Call) and self._call_sig(n) is sig:
                    uses.extend(a.name_span for a in n.args if a.name == pname)
            ps = self._param_span(sig, pname)
            decls = [ps] if ps is not None else []
        elif kind == "type":
            for n in _walk(self.module):
                if isinstance(n, ast.NamedType) and n.name == payload:
                    uses.append(n.span)
                elif isinstance(n, (ast.TypeDecl, ast.ExternType)) and n.name.name == payload:
                    decls.append(n.name.span)
        elif kind in ("member", "fielddecl"):
            key = self._field_key(kind, payload)
            if key is None:
                return None
            uses = self._field_uses(key)
            if kind == "fielddecl":
                decls = [payload.name.span]
            else:
                obj = self._object_of(self.result.type_of(payload.obj))
                decls = [obj.fields[payload.name].span] if obj is not None else []
        else:
            return None
        return _unique(uses + (decls if include_declaration else []))

    def _field_uses(self, key: tuple[str, int, int]) -> list[Span]:
        """Member accesses and object-literal keys whose field is declared at ``key``."""
        out: list[Span] = []
        res = self.result
        for n in _walk(self.module):
            if isinstance(n, ast.Member):
                if id(n.obj) not in res.expr_types:
                    continue
                obj = self._object_of(res.type_of(n.obj))
                f = obj.fields.get(n.name) if obj is not None else None
                if f is not None and isinstance(f.span, Span) and _span_key(f.span) == key:
                    out.append(n.name_span)
            elif isinstance(n, ast.ObjectLit) and id(n) in res.expr_types:
                obj = self._object_of(res.type_of(n))
                if obj is None:
                    continue
                for entry in n.entries:
                    f = obj.fields.get(entry.key)
                    if f is not None and isinstance(f.span, Span) and _span_key(f.span) == key:
                        out.append(entry.key_span)
        return out

    # -- rename --------------------------------------------------------------------------------

    def rename_target(self, offset: int) -> tuple[str, str, Span] | None:
        """``(kind, name, span under the cursor)`` when a rename is possible there: ``kind`` is
        ``let``, ``loopvar``/``acc``, ``stage``, ``use`` or ``type`` (built-in types, ``input``
        and ``index`` cannot be renamed)."""
        target = self._target(offset)
        if target is None:
            return None
        kind, payload, path = target
        if kind == "type":
            if payload in self.type_decls():
                return "type", payload, path[-1].span
            return None
        binding = self._binding(kind, payload)
        if binding is None:
            return None
        _decl, name, bkind = binding
        if bkind not in _RENAMABLE:
            return None
        if kind == "symbol":
            return bkind, name, payload[1].span
        span = self._binding_decl_span(*binding)
        return (bkind, name, span) if span is not None else None

    def references_for_rename(self, offset: int) -> list[Span] | None:
        """Every span naming the same ``let``/loop variable/stage/``use`` alias/type as the one
        under ``offset`` (declaration included), or None when it cannot be renamed."""
        if self.rename_target(offset) is None:
            return None
        return self.references(offset, include_declaration=True)

    def rename_problem(self, offset: int, new: str, keywords: frozenset[str]) -> str | None:
        """Why renaming what is under ``offset`` to ``new`` must be refused, or None when it
        is safe (LSP ``textDocument/rename``).

        Refused: a target that cannot be renamed; a ``new`` that is not an identifier or is one
        of ``keywords``; for a type, a built-in or already declared type name; for a value
        binding (``let``, loop variable, stage, ``use`` alias), ``input``, a stage or ``use``
        alias name, or any name visible at the declaration or at a reference (``let``/loop
        variables, ``index``) or declared in the declaration's block.  Finally the edited text
        is re-checked: the rename is refused when any name resolves differently (every
        reference must still reach the renamed declaration, and nothing else may newly reach
        it) or a new error appears."""
        rt = self.rename_target(offset)
        if rt is None:
            return (
                "only `let` variables, loop variables, stages, `use` aliases and declared "
                "types can be renamed"
            )
        kind, old, _span = rt
        if not IDENT_RE.match(new):
            return f"`{new}` is not a valid name"
        if new in keywords:
            return f"`{new}` is a keyword"
        if new == old:
            return None
        spans = self.references_for_rename(offset) or []
        if kind == "type":
            if new in BUILTIN_TYPES or new == "map":
                return f"`{new}` is a built-in type"
            env = self.result.env
            if (
                new in self.type_decls()
                or new in env.objects
                or new in env.aliases
                or new in env.externs
            ):
                return f"a type named `{new}` already exists"
        else:
            clash = self._value_clash(new, spans)
            if clash is not None:
                return clash
        return self._semantic_change(kind, old, new, spans)

    def _value_clash(self, new: str, spans: list[Span]) -> str | None:
        """A message when ``new`` is a global name or a local name visible at one of
        ``spans`` (declaration and references of a value binding) or declared in the
        declaration's block."""
        if new == "input":
            return "`input` is the flow's input"
        for item in self.module.items:
            if isinstance(item, ast.StageDecl) and item.name.name == new:
                return f"`{new}` is already the name of a stage (line {item.name.span.line})"
            if isinstance(item, ast.UseDecl) and item.alias.name == new:
                return f"`{new}` is already the name of a `use` (line {item.alias.span.line})"
        for site in spans:
            line = self._local_clash(new, site)
            if line is not None:
                return (
                    f"`{new}` is already a variable in scope at line {site.line} "
                    f"(declared on line {line})"
                )
        return None

    def _local_clash(self, new: str, site: Span) -> int | None:
        """The line of a local binding named ``new`` visible at ``site`` (or declared in the
        same block as a ``let`` at ``site``), else None."""
        path = self.node_path(site.start)
        for i, n in enumerate(path):
            child = path[i + 1] if i + 1 < len(path) else None
            if isinstance(n, ast.Block):
                decl_here = (
                    isinstance(child, ast.LetStmt)
                    and child.name.span.start == site.start
                    and child.name.span.end == site.end
                )
                for st in n.stmts:
                    if not isinstance(st, ast.LetStmt) or st is child:
                        continue
                    if st.name.name == new and (decl_here or st.span.start < site.start):
                        return st.name.span.line
            elif isinstance(n, (ast.MapExpr, ast.FilterExpr, ast.ReduceExpr)):
                outside = (
                    [n.over]
                    + ([n.init] if isinstance(n, ast.ReduceExpr) else [])
                    + ([n.limit] if isinstance(n, ast.MapExpr) and n.limit is not None else [])
                )
                if any(o.span.start <= site.start < o.span.end for o in outside):
                    continue
                names = [n.var] + ([n.acc] if isinstance(n, ast.ReduceExpr) else [])
                for ident in names:
                    if ident.name == new and ident.span.start != site.start:
                        return ident.span.line
                if new == "index":
                    return n.var.span.line
        return None

    def _semantic_change(self, kind: str, old: str, new: str, spans: list[Span]) -> str | None:
        """Re-check the text with ``spans`` replaced by ``new`` and compare name resolution
        and errors with this analysis; a message when they differ."""
        text = self.text
        for s in sorted(spans, key=lambda s: s.start, reverse=True):
            text = text[: s.start] + new + text[s.end :]
        after = analyze(text, self.module.file)
        before_sig = _resolution(self)
        after_sig = _resolution(after)
        what = f"renaming `{old}` to `{new}`"
        if before_sig != after_sig:
            return f"{what} would change what names refer to"
        before_errs, after_errs = _error_counts(self), _error_counts(after)
        for d in after.result.diagnostics:
            if d.severity == "error" and after_errs[d.code] > before_errs[d.code]:
                return f"{what} would make the program invalid: {d.message}"
        return None

    # -- quick fixes ---------------------------------------------------------------------------

    def fixes(self, d: Diagnostic) -> list[Fix]:
        """The mechanical edits the hint of diagnostic ``d`` (one of this analysis') states.

        - "did you mean `X`?" (``unknown-name``/``-type``/``-field``/``-tool``/``-argument``/
          ``-error-code``, ``invalid-constraint``, ``invalid-value`` for ``@format``, and
          ``type-mismatch`` for an unknown key of an object literal): the misspelt name — the
          last backticked word of the message — is replaced by ``X`` where a span of the
          diagnostic (its primary span, else a note's) is exactly that name, that name quoted
          (the quotes are kept) or ``@`` and the name; preferred;
        - ``unknown-type`` of another language's type name, "agentflow's string type is
          `text`": the name replaced by that type (when it is a plain name); preferred;
        - ``empty-tools`` "write `tools none`": the clause, when it reads ``tools [ ]``;
          preferred;
        - ``unused-variable`` "name it `_x`": a rename to ``_x``, only when
          :meth:`rename_problem` accepts it;
        - ``unknown-name`` of an agent "declare it: `use agent "x" as x`": that line, inserted
          after the last ``use`` item (else after the ``flow`` header, else at the top).

        Anything else (or a span that does not read as expected): no fix."""
        hint = d.hint or ""
        if d.span.file != self.module.file or not hint:
            return []
        m = _DID_YOU_MEAN.match(hint)
        if m:
            fix = self._replace_misspelt(d, m.group(1))
            return [fix] if fix is not None else []
        m = _FOREIGN_TYPE.match(hint)
        if m and d.code == "unknown-type":
            fix = self._replace_misspelt(d, m.group(1))
            return [fix] if fix is not None else []
        if d.code == "empty-tools" and "`tools none`" in hint:
            if _EMPTY_TOOLS.match(self.text[d.span.start : d.span.end]):
                edit = (d.span.start, d.span.end, "tools none")
                return [Fix("Replace `tools []` with `tools none`", [edit], True)]
            return []
        m = _UNUSED_HINT.match(hint)
        if m and d.code == "unused-variable":
            new, off = m.group(1), d.span.start
            rt = self.rename_target(off)
            if rt is None or rt[0] != "let" or rt[1] != new[1:]:
                return []
            if self.rename_problem(off, new, KEYWORDS) is not None:
                return []
            spans = self.references_for_rename(off) or []
            return [Fix(f"Rename `{rt[1]}` to `{new}`", [(s.start, s.end, new) for s in spans])]
        m = _DECLARE_USE.match(hint)
        if m and d.code == "unknown-name":
            return [Fix(f"Declare `{m.group(1)}`", [self._top_insertion(m.group(1))])]
        return []

    def _replace_misspelt(self, d: Diagnostic, new: str) -> Fix | None:
        mt = _LAST_TICKED.search(d.message)
        if mt is None:
            return None
        wrong = mt.group(1).removeprefix("@")
        if not wrong or wrong == new:
            return None
        spans = [d.span] + [n.span for n in d.notes if n.span is not None]
        for sp in spans:
            if sp.file != d.span.file:
                continue
            written = self.text[sp.start : sp.end]
            if written == wrong:
                edit = (sp.start, sp.end, new)
            elif written == "@" + wrong:
                edit = (sp.start + 1, sp.end, new)
            elif (
                len(written) >= 2
                and written[0] == written[-1] == '"'
                and written[1:-1] == wrong
                and not any(c in new for c in '"\\$')
            ):
                edit = (sp.start + 1, sp.end - 1, new)
            else:
                continue
            return Fix(f"Change `{wrong}` to `{new}`", [edit], True)
        return None

    def _top_insertion(self, line: str) -> tuple[int, int, str]:
        """An insertion of the top-level ``line`` after the last ``use`` item (else after the
        ``flow`` header, else at the start of the file)."""
        anchor = None
        for item in self.module.items:
            if isinstance(item, (ast.UseDecl, ast.FlowHeader)):
                if anchor is None or isinstance(item, ast.UseDecl):
                    anchor = item
        if anchor is None:
            return (0, 0, line + "\n\n")
        nl = self.text.find("\n", anchor.span.end)
        if nl < 0:
            return (len(self.text), len(self.text), "\n" + line + "\n")
        return (nl + 1, nl + 1, line + "\n")

    # -- outline -------------------------------------------------------------------------------

    def symbols(self) -> list[DocSymbol]:
        """The document outline in source order."""
        out: list[DocSymbol] = []
        res = self.result
        for item in self.module.items:
            if isinstance(item, ast.FlowHeader):
                out.append(
                    DocSymbol(item.name.name, "flow", item.span, item.name.span, item.description)
                )
            elif isinstance(item, ast.TypeDecl):
                ds = DocSymbol(item.name.name, "type", item.span, item.name.span)
                if item.body is not None:
                    for f in item.body.fields:
                        ds.children.append(
                            DocSymbol(
                                f.name.name,
                                "field",
                                f.span,
                                f.name.span,
                                _written(self.text, f.type),
                            )
                        )
                else:
                    ds.detail = "= " + _written(self.text, item.alias) if item.alias else None
                out.append(ds)
            elif isinstance(item, ast.ExternType):
                out.append(DocSymbol(item.name.name, "type", item.span, item.name.span, "extern"))
            elif isinstance(item, ast.ExternTool):
                sig = res.tool_decls.get(item.name.name)
                out.append(
                    DocSymbol(
                        item.name.name,
                        "tool",
                        item.span,
                        item.name.span,
                        sig_str(sig) if sig else None,
                    )
                )
            elif isinstance(item, ast.UseDecl):
                out.append(
                    DocSymbol(
                        item.alias.name, item.kind, item.span, item.alias.span, f'"{item.target}"'
                    )
                )
            elif isinstance(item, ast.StageDecl):
                st = res.stage_types.get(item.name.name)
                ds = DocSymbol(
                    item.name.name,
                    "stage",
                    item.span,
                    item.name.span,
                    T.type_str(st) if st else None,
                )
                for s in item.body.stmts:
                    if isinstance(s, ast.LetStmt):
                        ds.children.append(
                            DocSymbol(
                                s.name.name,
                                "let",
                                s.span,
                                s.name.span,
                                T.type_str(res.type_of(s.value)),
                            )
                        )
                out.append(ds)
            elif isinstance(item, ast.TestDecl):
                out.append(DocSymbol(item.name, "test", item.span, item.name_span, "test"))
        return out

    def tests(self) -> list[tuple[str, Span]]:
        """``(name, span of the name)`` of every ``test`` block, in source order (the "run
        test" code lenses)."""
        return [(t.name, t.name_span) for t in self.module.of(ast.TestDecl)]

    # -- completion ----------------------------------------------------------------------------

    def completions(self, offset: int, text: str | None = None) -> list[Completion]:
        """Completion items at ``offset`` of ``text`` (default: the analysed text; pass the
        current buffer when this analysis is of an older version)."""
        text = self.text if text is None else text
        offset = max(0, min(offset, len(text)))
        word = _WORD_TAIL.search(text, 0, offset)
        wstart = word.start() if word else offset
        before = text[:wstart]
        # 1. fields after `.`
        if before.endswith(".") and not before.endswith(".."):
            return self._member_completions(text, wstart - 1, offset)
        try:
            toks = [t for t in lex(before) if t.type not in COMMENTS]
        except SynErr:
            return []  # inside a string or comment
        if _inside_comment(text, wstart):
            return []
        ctx = _context(toks)
        code = [t for t in toks if t.type != "NL"]
        prev = code[-1].value if code else None
        at_line_start = not text[text.rfind("\n", 0, wstart) + 1 : wstart].strip()
        if ctx.tools_list:
            return self._tool_completions()
        if ctx.test_block:
            # a `test` block (docs/reference/testing.md): its items, then stub targets
            if at_line_start:
                return [Completion(k, "keyword", "test item") for k in ("input", "expect")] + [
                    Completion(TEST_WORDS[0], "keyword", "test item"),
                    Completion("replay", "keyword", 'replay "cassette.jsonl"'),
                ]
            if prev == "stub":
                return [Completion(k, "keyword") for k in STUB_KINDS]
            if prev == "expect":
                extra = [Completion("fail", "keyword", 'expect fail "code"')] + [
                    Completion(n, "variable") for n in ("output", "inferences", "calls")
                ]
                return extra + self._names_analysis(text, wstart)._expr_completions(wstart)
        found = errors_help.completions(code)  # tolerate, catch on [codes] as, error codes
        if found is not None:
            return [Completion(*c) for c in found]
        if (
            prev in ("expect", "->", "<")
            or (prev == ":" and ctx.type_colon)
            or (prev == "|" and ctx.in_type)
            or (prev == "=" and ctx.type_alias)
        ):
            return self._names_analysis(text, wstart)._type_completions()
        if prev in ("input", "output") and len(code) >= 1 and ctx.depth == 0:
            return self._names_analysis(text, wstart)._type_completions()
        if ctx.agent_block and at_line_start:
            return [Completion(c, "keyword", "agent clause") for c in AGENT_CLAUSES]
        if ctx.depth == 0 and at_line_start:
            return [Completion(k, "keyword") for k in TOP_LEVEL_WORDS]
        catch = errors_help.after_expression(code)
        if at_line_start and prev != "}":
            catch = []
        return [Completion(*c) for c in catch] + self._names_analysis(
            text, wstart
        )._expr_completions(wstart)

    def _names_analysis(self, text: str, offset: int) -> Analysis:
        """An analysis in which the item around ``offset`` parses: this one when it is of
        ``text`` and that item is fine, else one of ``text`` with the cursor's line blanked out
        (offsets unchanged), which is what lets half-typed statements see their scope."""
        if text == self.text and not any(
            isinstance(i, ast.ErrorItem) and i.span.start <= offset <= i.span.end
            for i in self.module.items
        ):
            return self
        ls = text.rfind("\n", 0, offset) + 1
        le = text.find("\n", offset)
        le = len(text) if le < 0 else le
        return analyze(text[:ls] + " " * (le - ls) + text[le:], self.module.file)

    def _member_completions(self, text: str, dot: int, offset: int) -> list[Completion]:
        # blank out `.partial` and re-check, then type the expression that ended at the dot
        from agentflow.compiler.api import check_source

        m = re.compile(r"[A-Za-z0-9_]*").match(text, offset)
        end = m.end() if m else offset
        patched = text[:dot] + " " * (end - dot) + text[end:]
        patched_result = check_source(patched, self.module.file)
        best: ast.Expr | None = None
        for n in _walk(patched_result.module):
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
                    ),
                )
            ):
                if best is None or n.span.start < best.span.start:
                    best = n
        if best is None:
            return []
        t = patched_result.type_of(best)
        env = patched_result.env
        if isinstance(best, ast.Projection) and best.path is None:
            lt = env.resolve(t)
            if isinstance(lt, T.ListType):
                t = lt.elem
        return _fields_of(t, env)

    def _type_completions(self) -> list[Completion]:
        out = [Completion(n, "type", "built-in") for n in BUILTIN_TYPES]
        out.append(Completion("map", "type", "map<T>"))
        for name in self.type_decls():
            out.append(
                Completion(
                    name, "type", self.type_summary(name).split("\n")[0], self._type_doc(name)
                )
            )
        return out

    def _tool_completions(self) -> list[Completion]:
        out = []
        for name, sig in sorted(self.result.tool_decls.items()):
            out.append(
                Completion(name, "tool", self.tool_text(sig), getattr(sig.decl, "doc", None))
            )
        for name in sorted(self.result.tools):
            if name not in self.result.tool_decls:
                out.append(Completion(name, "tool", "catalog tool (untyped)"))
        return out

    def _expr_completions(self, offset: int) -> list[Completion]:
        res = self.result
        out: list[Completion] = [Completion("input", "variable", T.type_str(res.input_type))]
        stage: ast.StageDecl | None = None
        for item in self.module.items:
            if isinstance(item, ast.StageDecl):
                if item.span.start <= offset <= item.span.end:
                    stage = item
                    break
                if item.span.end < offset and item.name.name in res.stage_types:
                    out.append(
                        Completion(
                            item.name.name, "stage", T.type_str(res.stage_types[item.name.name])
                        )
                    )
        for alias, u in res.uses.items():
            out.append(Completion(alias, "agent", f'use {u.kind} "{u.target}"'))
        if stage is not None:
            seen: set[str] = set()
            for n in _walk(stage.body):
                if isinstance(n, ast.LetStmt) and n.span.end <= offset and n.name.name not in seen:
                    seen.add(n.name.name)
                    out.append(
                        Completion(n.name.name, "variable", T.type_str(res.type_of(n.value)))
                    )
                elif isinstance(n, (ast.MapExpr, ast.FilterExpr, ast.ReduceExpr)) and (
                    n.span.start <= offset <= n.span.end
                ):
                    out.append(Completion(n.var.name, "variable", "loop variable"))
                    out.append(Completion("index", "variable", "int"))
                    if isinstance(n, ast.ReduceExpr):
                        out.append(Completion(n.acc.name, "variable", "accumulator"))
                elif isinstance(n, (ast.CatchExpr, ast.TryExpr)) and n.var is not None:
                    if n.body.span.start <= offset <= n.body.span.end:  # `catch … as err { … }`
                        out.append(Completion(n.var.name, "variable", "Error"))
        out.extend(self._tool_completions())
        out.extend(Completion(k, "keyword") for k in STATEMENT_KEYWORDS)
        return out


# ---------------------------------------------------------------------------------------------
# helpers


@functools.cache
def _prelude_text() -> str:
    try:
        return PRELUDE.read_text(encoding="utf-8")
    except OSError:  # pragma: no cover
        return ""


def _with_doc(text: str, doc: str | None) -> str:
    return f"{text}\n\n{doc}" if doc else text


def _span_key(s: Span) -> tuple[str, int, int]:
    return (s.file, s.start, s.end)


def _unique(spans: list[Span]) -> list[Span]:
    seen: set[tuple[str, int, int]] = set()
    out = []
    for s in sorted(spans, key=lambda s: (s.file, s.start)):
        if _span_key(s) not in seen:
            seen.add(_span_key(s))
            out.append(s)
    return out


def _resolution(a: Analysis) -> list[tuple[str, str, int | None]]:
    """Name resolution of a module as comparable data: for each :class:`ast.Name` in walk order,
    ``(node type, symbol kind, walk index of the declaring node)``; other nodes contribute
    their type only (the structure of the tree)."""
    nodes = list(_walk(a.module))
    index = {id(n): i for i, n in enumerate(nodes)}
    out: list[tuple[str, str, int | None]] = []
    for n in nodes:
        sym = a.result.references.get(id(n)) if isinstance(n, ast.Name) else None
        if sym is None:
            out.append((type(n).__name__, "", None))
        else:
            out.append((type(n).__name__, sym.kind, index.get(id(sym.decl))))
    return out


def _error_counts(a: Analysis) -> Counter[str]:
    return Counter(d.code for d in a.result.diagnostics if d.severity == "error")


def _written(text: str, node: ast.Node | None) -> str:
    if node is None:
        return ""
    return text[node.span.start : node.span.end]


def _decl_span(sym: Symbol) -> Span | None:
    d = sym.decl
    if isinstance(d, ast.StageDecl):
        return d.name.span
    if isinstance(d, ast.LetStmt):
        return d.name.span
    if isinstance(d, ast.UseDecl):
        return d.alias.span
    if isinstance(d, ast.InputDecl):
        return d.span
    if isinstance(d, ast.ReduceExpr):
        return d.acc.span if sym.kind == "acc" else d.var.span
    if isinstance(d, (ast.MapExpr, ast.FilterExpr)):
        return d.var.span
    if isinstance(d, ast.CatchExpr) and d.var is not None:
        return d.var.span
    return None


def _fields_of(t: T.Type, env: T.TypeEnv) -> list[Completion]:
    t = env.resolve(T.strip_optional(env.resolve(t), env))
    out: list[Completion] = []
    if isinstance(t, T.VerdictType):
        t = T.VERDICT_OBJECT
    if isinstance(t, T.ObjectType):
        for k, f in t.fields.items():
            out.append(Completion(k, "field", T.type_str(f.type), f.doc))
    elif isinstance(t, (T.ListType, T.MapType)) or t == T.TEXT or t in (T.PATH, T.MEMBER):
        out.append(Completion("count", "property", "int"))
    elif isinstance(t, T.UseType) and t.kind == "team":
        out.append(Completion("main", "agent", "the team's main agent"))
        out.append(Completion("member", "agent", "member(name: text | member)"))
    return out


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


def _context(toks: list) -> _Ctx:
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
    if code and code[-1].value == ":":
        ctx.type_colon = top == "type" or (len(code) >= 3 and code[-3].value == "let")
    if code and code[-1].value == "=":
        ctx.type_alias = len(code) >= 3 and code[-3].value == "type"
    if code and code[-1].value == "|":
        ctx.in_type = ctx.in_type or any(t.value == "type" for t in code[-12:])
    return ctx


def analyze(text: str, file: str, parser: Any = None) -> Analysis:
    """Check ``text`` with :func:`agentflow.compiler.api.check_source` and wrap the result.

    With ``parser`` (an :class:`agentflow.lsp.incremental.IncrementalParser` for this
    document), parsing reuses the unchanged items of the previous version; the result is the
    same."""
    from agentflow.compiler.api import check_source

    if parser is None:
        return Analysis(text, check_source(text, file))
    import gc

    from agentflow.compiler.checker import check_module

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        module, diags = parser.parse(text)
        return Analysis(text, check_module(module, parse_diagnostics=diags))
    finally:
        if was_enabled:
            gc.enable()
