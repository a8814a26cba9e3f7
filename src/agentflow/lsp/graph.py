"""The ``agentflow.graph`` command of the language server: the graph of an open `.flow`
document, what ``flowc graph`` prints (Mermaid or DOT)."""

from __future__ import annotations

from typing import Any

from agentflow.compiler.api import check_source
from agentflow.compiler.lowering import LoweringError, lower
from agentflow.errors import PlanLoadError
from agentflow.ir.graph import render
from agentflow.ir.loader import load_plan_data


def _graph_args(args: tuple[Any, ...]) -> tuple[Any, str]:
    """``(uri, format)`` from ``agentflow.graph``'s arguments (pygls passes the JSON array either
    spread or as one list)."""
    if len(args) == 1 and isinstance(args[0], list):
        args = tuple(args[0])
    uri = args[0] if args else None
    opts = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
    return uri, str(opts.get("format", "mermaid"))


#: ``workspace/executeCommand`` name: ``arguments: [uri, {"format": "mermaid" | "dot"}?]``
GRAPH_COMMAND = "agentflow.graph"


def graph_of(text: str, file: str, fmt: str = "mermaid") -> dict[str, Any]:
    """``{format, text}``: the graph of `.flow` source ``text`` (compiled in memory), or
    ``{error}`` when it has errors or the format is unknown (``flowc graph``'s output)."""
    if fmt not in ("mermaid", "dot"):
        return {"error": f"unknown graph format {fmt!r} (mermaid, dot)"}
    result = check_source(text, file)
    if not result.ok:
        first = result.errors[0]
        return {"error": f"the program has errors: {first.span}: {first.message}"}
    try:
        plan = load_plan_data(lower(result, file=file), file)
    except LoweringError as e:
        return {"error": f"cannot compile: {e.message}"}
    except PlanLoadError as e:
        return {"error": f"cannot compile: {e}"}
    return {"format": fmt, "text": render(plan, fmt)}
