"""Hover: Markdown for what is under the cursor — its kind, name and type, plus its doc
comment (``///``) or the doc of its declared type."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentflow.compiler import type_names
from agentflow.compiler import types as T
from agentflow.compiler.check_types import written_type
from agentflow.compiler.checker import Symbol, ToolSig
from agentflow.core.functions import FUNCTIONS
from agentflow.core.spans import Span
from agentflow.grammar import ast
from agentflow.lsp import errors_help, locate, stubs, user_functions

if TYPE_CHECKING:
    from agentflow.lsp.analysis import Analysis


#: longest type text shown in an expression hover (characters); longer ones are cut with "…"
HOVER_MAX_TYPE = 500


def hover(a: Analysis, offset: int) -> tuple[str, Span] | None:
    """Markdown for what is under ``offset`` and the span it describes, or None."""
    code = errors_help.code_hover(a, offset)  # an error code in `catch on [ … ]`
    if code is not None:
        return code
    fn = function_hover(a, offset) or user_functions.hover(a, offset)
    if fn is not None:
        return fn
    nap = sleep_hover(a, offset)
    if nap is not None:
        return nap
    branch = branch_hover(a, offset)
    if branch is not None:
        return branch
    target = locate.target(a, offset)
    if target is None:
        return None
    kind, payload, path = target
    if stubs.stub_of(path) is not None:  # `stub stage total …`: what it names, at the stub
        shown = _target_hover(a, offset, kind, payload, path)
        return (shown[0], path[-1].span) if shown is not None else None
    return _target_hover(a, offset, kind, payload, path)


def _target_hover(
    a: Analysis, offset: int, kind: str, payload: Any, path: list[ast.Node]
) -> tuple[str, Span] | None:
    """The hover of a :func:`~agentflow.lsp.locate.target`."""
    node = path[-1]
    res = a.result
    if kind == "symbol":
        sym, name = payload
        # a name used inside a narrowing `if` has the narrowed type the checker gave it
        shown = res.expr_types.get(id(name), sym.type) if isinstance(name, ast.Name) else sym.type
        shown = sym.type if isinstance(shown, T.ErrorType) else shown
        written = type_text(a, shown)
        declared = written_of(sym.decl) if shown is sym.type else None
        if declared is not None:  # `s: Sev`, `stage a -> Sev`: the alias as written
            written = declared
        text = locate.fence(labelled(f"({sym.kind}) {sym.name}", written))
        doc = symbol_doc(a, sym)
        return locate.with_doc(text, doc), name.span
    if kind == "tool":
        sig: ToolSig = payload
        origin = (
            "prelude tool"
            if sig.prelude
            else ("tool" if sig.declared else "catalog tool (untyped)")
        )
        doc = getattr(sig.decl, "doc", None)
        return locate.with_doc(
            locate.fence(f"({origin}) {locate.tool_text(a, sig)}"), doc
        ), node.span
    if kind == "type":
        shown = locate.fence(locate.type_summary(a, payload))
        decl = a.result.type_decls.get(payload)
        if decl is not None and decl.span.file != a.module.file:  # an imported type
            shown += f"\n\nfrom `{decl.span.file}`"
            if decl.name.name != payload:  # `import { Ticket as Case }`
                shown += f", where it is `{decl.name.name}`"
        return locate.with_doc(shown, locate.type_doc(a, payload)), node.span
    if kind == "fielddecl":
        fd: ast.FieldDecl = payload
        # as written (`sev: Sev`), in a `type` or an inline object type (`expect { n: int }`)
        shown = f"(field) {fd.name.name}: {written_type(fd.type)}"
        return locate.with_doc(locate.fence(shown), fd.doc), fd.name.span
    if kind == "letdecl":
        let: ast.LetStmt = payload
        sym = let_symbol(a, let)  # the type it binds: as written, else its value's, widened
        t = sym.type if sym is not None else T.widen(res.type_of(let.value))
        written = written_of(let) or type_text(a, t)
        return (
            locate.with_doc(
                locate.fence(labelled(f"(let) {let.name.name}", written)),
                locate.doc_before(a, let.span),
            ),
            let.name.span,
        )
    if kind == "stagedecl":
        st: ast.StageDecl = payload
        t = res.stage_types.get(st.name.name, T.ERROR)
        doc = st.doc or locate.doc_before(a, st.span)
        written = written_of(st) or type_text(a, t)
        return locate.with_doc(
            locate.fence(labelled(f"(stage) {st.name.name}", written)), doc
        ), st.name.span
    if kind == "usedecl":
        u: ast.UseDecl = payload
        return (
            locate.with_doc(
                locate.fence(f'use {u.kind} "{u.target}" as {u.alias.name}'),
                locate.doc_before(a, u.span),
            ),
            u.alias.span,
        )
    if kind == "param":
        sig, pname = payload
        pt, opt = sig.params[pname]
        said = type_names.spelt(res.env, pt)  # an alias's type by the alias's name
        if locate.omittable(pt, opt):  # `name?: T`: may be left out, never null
            label, shown = f"{pname}?", said
        else:
            label = pname
            shown = said + ("?" if opt and not said.endswith("?") else "")
        here = node.name_span if isinstance(node, ast.Argument) else node.span
        return locate.fence(f"(parameter of {sig.name}) {label}: {shown}"), here
    if kind == "paramdecl":  # `fn rank(s: Severity)`: hovered at `s`
        fp: ast.Param = payload
        shown = f"(param) {fp.name.name}: {written_type(fp.type)}"
        return locate.fence(shown), fp.name.span
    if kind in ("loopdecl", "catchdecl"):
        _, ident = payload
        for sym in res.references.values():
            if sym.decl is payload[0] and sym.name == ident.name:
                shown = labelled(f"({sym.kind}) {sym.name}", type_text(a, sym.type))
                return locate.fence(shown), ident.span
        if kind == "catchdecl":  # not read in its fallback: still the failure, an `Error`
            return locate.fence(f"(error) {ident.name}: Error"), ident.span
        unused = unused_binding(a, payload[0], ident)
        return (locate.fence(unused), ident.span) if unused is not None else None
    if kind == "member":
        m: ast.Member = payload
        t = res.type_of(m)
        obj = locate.object_of(a, res.type_of(m.obj))
        doc, what = None, "field"
        if obj is not None and m.name in obj.fields:
            doc = obj.fields[m.name].doc
            if id(m) not in res.expr_types:  # an object literal's key: its field's type
                t = obj.fields[m.name].type
            declared = obj.fields[m.name].span
            if (  # `r.a` of `let r = parallel { a: … }`
                isinstance(declared, Span)
                and declared.file == a.module.file
                and locate.branch_under(a, declared.start) is not None
            ):
                what = "branch"
        return locate.with_doc(
            locate.fence(labelled(f"({what}) {m.name}", type_text(a, t))), doc
        ), m.name_span
    if kind == "expr":
        e = payload
        typed = res.expr_types.get(id(e))
        if typed is None:
            return None
        t = typed
        if isinstance(e, ast.LoopExpr) and e.keyword_span is not None:
            if e.keyword_span.start <= offset <= e.keyword_span.end:
                return loop_hover(a, e, t), e.keyword_span
        if isinstance(e, ast.MatchExpr) and e.keyword_span is not None:
            if e.keyword_span.start <= offset <= e.keyword_span.end:
                return match_hover(a, e, t), e.keyword_span
        if isinstance(e, ast.ParallelExpr) and e.keyword_span is not None:
            if e.keyword_span.start <= offset <= e.keyword_span.end:
                return parallel_hover(a, e, t), e.keyword_span
        if isinstance(e, ast.ParallelExpr):
            t = T.widen(t)  # what a `let` binds, and its branches' reads give
        doc = None
        if isinstance(t, T.NamedRef):
            doc = locate.type_doc(a, t.name)
        shown = type_text(a, t)
        if shown is None:  # a type the checker could not give (a syntax or type error)
            return None
        if len(shown) > HOVER_MAX_TYPE:  # e.g. the literal type of a huge string
            shown = shown[:HOVER_MAX_TYPE] + "…"
        return locate.with_doc(locate.fence(shown), doc), e.span
    return None


def function_hover(a: Analysis, offset: int) -> tuple[str, Span] | None:
    """The signature, summary and example of the library function whose name is under
    ``offset`` (docs/reference/functions.md), or None."""
    for node in reversed(locate.node_path(a, offset)):
        if isinstance(node, ast.FuncCall):
            s = node.name_span
            if s.start <= offset <= s.end:
                spec = FUNCTIONS[node.name]
                doc = f"{spec.summary}\n\ne.g. `{spec.example}` gives `{_json(spec.result)}`"
                here = a.result.expr_types.get(id(node))
                shown = type_text(a, here) if here is not None and spec.type_params else None
                if shown is not None:  # a generic one: its result here, instantiated
                    doc = f"here it gives `{shown}`\n\n{doc}"
                return locate.with_doc(locate.fence(f"(function) {spec.signature}"), doc), s
            return None
    return None


def sleep_hover(a: Analysis, offset: int) -> tuple[str, Span] | None:
    """The hover of a ``sleep`` keyword: what the statement waits and how, in each kind of
    run (docs/reference/statements.md "sleep"), or None."""
    for node in reversed(locate.node_path(a, offset)):
        if isinstance(node, ast.SleepStmt):
            s = node.span
            if not s.start <= offset <= s.start + len("sleep"):
                return None
            wait = a.text[node.duration.span.start : node.duration.span.end]
            doc = (
                f"Waits {wait} before the next statement (1ms to 8760h). A durable run records "
                "when it wakes: resumed, it sleeps only what is left. The deadline, `flowc "
                "cancel` and Ctrl-C end it; in `flowc test` it takes no time (`sleeps` lists it)."
            )
            here = Span(s.file, s.line, s.column, s.line, s.column + len("sleep"), s.start,
                        s.start + len("sleep"))  # fmt: skip
            return locate.with_doc(locate.fence(f"sleep {wait}"), doc), here
    return None


def _json(v: object) -> str:
    import json

    return json.dumps(v, ensure_ascii=False)


def loop_hover(a: Analysis, e: ast.LoopExpr, t: T.Type) -> str:
    """The hover of a ``loop`` keyword: its head with the state's type, what the round variable
    counts, and when it ends (docs/reference/control.md "loop")."""
    bound = a.text[e.over.span.start : e.over.span.end]
    head = labelled(f"loop up to {bound} as {e.var.name}, {e.acc.name}", type_text(a, t))
    lines = [
        f"At most {bound} rounds, one after the other; `{e.var.name}` is the round number "
        f"(1, 2, …), `{e.acc.name}` the state (each round's value is the next state)."
    ]
    if e.until is None:
        lines.append("Every round runs; the value is the last state.")
    elif e.else_fail is not None:
        lines.append(
            "Ends after the first round whose new state meets `until`; when none does, fails "
            "with `loop_exhausted` (catch it with `catch on [loop_exhausted]`)."
        )
    else:
        lines.append(
            "Ends after the first round whose new state meets `until`; when none does, the "
            "value is the `else` value."
        )
    return locate.fence(head) + "\n\n" + " ".join(lines)


def match_hover(a: Analysis, e: ast.MatchExpr, t: T.Type) -> str:
    """The hover of a ``match`` keyword: the subject with its type, the value's type, and how
    an arm is chosen (docs/reference/expressions.md "match")."""
    subject = a.text[e.subject.span.start : e.subject.span.end]
    st = a.result.expr_types.get(id(e.subject))
    subject_type = type_text(a, st) if st is not None else None
    typed = f": {subject_type}" if subject_type is not None else ""
    value_type = type_text(a, t)
    head = f"match {subject}{typed}" + (f" -> {value_type}" if value_type is not None else "")
    wild = any(arm.wildcard_span is not None for arm in e.arms)
    doc = (
        f"The first of its {len(e.arms)} arms whose pattern equals `{subject}` (as `==` "
        "compares) gives the value; only that arm is evaluated. "
        + (
            "`_` takes every value the arms before it do not."
            if wild
            else "Without `_`, the arms must cover every value of the subject's type."
        )
    )
    return locate.fence(head) + "\n\n" + doc


def branch_hover(a: Analysis, offset: int) -> tuple[str, Span] | None:
    """The hover of a ``parallel`` block's branch name: ``(branch) security: SecurityReview``."""
    b = locate.branch_under(a, offset)
    if b is None:
        return None
    t = a.result.expr_types.get(id(b.value))
    block = next(
        (
            n
            for n in reversed(locate.node_path(a, b.key_span.start))
            if isinstance(n, ast.ParallelExpr)
        ),
        None,
    )
    bt = a.result.expr_types.get(id(block)) if block is not None else None
    obj = locate.object_of(a, T.widen(bt)) if bt is not None else None
    if obj is not None and b.key in obj.fields:  # as the block's value gives it (widened)
        t = obj.fields[b.key].type
    shown = type_text(a, T.widen(t)) if t is not None else None
    stub = stubs.branch_stub_at(a, offset)  # `stub step r.a`: hovered at the stub's `a`
    at = stub.branch.span if stub is not None and stub.branch is not None else b.key_span
    return locate.fence(labelled(f"(branch) {b.key}", shown)), at


def parallel_hover(a: Analysis, e: ast.ParallelExpr, t: T.Type) -> str:
    """The hover of a ``parallel { … }`` block's keyword: its type, how many branches run at
    once and what a failure does (docs/reference/control.md "parallel blocks")."""
    names = ", ".join(f"`{b.key}`" for b in e.branches) or "none"
    if e.limit is not None:
        bound = a.text[e.limit.span.start : e.limit.span.end]
        at_once = f"at most {bound} at a time"
    else:
        at_once = "all at once"
    doc = (
        f"Runs its branches ({names}) side by side, {at_once}; the value has one field per "
        "branch. The first branch that fails stops the others and fails the block (`catch` "
        "inside a branch keeps its failure a value)."
    )
    return locate.fence(labelled("parallel", type_text(a, T.widen(t)))) + "\n\n" + doc


def symbol_doc(a: Analysis, sym: Symbol) -> str | None:
    """The doc of a value binding: a stage's or ``let``'s/``use``'s ``///``, or the input
    type's doc."""
    d = sym.decl
    if sym.kind == "stage" and isinstance(d, ast.StageDecl):
        return d.doc or locate.doc_before(a, d.span)
    if sym.kind in ("let", "use") and isinstance(d, ast.Node):
        return locate.doc_before(a, d.span)
    if sym.kind == "input":
        t = a.result.input_type
        if isinstance(t, T.NamedRef):
            return locate.type_doc(a, t.name)
    return None


def unused_binding(a: Analysis, decl: Any, ident: ast.Ident) -> str | None:
    """The hover of a loop's variable, round or state that nothing reads (the checker records
    the symbols of names read): its kind and type from the loop — a round is an ``int``, a
    state the loop's value, a variable an element of what the loop runs over."""
    res = a.result
    if isinstance(decl, ast.ReduceExpr) and ident is decl.acc and id(decl) in res.expr_types:
        return labelled(f"(acc) {ident.name}", type_text(a, res.type_of(decl)))
    if isinstance(decl, ast.LoopExpr) and ident is decl.var:
        return f"(loopvar) {ident.name}: int"
    if isinstance(decl, (ast.MapExpr, ast.FilterExpr, ast.ReduceExpr)) and ident is decl.var:
        if id(decl.over) not in res.expr_types:
            return None
        over = res.env.resolve(T.strip_optional(res.type_of(decl.over), res.env))
        elem = over.elem if isinstance(over, (T.ListType, T.RangeType)) else None
        return labelled(f"(loopvar) {ident.name}", None if elem is None else type_text(a, elem))
    return None


def let_symbol(a: Analysis, let: ast.LetStmt) -> Symbol | None:
    """The symbol the checker declared for ``let``, or None."""
    for sym in a.result.references.values():
        if sym.decl is let:
            return sym
    return None


def type_text(a: Analysis, t: T.Type) -> str | None:
    """``t`` as a hover shows it — in the names the program wrote: a union or inline object that
    is the type of one ``type N = …`` of the document (declared or imported, under the name it
    has here) is spelt ``N`` (:func:`~agentflow.compiler.type_names.spelt`) — or None when the checker could not type it (an error
    type anywhere in it: a hover never shows a placeholder)."""
    return None if _has_error(t) else type_names.spelt(a.result.env, t)


def labelled(label: str, written: str | None) -> str:
    """``label: written``, or the label alone when the type is not known."""
    return label if written is None else f"{label}: {written}"


def written_of(decl: object) -> str | None:
    """The type a declaration writes, as written (``Sev``, not the union it names): a
    parameter's, an annotated ``let``'s, a stage's declared result; None when it writes none."""
    if isinstance(decl, ast.Param):
        return written_type(decl.type)
    if isinstance(decl, ast.LetStmt) and decl.annotation is not None:
        return written_type(decl.annotation)
    if isinstance(decl, ast.StageDecl) and decl.returns is not None:
        return written_type(decl.returns)
    return None


def _has_error(t: T.Type) -> bool:
    if isinstance(t, T.ErrorType):
        return True
    if isinstance(t, (T.ListType, T.RangeType)):
        return _has_error(t.elem)
    if isinstance(t, T.OptionalType):
        return _has_error(t.inner)
    if isinstance(t, T.MapType):
        return _has_error(t.value)
    if isinstance(t, T.UnionType):
        return any(_has_error(m) for m in t.members)
    if isinstance(t, T.ObjectType) and t.name is None:
        return any(_has_error(f.type) for f in t.fields.values())
    return False
