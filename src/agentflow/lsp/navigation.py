"""Navigation and rename: go to definition, find references, and renaming a ``let``, loop
variable, stage, ``use`` alias, declared type, user function or function parameter — with the
reasons a rename must be refused (a clash, or a re-check of the edited text that resolves a name
differently or adds an error). User functions are :mod:`.user_functions`'; a ``parallel``
block's branch names (:func:`~agentflow.lsp.locate.branch_under`) are declarations of the
fields their reads (``r.fast``) name."""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from agentflow.compiler import types as T
from agentflow.compiler.checker import Symbol, ToolSig
from agentflow.compiler.imports import file_key
from agentflow.core.spans import Span
from agentflow.core.vocabulary import BUILTIN_TYPES, RESERVED_WORDS
from agentflow.grammar import ast
from agentflow.lsp import locate, stubs, user_functions

if TYPE_CHECKING:
    from agentflow.lsp.analysis import Analysis


IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


#: value bindings a rename may change (``input`` and the implicit ``index`` may not)
_RENAMABLE = frozenset({"let", "loopvar", "acc", "error", "stage", "use", "param"})

#: why a reserved word (never a name: docs/reference/lexical.md "Keywords") is refused
_RESERVED = "`{new}` is a reserved word: it is never a name"


def definition(a: Analysis, offset: int) -> Span | None:
    """The span of the declaration of what is under ``offset`` (its name), or None.

    Prelude tools point into ``stdlib/prelude.flow`` (span file ``"<prelude>"``)."""
    fn = user_functions.definition(a, offset)
    if fn is not None:
        return fn
    branch = locate.branch_under(a, offset)  # a `parallel` branch's name declares itself
    if branch is not None:
        return branch.key_span
    target = locate.target(a, offset)
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
        decl = locate.type_decls(a).get(payload)
        return decl.name.span if decl is not None else None
    if kind == "member":
        obj = locate.object_of(a, a.result.type_of(payload.obj))
        if obj is not None and payload.name in obj.fields:
            sp = obj.fields[payload.name].span
            return sp if isinstance(sp, Span) else None
        return None
    if kind == "letdecl":
        let: ast.LetStmt = payload
        return let.name.span
    if kind == "stagedecl":
        stage: ast.StageDecl = payload
        return stage.name.span
    if kind == "usedecl":
        use: ast.UseDecl = payload
        return use.alias.span
    if kind == "fielddecl":
        field: ast.FieldDecl = payload
        return field.name.span
    if kind in ("loopdecl", "catchdecl"):
        loop_name: ast.Ident = payload[1]
        return loop_name.span
    if kind == "paramdecl":  # a user function's parameter, at its declaration
        fn_param: ast.Param = payload
        return fn_param.name.span
    if kind == "param":
        return param_span(a, *payload)
    return None


def param_span(a: Analysis, sig: ToolSig, name: str) -> Span | None:
    """The name span of parameter ``name`` in the ``extern tool`` declaring ``sig``."""
    decl = sig.decl
    if isinstance(decl, ast.ExternTool):
        for p in decl.params:
            if p.name.name == name:
                return p.name.span
    return None


def value_binding(a: Analysis, kind: str, payload: Any) -> tuple[Any, str, str] | None:
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
    if kind == "catchdecl":
        decl, ident = payload
        return decl, ident.name, "error"
    if kind == "paramdecl":
        return payload, payload.name.name, "param"
    return None


def binding_decl_span(a: Analysis, decl: Any, name: str, kind: str) -> Span | None:
    """The name token declaring a value binding (``input``: the keyword of the ``input``
    item; the implicit ``index``: None)."""
    if isinstance(decl, (ast.LetStmt, ast.StageDecl)):
        return decl.name.span
    if isinstance(decl, ast.UseDecl):
        return decl.alias.span
    if isinstance(decl, ast.Param):  # a user function's parameter
        return decl.name.span
    if isinstance(decl, ast.InputDecl):
        s = decl.span
        return Span(s.file, s.line, s.column, s.line, s.column + 5, s.start, s.start + 5)
    if isinstance(decl, ast.ReduceExpr) and kind == "acc":
        return decl.acc.span
    if isinstance(decl, (ast.MapExpr, ast.FilterExpr, ast.ReduceExpr)) and kind == "loopvar":
        return decl.var.span
    if isinstance(decl, ast.CatchExpr | ast.TryExpr) and decl.var is not None:
        return decl.var.span
    return None


def binding_uses(a: Analysis, decl: Any, name: str, kind: str) -> list[Span]:
    """Every name resolving to the binding; for a stage also the names the checker
    reported as ``forward-stage-reference`` to it (they spell it, and a rename must keep
    them spelling it); for a stage, ``use`` alias or ``let`` the tests' ``stub`` names
    naming it (:func:`agentflow.lsp.stubs.names_of`)."""
    out: list[Span] = []
    if kind in ("stage", "use", "let"):
        out.extend(stubs.names_of(a, decl))
    refs = a.result.references
    forward: set[tuple[int, int]] = set()
    if kind == "stage":
        key = locate.span_key(decl.name.span)
        for d in a.result.diagnostics:
            if d.code == "forward-stage-reference" and any(
                n.span is not None and locate.span_key(n.span) == key for n in d.notes
            ):
                forward.add((d.span.start, d.span.end))
    for n in ast.walk(a.module):
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


def field_key(a: Analysis, kind: str, payload: Any) -> tuple[str, int, int] | None:
    """The declaration of the field under the cursor, as a span key, when resolvable."""
    if kind == "fielddecl":
        return locate.span_key(payload.name.span)
    obj = locate.object_of(a, a.result.type_of(payload.obj))
    if obj is None or payload.name not in obj.fields:
        return None
    sp = obj.fields[payload.name].span
    return locate.span_key(sp) if isinstance(sp, Span) else None


def references(a: Analysis, offset: int, include_declaration: bool = True) -> list[Span] | None:
    """Every span naming what is under ``offset`` (LSP ``textDocument/references``), in
    source order, or None when nothing resolvable is there.

    Covers what :func:`definition` resolves: ``let``/loop variables/accumulators, ``index``,
    ``input``, stages, ``use`` aliases (names and agent targets), declared and built-in
    types, tools (calls and ``tools [...]`` entries), tool parameters (call arguments), and
    fields (member accesses and object-literal keys typed by the declaring type).  With
    ``include_declaration`` the declaring name is included too — for prelude tools, their
    parameters and fields of prelude types a span in ``"<prelude>"``; user functions: see
    :func:`agentflow.lsp.user_functions.references`."""
    fn = user_functions.references(a, offset, include_declaration)
    if fn is not None:
        return fn
    branch = locate.branch_under(a, offset)  # `parallel { a: … }`: its reads `r.a`
    if branch is not None:
        stub = stubs.branch_stub_at(a, offset)  # `stub step r.a`: every block's branch `a`
        named = stubs.branches(a, stub) if stub is not None else [branch]
        found: list[Span] = []
        for b in named:
            found.extend(field_uses(a, locate.span_key(b.key_span)))
            found.extend(stubs.branch_names_of(a, b))  # `stub step r.a …`
            if include_declaration:
                found.append(b.key_span)
        return locate.unique(found)
    target = locate.target(a, offset)
    if target is None:
        return None
    kind, payload, path = target
    uses: list[Span] = []
    decls: list[Span] = []
    binding = value_binding(a, kind, payload)
    if binding is not None:
        uses = binding_uses(a, *binding)
        ds = binding_decl_span(a, *binding)
        decls = [ds] if ds is not None else []
    elif kind == "tool":
        sig: ToolSig = payload
        for n in ast.walk(a.module):
            if isinstance(n, ast.Call) and isinstance(n.callee, ast.Name):
                if n.callee.name == sig.name and locate.call_sig(a, n) is sig:
                    uses.append(n.callee.span)
            elif isinstance(n, ast.ToolRef) and not n.pattern and n.name == sig.name:
                uses.append(n.span)
        uses.extend(stubs.names_of(a, sig))  # `stub tool NAME …`
        if isinstance(sig.decl, ast.ExternTool):
            decls = [sig.decl.name.span]
    elif kind == "param":
        sig, pname = payload
        for n in ast.walk(a.module):
            if isinstance(n, ast.Call) and locate.call_sig(a, n) is sig:
                uses.extend(a.name_span for a in n.args if a.name == pname)
        ps = param_span(a, sig, pname)
        decls = [ps] if ps is not None else []
    elif kind == "type":
        for n in ast.walk(a.module):
            if isinstance(n, ast.NamedType) and n.name == payload:
                uses.append(n.span)
            elif isinstance(n, (ast.TypeDecl, ast.ExternType)) and n.name.name == payload:
                decls.append(n.name.span)
            elif isinstance(n, ast.ImportDecl):  # the name this file gives an import
                decls.extend(local.span for _, local in n.pairs() if local.name == payload)
    elif kind in ("member", "fielddecl"):
        key = field_key(a, kind, payload)
        if key is None:
            return None
        uses = field_uses(a, key)
        if kind == "fielddecl":
            decls = [payload.name.span]
        else:
            obj = locate.object_of(a, a.result.type_of(payload.obj))
            decls = [obj.fields[payload.name].span] if obj is not None else []
    else:
        return None
    return locate.unique(uses + (decls if include_declaration else []))


#: library functions whose second argument, a string literal, names a field of the elements
#: of their first (``sort_by(xs, "-score")``), and those whose second is a list of such keys
_FIELD_ARG = frozenset({"sort_by", "group_by", "count_by"})
_FIELD_KEYS = frozenset({"pick", "omit"})


def _same_decl(f: Any, key: tuple[str, int, int]) -> bool:
    """Whether the field ``f`` (a :class:`~agentflow.compiler.types.Field`, or None) is the one
    declared at ``key``: the same place of the same file (whatever spelling of its path)."""
    if f is None or not isinstance(f.span, Span):
        return False
    k = locate.span_key(f.span)
    return k[1:] == key[1:] and (k[0] == key[0] or file_key(k[0]) == file_key(key[0]))


def _inside_quotes(lit: ast.StringLit, skip: str = "") -> Span | None:
    """The span of the text of the plain one-line string ``lit`` after ``skip`` (``-`` of
    ``"-score"``), when written without escapes; else None."""
    sp, text = lit.span, lit.text
    if not lit.is_plain or sp.line != sp.end_line or sp.end - sp.start != len(text) + 2:
        return None
    k = 1 + len(skip)
    return Span(
        sp.file, sp.line, sp.column + k, sp.line, sp.end_column - 1, sp.start + k, sp.end - 1
    )


def _string_field_uses(a: Analysis, n: ast.FuncCall, key: tuple[str, int, int]) -> list[Span]:
    """In ``sort_by(xs, "name")`` (``group_by``, ``count_by``) or ``pick(r, ["name"])``
    (``omit``): the name inside the quotes, when it names the field declared at ``key``."""
    res = a.result
    if len(n.args) < 2 or id(n.args[0]) not in res.expr_types:
        return []
    first = res.type_of(n.args[0])
    if n.name in _FIELD_ARG:
        lst = a.result.env.resolve(T.strip_optional(first, a.result.env))
        obj = locate.object_of(a, lst.elem) if isinstance(lst, T.ListType) else None
        lits = [n.args[1]]
    else:
        obj = locate.object_of(a, first)
        keys = n.args[1]
        lits = list(keys.items) if isinstance(keys, ast.ListLit) else []
    out: list[Span] = []
    for lit in lits:
        if obj is None or not isinstance(lit, ast.StringLit) or not lit.is_plain:
            continue
        skip = "-" if n.name == "sort_by" and lit.text.startswith("-") else ""
        name = lit.text[len(skip) :]
        inside = _inside_quotes(lit, skip)
        if inside is not None and _same_decl(obj.fields.get(name), key):
            out.append(inside)
    return out


def field_uses(a: Analysis, key: tuple[str, int, int]) -> list[Span]:
    """Member accesses, object-literal keys and the field names of ``sort_by``/``group_by``/
    ``count_by``/``pick``/``omit`` whose field is declared at ``key``."""
    out: list[Span] = []
    res = a.result
    for n in ast.walk(a.module):
        if isinstance(n, ast.FuncCall) and (n.name in _FIELD_ARG or n.name in _FIELD_KEYS):
            out.extend(_string_field_uses(a, n, key))
        elif isinstance(n, ast.Member):
            if id(n.obj) not in res.expr_types:
                continue
            obj = locate.object_of(a, res.type_of(n.obj))
            f = obj.fields.get(n.name) if obj is not None else None
            if _same_decl(f, key):
                out.append(n.name_span)
        elif isinstance(n, ast.ObjectLit) and id(n) in res.expr_types:
            obj = locate.object_of(a, res.type_of(n))
            if obj is None:
                continue
            for entry in n.entries:
                if _same_decl(obj.fields.get(entry.key), key):
                    out.append(_key_name(entry))
        elif isinstance(n, ast.Binary) and n.op in ("==", "!=") and id(n.left) in res.expr_types:
            # `expect revise == { approved: true, … }`: the literal's keys are the fields of
            # the other side's type (an operand of `==` has no expected type of its own)
            for lit, other in ((n.right, n.left), (n.left, n.right)):
                if id(other) in res.expr_types:
                    out.extend(_compared_keys(a, lit, res.type_of(other), key))
    return out


def _compared_keys(a: Analysis, lit: ast.Expr, t: Any, key: tuple[str, int, int]) -> list[Span]:
    """The keys of the object literals in ``lit`` (nested in objects and lists) that name the
    field declared at ``key`` of the type ``t`` they are compared with."""
    out: list[Span] = []
    if isinstance(lit, ast.ListLit):
        lt = a.result.env.resolve(T.strip_optional(t, a.result.env))
        if isinstance(lt, T.ListType):
            for item in lit.items:
                out.extend(_compared_keys(a, item, lt.elem, key))
        return out
    obj = locate.object_of(a, t) if isinstance(lit, ast.ObjectLit) else None
    if obj is None or not isinstance(lit, ast.ObjectLit):
        return out
    for entry in lit.entries:
        f = obj.fields.get(entry.key)
        if f is None:
            continue
        if _same_decl(f, key):
            out.append(_key_name(entry))
        out.extend(_compared_keys(a, entry.value, f.type, key))
    return out


def _key_name(entry: ast.ObjectEntry) -> Span:
    """The span of an object literal's key without its quotes (``"title": …``)."""
    sp = entry.key_span
    if sp.end - sp.start == len(entry.key) + 2 and sp.line == sp.end_line:
        return Span(
            sp.file, sp.line, sp.column + 1, sp.line, sp.end_column - 1, sp.start + 1, sp.end - 1
        )
    return sp


def own_field(a: Analysis, offset: int) -> tuple[str, Span, tuple[str, int, int]] | None:
    """``(name, span under the cursor, key of its declaration)`` of the field named under
    ``offset`` — at its declaration (``title: text`` of a ``type`` or an inline object type)
    or a use (``r.title``) — when it is declared in this document; else None."""
    target = locate.target(a, offset)
    if target is None or target[0] not in ("member", "fielddecl"):
        return None
    kind, payload, _path = target
    key = field_key(a, kind, payload)
    if key is None or key[0] != a.module.file:
        return None
    if kind == "fielddecl":
        return payload.name.name, payload.name.span, key
    return payload.name, payload.name_span, key


def field_home(a: Analysis, key: tuple[str, int, int]) -> tuple[ast.ObjectType, str | None] | None:
    """The object type whose field is declared at ``key`` in this document, and the name of
    the ``type`` it is part of (which other files import; None for an inline type of an
    ``input``, a stage or a function)."""
    for item in a.module.items:
        for n in ast.walk(item):
            if isinstance(n, ast.ObjectType) and any(
                locate.span_key(f.name.span) == key for f in n.fields
            ):
                return n, item.name.name if isinstance(item, ast.TypeDecl) else None
    return None


def field_references_in(a: Analysis, declared_in: str, key: tuple[str, int, int]) -> list[Span]:
    """In the document of ``a`` (one importing the file ``declared_in``, or that file), the uses
    of the field declared at ``key`` of that file (:func:`field_uses`)."""
    if file_key(a.module.file) == file_key(declared_in) and a.module.file != key[0]:
        key = (a.module.file, key[1], key[2])
    return field_uses(a, key)


def rename_target(a: Analysis, offset: int) -> tuple[str, str, Span] | None:
    """``(kind, name, span under the cursor)`` when a rename is possible there: ``kind`` is
    ``let``, ``loopvar``/``acc``, ``stage``, ``use`` or ``type`` (built-in types, ``input``
    and ``index`` cannot be renamed), ``param`` (a user function's), ``function`` (one
    declared in this file) or ``field`` (one declared in this file, at its declaration or a
    use)."""
    if user_functions.function_under(a, offset) is not None:
        return user_functions.rename_target(a, offset)
    target = locate.target(a, offset)
    if target is None:
        return None
    kind, payload, path = target
    if kind in ("member", "fielddecl"):
        field = own_field(a, offset)
        return ("field", field[0], field[1]) if field is not None else None
    if kind == "type":
        decl = locate.type_decls(a).get(payload)
        if decl is not None and decl.span.file == a.module.file:  # not an imported type
            return "type", payload, path[-1].span
        if decl is not None and _renamed_here(a, payload) and not _foreign_name(path):
            # `import { Ticket as Case }`: `Case` is this file's name, renamed here
            return "type", payload, path[-1].span
        return None
    binding = value_binding(a, kind, payload)
    if binding is None:
        return None
    _decl, name, bkind = binding
    if bkind not in _RENAMABLE:
        return None
    if kind == "symbol":
        return bkind, name, payload[1].span
    if stubs.stub_of(path) is not None:  # `stub stage total …`, at `total`
        return bkind, name, path[-1].span
    span = binding_decl_span(a, *binding)
    return (bkind, name, span) if span is not None else None


def _renamed_here(a: Analysis, local: str) -> bool:
    """Whether ``local`` is the ``as`` name of an import of this file."""
    return any(
        alias is not None and alias.name == local
        for item in a.module.items
        if isinstance(item, ast.ImportDecl)
        for alias in item.aliases
    )


def _foreign_name(path: list[ast.Node]) -> bool:
    """Whether the cursor is on the other file's name in ``{ Ticket as Case }`` (``Ticket``)."""
    parent = path[-2] if len(path) > 1 else None
    return isinstance(parent, ast.ImportDecl) and any(path[-1] is n for n in parent.names)


def _imported_type(a: Analysis, offset: int) -> ast.TypeDecl | ast.ExternType | None:
    """The imported type declaration named under ``offset``, if any."""
    target = locate.target(a, offset)
    if target is None or target[0] != "type":
        return None
    decl = locate.type_decls(a).get(target[1])
    return decl if decl is not None and decl.span.file != a.module.file else None


def references_for_rename(a: Analysis, offset: int) -> list[Span] | None:
    """Every span naming the same ``let``/loop variable/stage/``use`` alias/type as the one
    under ``offset`` (declaration included), or None when it cannot be renamed."""
    if rename_target(a, offset) is None:
        return None
    return references(a, offset, include_declaration=True)


def rename_problem(a: Analysis, offset: int, new: str) -> str | None:
    """Why renaming what is under ``offset`` to ``new`` must be refused, or None when it
    is safe (LSP ``textDocument/rename``).

    Refused: a target that cannot be renamed; a ``new`` that is not an identifier or is a
    reserved word (:data:`~agentflow.core.vocabulary.RESERVED_WORDS`: a contextual keyword is a
    name wherever the grammar does not expect it, docs/reference/lexical.md, and the re-check
    below refuses one the grammar would read as its keyword there); for a user function, what
    :func:`agentflow.lsp.user_functions.rename_problem` refuses; for a type, a built-in or
    already declared type name; for a value binding (``let``, loop variable, stage, ``use``
    alias, function parameter), ``input``, a stage or ``use`` alias name (not for a
    parameter: a function body sees none), another parameter of the same function, or any
    name visible at the declaration or at a reference
    (``let``/loop variables, ``index``) or declared in the declaration's block.  Finally the
    edited text is re-checked: the rename is refused when any name resolves differently
    (every reference must still reach the renamed declaration, and nothing else may newly
    reach it) or a new error appears."""
    rt = rename_target(a, offset)
    if user_functions.function_under(a, offset) is not None:
        if not IDENT_RE.match(new):
            return f"`{new}` is not a valid name"
        if new in RESERVED_WORDS:
            return _RESERVED.format(new=new)
        problem = user_functions.rename_problem(a, offset, new)
        if problem is not None or rt is None or new == rt[1]:
            return problem
        spans = references_for_rename(a, offset) or []
        return semantic_change(a, rt[0], rt[1], new, spans)
    imported = _imported_type(a, offset) if rt is None else None
    if imported is not None:
        return f"`{imported.name.name}` is declared in `{imported.span.file}`: rename it there"
    if rt is None:
        elsewhere = _foreign_field(a, offset)
        if elsewhere is not None:
            return elsewhere
        return (
            "only `let` variables, loop variables, stages, `use` aliases, declared types, "
            "fields, user functions and their parameters can be renamed"
        )
    kind, old, _span = rt
    if kind == "field":
        return _field_problem(a, offset, old, new)
    if not IDENT_RE.match(new):
        return f"`{new}` is not a valid name"
    if new in RESERVED_WORDS:
        return _RESERVED.format(new=new)
    if new == old:
        return None
    spans = references_for_rename(a, offset) or []
    if kind == "type":
        if new in BUILTIN_TYPES or new == "map":
            return f"`{new}` is a built-in type"
        env = a.result.env
        if (
            new in locate.type_decls(a)
            or new in env.objects
            or new in env.aliases
            or new in env.externs
        ):
            return f"a type named `{new}` already exists"
    else:
        clash = value_clash(a, new, spans, param=kind == "param")
        if clash is not None:
            return clash
    if kind == "let" and _stubbed_with_others(a, offset):
        return (
            f"a test stubs `{old}`, which names the `let {old}` of other stages too: "
            f"renaming one would leave the stub naming the others"
        )
    return semantic_change(a, kind, old, new, spans)


def _foreign_field(a: Analysis, offset: int) -> str | None:
    """Why the field named under ``offset`` cannot be renamed from here: it is declared in
    another file (rename it there) or by the language (a built-in type's); None when no field
    is named there."""
    target = locate.target(a, offset)
    if target is None or target[0] != "member":
        return None
    payload = target[1]
    obj = locate.object_of(a, a.result.type_of(payload.obj))
    f = obj.fields.get(payload.name) if obj is not None else None
    if f is None:
        return None
    if isinstance(f.span, Span) and f.span.file not in ("", "<prelude>", a.module.file):
        where = os.path.basename(f.span.file)
        return f"field `{payload.name}` is declared in `{where}`: rename it there"
    return f"field `{payload.name}` is not declared in this file: it cannot be renamed"


def _field_problem(a: Analysis, offset: int, old: str, new: str) -> str | None:
    """Why renaming the field ``old`` under ``offset`` to ``new`` must be refused: ``new`` is
    not a name (a field takes every word of the language, docs/reference/lexical.md, but no
    other spelling), the object type already has a field ``new``, or the re-checked text
    changes what names refer to or adds an error (:func:`semantic_change`)."""
    if not IDENT_RE.match(new):
        return f"`{new}` is not a valid field name: a field is named like a variable (`due_date`)"
    if new == old:
        return None
    field = own_field(a, offset)
    home = field_home(a, field[2]) if field is not None else None
    if field is None or home is None:
        return "this field cannot be renamed"
    clash = next((f for f in home[0].fields if f.name.name == new), None)
    if clash is not None:
        owner = f"`{home[1]}`" if home[1] is not None else "this object type"
        return f"{owner} already has a field `{new}` (line {clash.name.span.line})"
    spans = references_for_rename(a, offset) or []
    return semantic_change(a, "field", old, new, spans)


def _stubbed_with_others(a: Analysis, offset: int) -> bool:
    """Whether the ``let`` under ``offset`` is named by a test's ``stub step``/``stub ask``
    that names another stage's ``let`` of the same name too."""
    target = locate.target(a, offset)
    binding = value_binding(a, target[0], target[1]) if target is not None else None
    return (
        binding is not None
        and isinstance(binding[0], ast.LetStmt)
        and stubs.shared_let(a, binding[0])
    )


def value_clash(a: Analysis, new: str, spans: list[Span], param: bool = False) -> str | None:
    """A message when ``new`` is a global name or a local name visible at one of
    ``spans`` (declaration and references of a value binding) or declared in the
    declaration's block. With ``param`` (a user function's parameter) the flow's globals
    (``input``, stages, ``use`` aliases) do not clash: a function body sees none of them."""
    if new == "input" and not param:
        return "`input` is the flow's input"
    keys = {locate.span_key(s) for s in spans}
    for item in a.module.items:
        if isinstance(item, ast.StageDecl) and item.name.name == new and not param:
            return f"`{new}` is already the name of a stage (line {item.name.span.line})"
        if isinstance(item, ast.UseDecl) and item.alias.name == new and not param:
            return f"`{new}` is already the name of a `use` (line {item.alias.span.line})"
        if isinstance(item, ast.FnDecl) and any(  # renaming one of its parameters
            locate.span_key(p.name.span) in keys for p in item.params
        ):
            for p in item.params:
                if p.name.name == new:
                    return f"`{new}` is already a parameter of `{item.name.name}`"
    for site in spans:
        line = local_clash(a, new, site)
        if line is not None and line > site.line:  # a later `let` of the same block
            return f"`{new}` is already in scope in this block: a `let` of the same block (line {line})"
        if line is not None:
            return (
                f"`{new}` is already a variable in scope at line {site.line} "
                f"(declared on line {line})"
            )
    return None


def local_clash(a: Analysis, new: str, site: Span) -> int | None:
    """The line of a local binding named ``new`` visible at ``site`` (or declared in the
    same block as a ``let`` at ``site``), else None."""
    path = locate.node_path(a, site.start)
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


def semantic_change(a: Analysis, kind: str, old: str, new: str, spans: list[Span]) -> str | None:
    """Re-check the text with ``spans`` replaced by ``new`` and compare name resolution
    and errors with this analysis; a message when they differ."""
    text = a.text
    for s in sorted(spans, key=lambda s: s.start, reverse=True):
        text = text[: s.start] + new + text[s.end :]
    after = a.reanalyze(text)
    before_sig = _resolution(a)
    after_sig = _resolution(after)
    what = f"renaming `{old}` to `{new}`"
    before_errs, after_errs = _error_counts(a), _error_counts(after)
    if after_errs["syntax-error"] > before_errs["syntax-error"]:  # a keyword where it is read
        return f"`{new}` is read as a keyword there: {what} would not parse"
    if after_errs["reserved-name"] > before_errs["reserved-name"]:  # bound, then never readable
        return f"`{new}` is read as a keyword there: {what} would name what could never be read"
    if before_sig != after_sig:
        return f"{what} would change what names refer to"
    for d in after.result.diagnostics:
        if d.severity == "error" and after_errs[d.code] > before_errs[d.code]:
            return f"{what} would make the program invalid: {d.message}"
    return None


def _resolution(a: Analysis) -> list[tuple[str, str, int | None]]:
    """Name resolution of a module as comparable data: for each :class:`ast.Name` in walk order,
    ``(node type, symbol kind, walk index of the declaring node)``; other nodes contribute
    their type only (the structure of the tree)."""
    nodes = list(ast.walk(a.module))
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
    if isinstance(d, ast.Param):  # a user function's parameter
        return d.name.span
    if isinstance(d, ast.ReduceExpr):
        return d.acc.span if sym.kind == "acc" else d.var.span
    if isinstance(d, (ast.MapExpr, ast.FilterExpr)):
        return d.var.span
    if isinstance(d, ast.CatchExpr | ast.TryExpr) and d.var is not None:
        return d.var.span
    return None


def own_type(a: Analysis, offset: int) -> str | None:
    """The name of the type under ``offset`` when this file declares it (the files importing
    it name it too: :func:`type_uses_in`), else None — an ``as`` name of an import is this
    file's alone."""
    rt = rename_target(a, offset)
    if rt is None or rt[0] != "type":
        return None
    decl = locate.type_decls(a).get(rt[1])
    return rt[1] if decl is not None and decl.span.file == a.module.file else None


def _imports_of(a: Analysis, declared_in: str, name: str) -> list[tuple[ast.Ident, ast.Ident]]:
    """``(name there, name here)`` of each ``import`` item of this document that brings the
    type ``name`` declared in the file ``declared_in``."""
    home = file_key(declared_in)
    out: list[tuple[ast.Ident, ast.Ident]] = []
    for item in a.module.items:
        if not isinstance(item, ast.ImportDecl):
            continue
        for foreign, local in item.pairs():
            decl = a.result.type_decls.get(local.name)
            if (
                foreign.name == name
                and decl is not None
                and decl.name.name == name
                and file_key(decl.span.file) == home
            ):
                out.append((foreign, local))
    return out


def type_uses_in(a: Analysis, declared_in: str, name: str) -> list[Span]:
    """In the document of ``a``, a file importing the type ``name`` of ``declared_in``: every
    span a rename of that type rewrites — its name in the ``import`` items and, where it is
    imported without ``as``, every use of it (``import { Sev as Level }`` keeps ``Level``);
    empty when the document does not import it."""
    out: list[Span] = []
    for foreign, local in _imports_of(a, declared_in, name):
        out.append(foreign.span)
        if local is foreign:
            out.extend(
                n.span
                for n in ast.walk(a.module)
                if isinstance(n, ast.NamedType) and n.name == name
            )
    return locate.unique(out)


def type_clash_in(a: Analysis, declared_in: str, name: str, new: str) -> str | None:
    """Why the type ``name`` of ``declared_in`` cannot be renamed ``new`` in the document of
    ``a``, which imports it without ``as`` (a type or function named ``new`` there), or None."""
    if not any(local is foreign for foreign, local in _imports_of(a, declared_in, name)):
        return None
    where = os.path.basename(a.module.file)
    if new in locate.type_decls(a) or new in a.result.env.externs:
        return f"`{where}` imports `{name}` and already has a type named `{new}`"
    if new in a.result.functions:  # `import { rank, Level }` would name `rank` twice
        return f"`{where}` imports `{name}` and already has a function named `{new}`"
    return None


def type_home(a: Analysis, offset: int) -> tuple[str, str] | None:
    """``(name in its file, file declaring it)`` of the declared type named under ``offset`` —
    one of this file's or an imported one (under an ``as`` name too) — or None (a built-in or
    prelude type, or no type there)."""
    target = locate.target(a, offset)
    if target is None or target[0] != "type":
        return None
    decl = locate.type_decls(a).get(target[1])
    if decl is None or (decl.span.file != a.module.file and not os.path.isabs(decl.span.file)):
        return None
    return decl.name.name, decl.span.file


def type_references_in(
    a: Analysis, declared_in: str, name: str, include_declaration: bool = True
) -> list[Span]:
    """In the document of ``a`` — the file ``declared_in`` or one importing it — every span
    naming the type ``name`` declared there: in that file its uses (and, with
    ``include_declaration``, its declaration's name); in an importer its name in the ``import``
    items, the ``as`` name given it and the uses of the name it has there. Empty when the
    document does not know that type."""
    if file_key(a.module.file) == file_key(declared_in):
        decl = locate.type_decls(a).get(name)
        if decl is None or decl.span.file != a.module.file:
            return []
        out = [
            n.span for n in ast.walk(a.module) if isinstance(n, ast.NamedType) and n.name == name
        ]
        return locate.unique(out + ([decl.name.span] if include_declaration else []))
    out = []
    for foreign, local in _imports_of(a, declared_in, name):
        out.append(foreign.span)
        if local is not foreign:
            out.append(local.span)
        out.extend(
            n.span
            for n in ast.walk(a.module)
            if isinstance(n, ast.NamedType) and n.name == local.name
        )
    return locate.unique(out)
