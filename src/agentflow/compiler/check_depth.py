"""The depth of compiled expressions, checked: a program that checks clean compiles.

A plan's templates and conditions may be at most ``vocabulary.MAX_EXPR_DEPTH`` levels deep once
parsed (docs/spec/PLAN_IR.md; each link of a member or operator chain is a level). How deep an
expression is once compiled depends on the lowering: a `let` is written out where it is read
while it is small, a chain of more than 150 operators gets a `value` step for its left part, a
field read through a `T?` value gets a default. So this phase does not estimate: after a check
without errors, when some expression nests deeply enough to matter (``checker._SHALLOW``),
it lowers the program and measures the
templates and conditions of the plan it would produce, the way the plan loader does
(:func:`agentflow.grammar.ast.too_deep`). Each one too deep is the ``unsupported-construct``
diagnostic that ``flowc compile`` gave for it (:func:`too_deep_diagnostic`), placed at the
`.flow` position of the step that holds it (its ``meta.source``). A construct the lowering
refuses (:class:`~agentflow.errors.LoweringError`) is reported here too, as ``compile`` reports it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentflow.compiler.lowering import lower
from agentflow.core.diagnostics import Diagnostic
from agentflow.core.spans import Span
from agentflow.core.vocabulary import MAX_EXPR_DEPTH, PLAN_SCHEMA_KEYS
from agentflow.errors import LoweringError, SourceError
from agentflow.grammar.ast import too_deep

if TYPE_CHECKING:
    from agentflow.compiler.checker import CheckResult

__all__ = ["compiled_depth_diagnostics", "too_deep_diagnostic"]

#: A template shorter than this cannot be ``MAX_EXPR_DEPTH`` levels deep (every level of the
#: parsed tree takes at least one character of text, most take two or more), so it is not parsed.
_SHORTEST_DEEP = MAX_EXPR_DEPTH // 2

#: Keys whose values are conditions (their ``expr`` is an expression, not a template).
_CONDITION_KEYS = ("when", "not", "all", "any")


def too_deep_diagnostic(span: Span) -> Diagnostic:
    """The ``unsupported-construct`` diagnostic for an expression whose compiled template is
    deeper than the plan limit, at ``span`` (the `.flow` position of the step holding it)."""
    return Diagnostic(
        "unsupported-construct",
        f"expression nested too deeply once compiled (more than {MAX_EXPR_DEPTH} levels; "
        "each link of a member or operator chain is a level, and a `let` read in it counts "
        "with its own expression)",
        span,
        hint="shorten the chain, or split the work over several stages",
    )


def compiled_depth_diagnostics(result: CheckResult) -> list[Diagnostic]:
    """The diagnostics ``compile`` would give ``result`` (a check without errors) beyond the
    check's own: a construct the lowering refuses, or each step holding a template or condition
    deeper than ``MAX_EXPR_DEPTH`` levels once compiled (one diagnostic per step). Spans name
    the module's file. Never raises: a lowering that fails otherwise (a compiler bug) is left
    for ``compile`` to report."""
    file = result.module.file
    try:
        plan = lower(result, file=file)
    except LoweringError as e:
        return [Diagnostic("unsupported-construct", e.message, e.span)]
    except Exception:  # noqa: BLE001 - a compiler bug: `compile` reports it, `check` must not crash
        return []
    out: list[Diagnostic] = []
    seen: set[tuple[int, int]] = set()
    for step, text, template in _texts(plan, None, False):
        if len(text) < _SHORTEST_DEEP:
            continue
        # the parser (lark and its tables, ~70 ms) loads on first use, not when `flowc` starts
        # (agentflow.api imports this module)
        from agentflow.grammar.parser import parse_expression, parse_template

        try:
            node = parse_template(text, file) if template else parse_expression(text, file)
        except SourceError as e:
            # brackets nested past the scanner's limit (a rewrite such as durations' adds
            # brackets): the same limit of the program as a tree too deep; anything else is not
            # this phase's business (the plan loader reports it)
            if "nested too deeply" not in e.message:
                continue
        else:
            if too_deep(node) is None:
                continue
        span = _step_span(step, file)
        if (span.line, span.column) not in seen:
            seen.add((span.line, span.column))
            out.append(too_deep_diagnostic(span))
    return out


def _texts(
    value: Any, step: dict[str, Any] | None, condition: bool
) -> Iterator[tuple[dict[str, Any] | None, str, bool]]:
    """``(innermost step, text, is_template)`` for every template (a string holding ``{{``)
    and condition ``expr`` in a lowered plan value, schemas left out (as the plan loader
    compiles them, ``ir.templates.compile_value``)."""
    if isinstance(value, str):
        if "{{" in value:
            yield step, value, True
    elif isinstance(value, dict):
        if "tool_name" in value and isinstance(value.get("meta"), dict):
            step = value
        for k, v in value.items():
            if k in PLAN_SCHEMA_KEYS:
                continue
            if condition and k == "expr" and isinstance(v, str):
                yield step, v, False
            else:
                yield from _texts(v, step, k in _CONDITION_KEYS or (condition and k == "not"))
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v, step, condition)


def _step_span(step: dict[str, Any] | None, file: str) -> Span:
    """The `.flow` position of ``step`` (its ``meta.source``, ``name.flow:line:column``) in
    ``file``; line 1, column 1 when it has none."""
    line = column = 1
    meta = step.get("meta") if step is not None else None
    loc = Span.parse(meta.get("source")) if isinstance(meta, dict) else None
    if loc is not None:
        line, column = loc.line, loc.column
    return Span(file, line, column, line, column + 1)
