"""A plan's graph drawn as SVG in Python: the run report's and ``flowc ui``'s picture of a flow
(docs/observability.md "The report"; docs/reference/ui.md).

No JavaScript and no layout library: :func:`layout` places the nodes of a
:class:`~agentflow.ir.graph.Graph` in layers, top to bottom, and :func:`to_svg` draws them.

- **Layers.** A node's layer is one below the lowest of the nodes it depends on (its incoming
  data, order, body, branch, call and tool edges from nodes drawn before it; a loop's back edge
  does not count), and a node that starts a new stage is below every node of the stages before
  it: stages read top to bottom in the order the `.flow` wrote them, while independent steps of
  one stage sit side by side.
- **Order in a layer.** The order of the graph's nodes (the plan's step order, bodies after the
  step that holds them), so a group's members stay together.
- **Sizes.** Each node's label (its title and detail lines) is wrapped at
  :data:`WRAP` characters; the box is as wide as its longest line at an estimated character
  width. Groups (stages, bodies, sub-plans) are dashed frames around their members.
- **Colours.** With ``outcomes`` (``{node id: status-bearing object}``: the
  :class:`~agentflow.ir.graph.NodeOutcome` of a trace, or a durable run's step states) a step's
  box is filled by its status: ``ok``, ``error``, ``partial``, ``running``, ``waiting``,
  ``skipped`` (never ran) or ``unrecorded`` (a durable run records no operation of it), with the status also written in its label, so colour is never the
  only carrier of the state (WCAG 1.4.1).

:func:`text_alternative` is the same graph as an HTML ordered list (each node, its group, its
status, what it follows), the graph's text alternative (WCAG 1.1.1).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentflow.core.text import html_text
from agentflow.ir.graph import Graph, GraphNode

__all__ = ["Box", "Layout", "layout", "node_status_line", "text_alternative", "to_svg"]

#: characters of a label line before it wraps
WRAP = 34
#: estimated width of one character at the label's font size (px)
CHAR_W = 7.0
LINE_H = 15
PAD_X = 10
PAD_Y = 8
GAP_X = 24
GAP_Y = 40
GROUP_PAD = 10
GROUP_LABEL_H = 16
MARGIN = 16
#: the edge kinds that place a node below its source (the loop's back edge does not)
_FORWARD = frozenset({"data", "order", "body", "branch", "call"})

#: fill, stroke, word of each status (text stays #1b1b1b on every fill: contrast ≥ 12:1)
STATUS_STYLE: dict[str, tuple[str, str, str]] = {
    "ok": ("#dcf3dc", "#2e7d32", "ok"),
    "error": ("#fbdada", "#b71c1c", "failed"),
    "partial": ("#fde9c8", "#b34700", "partly failed"),
    "running": ("#dbe9fb", "#1565c0", "running"),
    "waiting": ("#fff4c2", "#8a6d00", "waiting for an answer"),
    "skipped": ("#f1f1f1", "#757575", "not run"),
    "unrecorded": ("#ffffff", "#5f6b73", "nothing recorded"),
}
_KIND_STYLE = {
    "tool": ("#f3f0ff", "#6a45b5"),
    "input": ("#e3f2fd", "#1565c0"),
    "finish": ("#e3f2fd", "#1565c0"),
}


@dataclass
class Box:
    """A placed node: ``x``/``y`` of its top-left corner, ``w``/``h`` (px), its wrapped label
    ``lines`` (the first is the title), its ``layer``."""

    node: GraphNode
    x: float
    y: float
    w: float
    h: float
    lines: list[str]
    layer: int


@dataclass
class Layout:
    """Where everything goes: ``boxes`` by node id, ``frames`` (group id → ``(x, y, w, h)``),
    the drawing's ``width``/``height`` (px)."""

    boxes: dict[str, Box] = field(default_factory=dict)
    frames: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    width: float = 0.0
    height: float = 0.0


def node_status_line(outcome: Any) -> str | None:
    """One line saying what a run did at a node (``ok · 0.19 s · 2 inferences · $0.0012``),
    from an object with ``status`` and optionally ``runs``, ``failed``, ``running``,
    ``replayed``, ``elapsed_ms``, ``inferences``, ``cost`` attributes; None without an outcome."""
    if outcome is None:
        return None
    status = str(getattr(outcome, "status", "skipped"))
    bits = [STATUS_STYLE.get(status, STATUS_STYLE["skipped"])[2]]
    runs = int(getattr(outcome, "runs", 0) or 0)
    failed = int(getattr(outcome, "failed", 0) or 0)
    running = int(getattr(outcome, "running", 0) or 0)
    if running and runs:
        bits.append(f"{runs - failed}/{runs} done ok, {running} in flight")
    elif runs > 1:
        bits.append(f"{runs - failed}/{runs} ok")
    replayed = int(getattr(outcome, "replayed", 0) or 0)
    if replayed:
        bits.append(f"{replayed} from the record")
    elapsed = getattr(outcome, "elapsed_ms", 0) or 0
    if elapsed:
        bits.append(f"{elapsed / 1000:.2f} s")
    inferences = int(getattr(outcome, "inferences", 0) or 0)
    if inferences:
        bits.append(f"{inferences} inference{'s' if inferences != 1 else ''}")
    cost = getattr(outcome, "cost", None)
    if isinstance(cost, int | float):
        bits.append(f"${cost:.4f}")
    return " · ".join(bits)


def _is_step(node: GraphNode) -> bool:
    return bool(node.path) and node.kind not in ("input", "finish", "tool")


def _label(node: GraphNode, outcomes: Mapping[str, Any] | None) -> list[str]:
    lines: list[str] = []
    for i, text in enumerate([node.title, *node.details]):
        wrapped = textwrap.wrap(text, WRAP, break_long_words=True) or [""]
        lines += wrapped if i == 0 else [wrapped[0]] + wrapped[1:3]
    if outcomes is not None and _is_step(node):
        line = node_status_line(outcomes.get(node.id) or _Skipped())
        if line:
            lines += textwrap.wrap(line, WRAP) or [line]
    return lines


class _Skipped:
    status = "skipped"


def _top_group(graph: Graph) -> dict[str, str | None]:
    """Each node's outermost group (its stage, usually), or None."""
    parent = {g.id: g.parent for g in graph.groups}
    out: dict[str, str | None] = {}
    for g in graph.groups:
        top = g.id
        while parent.get(top):
            top = parent[top] or top
        for m in g.members:
            out.setdefault(m, top)
    return out


def layout(graph: Graph, outcomes: Mapping[str, Any] | None = None) -> Layout:
    """Place ``graph``'s nodes in layers top to bottom (see the module docstring)."""
    order = {n.id: i for i, n in enumerate(graph.nodes)}
    incoming: dict[str, list[str]] = {}
    for e in graph.edges:
        if e.kind in _FORWARD and e.src in order and e.dst in order:
            if order[e.src] < order[e.dst]:
                incoming.setdefault(e.dst, []).append(e.src)
    top = _top_group(graph)
    layer: dict[str, int] = {}
    floor = 0  # the first layer a new stage may use
    deepest = -1
    current: str | None = None
    for n in graph.nodes:
        group = top.get(n.id)
        if group is not None and group != current:  # a new stage (or sub-plan) starts below
            floor = deepest + 1
            current = group
        preds = [layer[p] for p in incoming.get(n.id, []) if p in layer]
        rank = max([p + 1 for p in preds] + [floor if group is not None else 0])
        if n.kind == "finish":  # a plan's output closes it
            rank = max(rank, deepest + 1)
        layer[n.id] = rank
        deepest = max(deepest, rank)
    out = Layout()
    rows: dict[int, list[GraphNode]] = {}
    for n in graph.nodes:
        if n.kind != "tool":  # tools go in a column of their own, on the right
            rows.setdefault(layer[n.id], []).append(n)
    y = float(MARGIN + GROUP_LABEL_H + GROUP_PAD)
    sized: dict[str, tuple[float, float, list[str]]] = {}
    for n in graph.nodes:
        lines = _label(n, outcomes)
        w = max(len(s) for s in lines) * CHAR_W + 2 * PAD_X
        h = float(len(lines) * LINE_H + 2 * PAD_Y)
        sized[n.id] = (max(w, 80.0), h, lines)
    widths = {r: sum(sized[n.id][0] for n in ns) + GAP_X * (len(ns) - 1) for r, ns in rows.items()}
    width = max(widths.values(), default=200.0) + 2 * (MARGIN + GROUP_PAD * 3)
    for r in sorted(rows):
        ns = rows[r]
        x = (width - widths[r]) / 2
        tallest = max(sized[n.id][1] for n in ns)
        for n in ns:
            w, h, lines = sized[n.id]
            out.boxes[n.id] = Box(n, x, y, w, h, lines, r)
            x += w + GAP_X
        y += tallest + GAP_Y
    # frames: deepest groups first, each around its members and its child groups' frames
    children: dict[str, list[str]] = {}
    for g in graph.groups:
        if g.parent:
            children.setdefault(g.parent, []).append(g.id)

    def frame(gid: str, depth: int) -> tuple[float, float, float, float] | None:
        g = next(x for x in graph.groups if x.id == gid)
        rects = [(b.x, b.y, b.x + b.w, b.y + b.h) for m in g.members if (b := out.boxes.get(m))]
        for child in children.get(gid, []):
            f = frame(child, depth + 1)
            if f is not None:
                rects.append((f[0], f[1], f[0] + f[2], f[1] + f[3]))
        if not rects:
            return None
        x0 = min(r[0] for r in rects) - GROUP_PAD
        y0 = min(r[1] for r in rects) - GROUP_PAD - GROUP_LABEL_H
        x1 = max(r[2] for r in rects) + GROUP_PAD
        y1 = max(r[3] for r in rects) + GROUP_PAD
        out.frames[gid] = (x0, y0, x1 - x0, y1 - y0)
        return out.frames[gid]

    for g in graph.groups:
        if g.parent is None:
            frame(g.id, 0)
    right = max(
        [b.x + b.w for b in out.boxes.values()] + [f[0] + f[2] for f in out.frames.values()],
        default=float(MARGIN),
    )
    # the tools' column: each tool level with the first agent that may call it, never
    # overlapping the tool above it
    users: dict[str, str] = {}
    for e in graph.edges:
        if e.kind == "tool":
            users.setdefault(e.dst, e.src)
    next_y = float(MARGIN)
    for n in graph.nodes:
        if n.kind != "tool":
            continue
        w, h, lines = sized[n.id]
        user = out.boxes.get(users.get(n.id, ""))
        ty = max(next_y, user.y if user is not None else next_y)
        out.boxes[n.id] = Box(n, right + GAP_X * 2, ty, w, h, lines, layer[n.id])
        next_y = ty + h + 8
        y = max(y, ty + h + GAP_Y)
    right = max([b.x + b.w for b in out.boxes.values()], default=right)
    left = min([b.x for b in out.boxes.values()] + [f[0] for f in out.frames.values()] + [MARGIN])
    shift = MARGIN - left if left < MARGIN else 0.0
    if shift:
        for b in out.boxes.values():
            b.x += shift
        out.frames = {k: (f[0] + shift, f[1], f[2], f[3]) for k, f in out.frames.items()}
    out.width = max(width, right + shift + MARGIN)
    out.height = y - GAP_Y + MARGIN + GROUP_PAD
    return out


def _e(value: Any) -> str:
    """``value`` as text fit for the page's content or a double-quoted attribute value
    (:func:`agentflow.core.text.html_text`)."""
    return html_text(value)


def _fill(node: GraphNode, outcomes: Mapping[str, Any] | None) -> tuple[str, str, str]:
    """``(fill, stroke, status)`` of a node's box."""
    if outcomes is not None and _is_step(node):
        o = outcomes.get(node.id)
        status = str(getattr(o, "status", "skipped")) if o is not None else "skipped"
        fill, stroke, _ = STATUS_STYLE.get(status, STATUS_STYLE["skipped"])
        return fill, stroke, status
    fill, stroke = _KIND_STYLE.get(node.kind, ("#ffffff", "#5f6b73"))
    return fill, stroke, ""


def _edge_path(a: Box, b: Box, kind: str, width: float) -> tuple[str, float, float]:
    """The SVG path of an edge from box ``a`` to box ``b`` and where its label goes."""
    if kind == "tool":  # an agent and a tool it may call, in the tools' column
        x1, y1 = a.x + a.w, a.y + min(a.h / 2, 14)
        x2, y2 = b.x, b.y + b.h / 2
        mx = (x1 + x2) / 2
        d = f"M{x1:.1f},{y1:.1f} C{mx:.1f},{y1:.1f} {mx:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
        return d, mx, (y1 + y2) / 2
    if b.layer > a.layer:  # downwards: bottom centre to top centre
        x1, y1 = a.x + a.w / 2, a.y + a.h
        x2, y2 = b.x + b.w / 2, b.y
        my = (y1 + y2) / 2
        d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{my:.1f} {x2:.1f},{my:.1f} {x2:.1f},{y2:.1f}"
        return d, (x1 + x2) / 2, my
    if b.layer == a.layer:  # beside: right edge to left edge (or back)
        if b.x > a.x:
            x1, x2 = a.x + a.w, b.x
        else:
            x1, x2 = a.x, b.x + b.w
        y1, y2 = a.y + a.h / 2, b.y + b.h / 2
        return f"M{x1:.1f},{y1:.1f} L{x2:.1f},{y2:.1f}", (x1 + x2) / 2, (y1 + y2) / 2 - 4
    # upwards (a loop's next round): out of the right side, round the outside, into the right
    x1, y1 = a.x + a.w, a.y + a.h / 2
    x2, y2 = b.x + b.w, b.y + b.h / 2
    bend = max(x1, x2) + 40
    d = f"M{x1:.1f},{y1:.1f} C{bend:.1f},{y1:.1f} {bend:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
    return d, bend - 10, (y1 + y2) / 2


_EDGE_STYLE = {
    "data": "",
    "order": ' stroke-dasharray="5 4"',
    "body": ' stroke-width="2.2"',
    "branch": "",
    "loop": ' stroke-dasharray="5 4"',
    "tool": ' stroke-dasharray="2 3"',
    "call": ' stroke-dasharray="5 4"',
}


def to_svg(
    graph: Graph,
    outcomes: Mapping[str, Any] | None = None,
    *,
    title: str | None = None,
    described_by: str | None = None,
) -> str:
    """``graph`` as one inline ``<svg>`` element (no script, no external reference; scales to
    its container's width up to its natural size). ``outcomes``: ``{node id: object with a
    status}`` colouring the step boxes (see the module docstring); ``title``: the image's
    accessible name; ``described_by``: the id of the element holding its text alternative."""
    lay = layout(graph, outcomes)
    w, h = lay.width, lay.height
    name = title or f"graph of {graph.name}"
    aria = f' aria-describedby="{_e(described_by)}"' if described_by else ""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="flow-graph" role="img" '
        f'viewBox="0 0 {w:.0f} {h:.0f}" width="{w:.0f}" height="{h:.0f}" '
        f'aria-labelledby="graph-svg-title"{aria} data-graph="{_e(graph.name)}" '
        'font-family="-apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12" '
        'fill="#1b1b1b">',
        f'<title id="graph-svg-title">{_e(name)}</title>',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        'markerHeight="8" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#5f6b73"/></marker></defs>',
        '<g class="frames">',
    ]
    labels = {g.id: g.label for g in graph.groups}
    kinds = {g.id: g.kind for g in graph.groups}
    for gid, (x, y, fw, fh) in sorted(lay.frames.items(), key=lambda kv: -kv[1][2] * kv[1][3]):
        out.append(
            f'<g class="frame {_e(kinds.get(gid, ""))}" data-group="{_e(gid)}">'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{fw:.1f}" height="{fh:.1f}" rx="6" '
            f'fill="none" stroke="#8a959c" stroke-dasharray="6 4"/>'
            f'<text x="{x + 8:.1f}" y="{y + 13:.1f}" class="frame-label" fill="#454f55" '
            'font-size="11">'
            f"{_e(labels.get(gid, ''))}</text></g>"
        )
    out.append('</g><g class="edges">')
    for e in graph.edges:
        a, b = lay.boxes.get(e.src), lay.boxes.get(e.dst)
        if a is None or b is None:
            continue
        d, lx, ly = _edge_path(a, b, e.kind, w)
        head = "" if e.kind == "tool" else ' marker-end="url(#arrow)"'
        out.append(
            f'<path d="{d}" class="edge {_e(e.kind)}" fill="none" stroke="#5f6b73"'
            f"{_EDGE_STYLE.get(e.kind, '')}{head}/>"
        )
        if e.label:
            out.append(
                f'<text x="{lx + 6:.1f}" y="{ly:.1f}" class="edge-label" font-size="11" '
                'stroke="#ffffff" stroke-width="3" paint-order="stroke">'
                f"{_e(e.label)}</text>"
            )
    out.append('</g><g class="nodes">')
    for n in graph.nodes:
        box = lay.boxes[n.id]
        fill, stroke, status = _fill(n, outcomes)
        rx = 14 if n.kind in ("input", "finish", "ask") else 4
        shape = (
            f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" '
            f'rx="{rx}" fill="{fill}" stroke="{stroke}" stroke-width="{2 if status else 1.2}"/>'
        )
        texts = []
        for i, line in enumerate(box.lines):
            cls = ' class="node-title" font-weight="600"' if i == 0 else ""
            texts.append(
                f'<tspan x="{box.x + PAD_X:.1f}" y="{box.y + PAD_Y + 11 + i * LINE_H:.1f}"{cls}>'
                f"{_e(line)}</tspan>"
            )
        state = f' data-status="{_e(status)}"' if status else ""
        src = f' data-source="{_e(n.source)}"' if n.source else ""
        out.append(
            f'<g class="node {_e(n.kind)}" data-node="{_e(n.id)}" data-path="{_e(n.path)}"'
            f"{state}{src}>{shape}<text>{''.join(texts)}</text></g>"
        )
    out.append("</g></svg>")
    return "".join(out)


def text_alternative(graph: Graph, outcomes: Mapping[str, Any] | None = None) -> str:
    """The graph as an HTML ordered list, the SVG's text alternative: each node's label (title
    and details), the group it is in, its status (with ``outcomes``) and the nodes it follows
    (``after``, with the edge's label)."""
    names = {n.id: n.title for n in graph.nodes}
    group_of: dict[str, str] = {}
    for g in graph.groups:
        for m in g.members:
            group_of.setdefault(m, g.label)
    after: dict[str, list[str]] = {}
    for e in graph.edges:
        if e.kind == "tool":
            continue
        what = names.get(e.src, e.src) + (f" ({e.label})" if e.label else "")
        after.setdefault(e.dst, []).append(what)
    tools: dict[str, list[str]] = {}
    for e in graph.edges:
        if e.kind == "tool":
            tools.setdefault(e.src, []).append(names.get(e.dst, e.dst))
    items = []
    for n in graph.nodes:
        if n.kind == "tool":
            continue
        bits = [f"<b>{_e(n.title)}</b>"]
        if n.details:
            bits.append(_e("; ".join(n.details)))
        if n.id in group_of:
            bits.append(f"in {_e(group_of[n.id])}")
        if outcomes is not None and _is_step(n):
            bits.append(_e(node_status_line(outcomes.get(n.id) or _Skipped()) or ""))
        if after.get(n.id):
            bits.append("after " + _e(", ".join(after[n.id])))
        if tools.get(n.id):
            bits.append("may call " + _e(", ".join(tools[n.id])))
        items.append(f'<li data-node="{_e(n.id)}">{" — ".join(bits)}</li>')
    return f'<ol class="graph-text">{"".join(items)}</ol>'
