"""Document symbols: the outline of a document (flow, types with their fields, extern tools,
uses, stages with their ``let`` statements, tests, evals with their scorers), in source order; and the ``test`` blocks the
"run test" code lenses point at."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentflow.compiler import type_names
from agentflow.compiler import types as T
from agentflow.core.spans import Span
from agentflow.grammar import ast
from agentflow.lsp import locate, user_functions

if TYPE_CHECKING:
    from agentflow.lsp.analysis import Analysis


@dataclass(slots=True)
class DocSymbol:
    """An outline entry: ``kind`` is ``flow``, ``type``, ``field``, ``tool``, ``agent``,
    ``team``, ``function``, ``stage``, ``let``, ``test``, ``eval`` or ``scorer``; ``span`` the whole item; ``name_span`` its name."""

    name: str
    kind: str
    span: Span
    name_span: Span
    detail: str | None = None
    children: list[DocSymbol] = field(default_factory=list)


def symbols(a: Analysis) -> list[DocSymbol]:
    """The document outline in source order."""
    out: list[DocSymbol] = []
    res = a.result
    for item in a.module.items:
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
                            _written(a.text, f.type),
                        )
                    )
            else:
                ds.detail = "= " + _written(a.text, item.alias) if item.alias else None
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
                    locate.sig_str(sig, res.env) if sig else None,
                )
            )
        elif isinstance(item, ast.FnDecl):
            out.append(
                DocSymbol(
                    item.name.name,
                    "function",
                    item.span,
                    item.name.span,
                    user_functions.outline_detail(a, item),
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
                type_names.spelt(res.env, st) if st else None,
            )
            for s in item.body.stmts:
                if isinstance(s, ast.LetStmt):
                    ds.children.append(
                        DocSymbol(
                            s.name.name,
                            "let",
                            s.span,
                            s.name.span,
                            type_names.spelt(res.env, T.widen(res.type_of(s.value))),
                        )
                    )
            out.append(ds)
        elif isinstance(item, ast.TestDecl):
            out.append(DocSymbol(item.name, "test", item.span, item.name_span, "test"))
        elif isinstance(item, ast.EvalDecl):
            ds = DocSymbol(item.name, "eval", item.span, item.name_span, "eval")
            checked = next((e for e in res.evals if e.node is item), None)
            for scorer in item.scorers:
                name = scorer.name.name
                kind = checked.kinds.get(name) if checked is not None else None
                threshold = checked.thresholds.get(name) if checked is not None else None
                detail = kind or scorer.kind
                if kind in ("number", "judge") and threshold is not None:
                    detail += f" ≥ {threshold:g}"
                ds.children.append(DocSymbol(name, "scorer", scorer.span, scorer.name.span, detail))
            out.append(ds)
    return out


def tests(a: Analysis) -> list[tuple[str, Span]]:
    """``(name, span of the name)`` of every ``test`` block, in source order (the "run
    test" code lenses)."""
    return [(t.name, t.name_span) for t in a.module.of(ast.TestDecl)]


def _written(text: str, node: ast.Node | None) -> str:
    if node is None:
        return ""
    return text[node.span.start : node.span.end]
