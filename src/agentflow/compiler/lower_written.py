"""The source text a compiled expression was written as, kept in the plan where lowering inlines
names: ``meta.text`` of a ``value`` step or of ``finish`` whose expression reads a stage or an
inlined ``let`` (the plan holds ``if input.n * 2 > 10 …``; the user wrote ``if pick > 10 …``),
and ``meta.stages`` — ``{name, source, text}`` of each stage whose value was inlined into the
step's templates (a stage with no step of its own).  The graph titles nodes with them and draws a
node for such a stage (docs/reference/graph.md "Pure stages"); the executor places a failing
sub-expression in ``meta.text`` (runtime/where.py)."""

from __future__ import annotations

from typing import Any

from agentflow.grammar import ast

__all__ = [
    "LetValue",
    "StageMark",
    "place_stages",
    "place_values",
    "span_text",
    "step_texts",
    "value_expr",
    "value_stmt",
]

#: the longest ``meta.text`` kept (longer expressions are not worth a label)
MAX_TEXT = 2000

#: a stage whose value was inlined: (its name, `file:line:col` of its value, the value's
#: template text as the plan holds it, the value as written)
StageMark = tuple[str, str, str, str]
#: an inlined `let` the graph draws: (its stage, its name, `file:line:col` of its value, the
#: value's template text as the plan holds it, the value as written, whether it can fail — a
#: step's ``meta.lets`` has it then, and its ``meta.values`` does not repeat it)
LetValue = tuple[str | None, str, str, str, str, bool]


def span_text(source: str | None, node: ast.Node, file: str) -> str | None:
    """The text ``node`` was written as in ``source`` (the file ``file`` was parsed from), or None
    when there is no source, the node comes from another file (an import), its span does not
    fit or the text is over :data:`MAX_TEXT` characters."""
    span = node.span
    if source is None or span.file != file or not 0 <= span.start < span.end <= len(source):
        return None
    text = source[span.start : span.end]
    return text if len(text) <= MAX_TEXT else None


def value_stmt(stmts: list[ast.Stmt]) -> ast.ReturnStmt | ast.ExprStmt | None:
    """The statement that gives a block of ``stmts`` its value: its first top-level ``return``,
    else its last expression statement (before a ``fail``); None for neither."""
    found: ast.ExprStmt | None = None
    for st in stmts:
        if isinstance(st, ast.ReturnStmt):
            return st
        if isinstance(st, ast.ExprStmt):
            found = st
        elif isinstance(st, ast.FailStmt):
            break
    return found


def value_expr(stmts: list[ast.Stmt]) -> ast.Expr | None:
    """The expression a block's value is (:func:`value_stmt`'s, as ``value_span`` finds its
    place); None for none."""
    st = value_stmt(stmts)
    if st is None:
        return None
    return st.value if isinstance(st, ast.ReturnStmt) else st.expr


def place_stages(
    data: dict[str, Any], marks: list[StageMark], reads: set[tuple[str | None, str]]
) -> None:
    """Record, in the ``meta.stages`` of each step (and ``finish``) of every plan in ``data``
    whose stage read an inlined stage by name (``reads``: (reading stage, stage read)) and whose
    templates hold that stage's printed value, ``{name, source, text}`` of that stage (as
    ``_place_lets`` does for lets)."""
    if not marks:
        return

    for meta, own in step_texts(data):
        found = [
            {"name": name, "source": source, "text": written}
            for name, source, printed, written in marks
            if (meta.get("stage"), name) in reads and any(printed in t for t in own)
        ]
        if found:
            meta["stages"] = found


def place_values(data: dict[str, Any], lets: list[LetValue], stage_marks: list[StageMark]) -> None:
    """Record, in the ``meta.values`` of each step (and ``finish``) of every plan in ``data``
    whose templates hold the printed value of an inlined ``let`` of its stage that cannot fail
    (one that can is in its ``meta.lets`` already), ``{name, source, text}`` of that let
    (``text`` as written); and in each ``meta.stages`` entry (a pure stage,
    :func:`place_stages`), all its such ``lets`` — the graph draws each as a computed value
    (docs/observability.md "Values as written, and pure stages")."""
    if not lets:
        return
    printed_stage = {name: printed for name, _, printed, _ in stage_marks}

    def entries(stage: Any, texts: list[str], failing: bool) -> list[dict[str, str]]:
        return [
            {"name": name, "source": source, "text": written}
            for st, name, source, printed, written, fails in lets
            if st == stage and (failing or not fails) and any(printed in t for t in texts)
        ]

    for meta, own in step_texts(data):
        found = entries(meta.get("stage"), own, False)
        if found:
            meta["values"] = found
        for entry in meta.get("stages") or []:
            held = printed_stage.get(entry.get("name"))
            inner = entries(entry.get("name"), [held], True) if held else []
            if inner:
                entry["lets"] = inner


def step_texts(data: dict[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    """``(meta, texts)`` of every step with a ``meta`` (the steps of inline bodies included, each
    on its own) and every ``finish`` of every plan in ``data``: the templates of its ``input``,
    its ``select`` and ``output`` — where an inlined `let` or stage is found by its printed text
    (``place_stages``, the lowering's ``_place_lets``)."""
    out: list[tuple[dict[str, Any], list[str]]] = []

    def texts(value: Any, own: list[str]) -> None:
        if isinstance(value, str):
            own.append(value)
        elif isinstance(value, dict):
            if "tool_name" in value:  # a body step: placed on its own
                visit(value)
                return
            for v in value.values():
                texts(v, own)
        elif isinstance(value, list):
            for v in value:
                texts(v, own)

    def visit(step: dict[str, Any]) -> None:
        meta = step.get("meta")
        if not isinstance(meta, dict):
            return
        own: list[str] = []
        texts(step.get("input"), own)
        for key in ("select", "output"):
            if isinstance(step.get(key), str):
                own.append(step[key])
        out.append((meta, own))

    for plan in [data, *data.get("plans", {}).values()]:
        for step in plan.get("steps", []):
            visit(step)
        finish = plan.get("finish")
        if isinstance(finish, dict):
            visit(finish)
    return out
