"""The graph of a plan: stages, steps and their data dependencies, as Mermaid or Graphviz DOT
(docs/observability.md; ``flowc graph``, :func:`agentflow.graph`, the LSP's
``agentflow.graph`` command, the run report).

:func:`build_graph` reads a loaded :class:`~agentflow.ir.models.Plan` (a compiled `.flow` or a
plan file) into a :class:`Graph`:

- one node per step, grouped by `.flow` stage (``meta.stage``) in the order the stages run,
  labelled by what the step is — in a plan compiled from a `.flow`, as the `.flow` writes it
  (``parallel map tickets as t``, ``agent(triager)``, ``loop up to 4``, ``ok = ask "…"``: its
  aliases, ``let`` names and variables, never a step id, ``item``/``accumulator`` or a
  ``{{ … }}`` template; :mod:`agentflow.ir.names`), in a hand-written plan prefixed with the
  step's id (``E2: map over E0``):
  an agent (alias or team member, ``expect`` contract type, tools, round budget), a tool call,
  a ``map``/``reduce`` (what it iterates, its concurrency ``limit``) with its body inside, a
  ``loop`` (its bound, ``until``, ``else``) with its body inside and a back edge from the body
  labelled with the bound (``next round, ≤ 4``), an
  ``if``/``decide`` with its ``then``/``else`` branches, ``filter``, ``parallel`` branches,
  ``ask`` (question, choices), ``verify`` checks and judges, ``require``/``fail`` (an ``exit``),
  ``value`` and ``plan__*`` calls;
- the plan's input and its ``finish``;
- solid edges for data dependencies (a step's templates name an earlier step), dotted ones for
  plain sequence (a step that reads nothing before it still runs after the previous one), and
  dotted edges from agents to the tools they may call;
- sub-plans (``plans:``) as their own groups, with a dotted edge from the step that calls
  them; a body flowc outlined is named by the construct it came from (``map body of stage
  report``) and drawn inside the group of the step that calls it (a loop's body inside its
  ``each round, up to N`` box);
- invisible ``rank`` edges between consecutive steps nothing else links, so the layout runs
  top to bottom in the order the steps run, whatever they read.

The model (:class:`Graph` of :class:`GraphNode`, :class:`GraphEdge`, :class:`GraphGroup`,
``Graph.to_dict()``) is what renderers read (Mermaid, DOT here; the report's and ``flowc
ui``'s SVG): its fields are stable, documented in docs/observability.md "The graph model".

:func:`outcomes_from_events` folds a run's trace events into per-node outcomes (status, time,
inferences, tokens, cost, map item counts) that :func:`to_mermaid` / :func:`to_dot` colour the
nodes with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentflow.core.text import money
from agentflow.core.vocabulary import BODY_KEYS, Code, started_items
from agentflow.grammar.written import written_text
from agentflow.ir.models import Plan, Step
from agentflow.ir.names import body_names, in_source_terms, step_names, step_names_in_stage
from agentflow.ir.templates import template_refs

__all__ = [
    "Graph",
    "GraphEdge",
    "GraphGroup",
    "GraphNode",
    "NodeOutcome",
    "build_graph",
    "node_for_path",
    "outcomes_from_events",
    "render",
    "to_dot",
    "to_mermaid",
]

#: the longest expression or text shown in a label (characters)
LABEL_CHARS = 60
_TEMPLATE = re.compile(r"^\{\{\s*(.*?)\s*\}\}$", re.S)
_ITEM = re.compile(r"^(do|round)\.\d+$")  # a map/reduce item, a loop's round: its `do` body
#: the path segments of control steps' bodies (``then``, ``else``, ``do``, ``catch``)
_BODY_LABELS = frozenset(label for labels in BODY_KEYS.values() for label in labels)


@dataclass
class GraphNode:
    """One node: ``id`` (safe for Mermaid and DOT), ``path`` (the step path pattern, e.g.
    ``E3`` or ``E3/do``; ``""`` for input, finish and tools), ``kind`` (``input``, ``finish``,
    ``tool``, or the step's ``tool_name`` class: ``agent``, ``map``, ``decide``, ``call`` …),
    ``title`` and ``details`` (label lines), ``plan`` (the plan it belongs to), ``source``
    (``file.flow:LINE:COL`` when known)."""

    id: str
    path: str
    kind: str
    title: str
    details: list[str] = field(default_factory=list)
    plan: str = ""
    source: str | None = None


@dataclass
class GraphEdge:
    """``src`` → ``dst`` (node ids); ``kind``: ``data``, ``order``, ``body``, ``branch``,
    ``loop`` (a loop's next round), ``tool``, ``call`` or ``rank`` (invisible: keeps the
    drawing in run order); ``label`` may be empty."""

    src: str
    dst: str
    kind: str = "data"
    label: str = ""


@dataclass
class GraphGroup:
    """A subgraph: a stage, a map/reduce/parallel body, or a sub-plan; ``members`` are node ids,
    ``parent`` the id of the enclosing group (or None)."""

    id: str
    label: str
    kind: str
    members: list[str] = field(default_factory=list)
    parent: str | None = None


@dataclass
class NodeOutcome:
    """What a run did at one node: ``status`` (``ok``, ``error``, ``partial`` — some map items
    failed —, ``running`` — an instance started and the trace ends before it finished (a
    process killed mid-step) — or ``skipped`` — never ran), ``runs`` / ``failed`` (instances:
    map items, retries count once), ``running`` (instances in flight at the trace's end),
    ``replayed`` (map items a resumed durable run took from its record, which its trace does
    not hold: counted in ``runs``), ``elapsed_ms`` (summed), ``inferences``, ``input_tokens``,
    ``output_tokens``, ``cost`` (when the events carry it), ``error`` (the first error's
    ``{code, message}``)."""

    status: str = "skipped"
    runs: int = 0
    failed: int = 0
    elapsed_ms: float = 0.0
    inferences: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    error: dict[str, Any] | None = None
    running: int = 0
    replayed: int = 0


@dataclass
class Graph:
    """Nodes, edges and groups of one plan and its sub-plans (see the module docstring)."""

    name: str
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    groups: list[GraphGroup] = field(default_factory=list)

    def node(self, node_id: str) -> GraphNode | None:
        """The node with that id, or None."""
        return next((n for n in self.nodes if n.id == node_id), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data: ``{name, nodes, edges, groups}``."""
        from dataclasses import asdict

        return {
            "name": self.name,
            "nodes": [asdict(n) for n in self.nodes],
            "edges": [asdict(e) for e in self.edges],
            "groups": [asdict(g) for g in self.groups],
        }


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _names(text: str, name: str) -> bool:
    """True when ``text`` (an expression as written) reads the name ``name``."""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: the description flowc gives the sub-plans it outlines (compiler/lowering.py)
_OUTLINED = "outlined by flowc"
#: an outlined sub-plan's view of its caller's values (``input.env.input.rounds``)
_ENV = re.compile(r"\binput\.env\.")


def _expr(value: Any) -> str:
    """A template or condition shown as its expression (``{{ E2.work }}`` → ``E2.work``)."""
    if isinstance(value, dict) and "expr" in value:
        value = value["expr"]
    if isinstance(value, str):
        m = _TEMPLATE.match(value.strip())
        return _short(m.group(1) if m else value)
    return _short(json.dumps(value, ensure_ascii=False, default=str))


_OR_NULL = re.compile(r"\(([A-Za-z_][\w.]*) \?\? null\)")
_LITERAL = re.compile(r'"([^"\\$]*)"')
_PIECE = re.compile(r"\{\{\s*(.*?)\s*\}\}", re.S)


@dataclass
class _Scope:
    """The `.flow` names in force where a step is drawn (:mod:`agentflow.ir.names`):
    ``names`` (step ids and scope names → the user's), ``outer`` (an outlined body's caller's,
    for ``input.item``), ``compiled`` (the plan came from a `.flow`: titles in its terms)."""

    names: dict[str, str] = field(default_factory=dict)
    outer: dict[str, str] | None = None
    compiled: bool = False

    def with_body(self, step: Step) -> _Scope:
        """The scope of ``step``'s bodies (its ``meta.names`` added)."""
        return _Scope({**self.names, **body_names(step)}, self.outer, self.compiled)

    def x(self, value: Any) -> str:
        """``value`` (a template, condition or literal) as the `.flow` writes it: a whole
        template as its expression, text with ``{{ … }}`` pieces as a string with ``${…}``."""
        if isinstance(value, dict) and "expr" in value:
            value = value["expr"]
        if isinstance(value, str):
            m = _TEMPLATE.match(value.strip())
            if m and "{{" not in m.group(1):
                return _short(self.rename(m.group(1)))
            if "{{" in value:
                text = _PIECE.sub(self._piece, value)
                return _short(json.dumps(text, ensure_ascii=False))
            return _short(self.rename(value))
        return _short(json.dumps(value, ensure_ascii=False, default=str))

    def text(self, value: Any) -> str:
        """Prose with templates (a question, a message): its ``{{ … }}`` pieces as ``${…}``."""
        return _short(_PIECE.sub(self._piece, str(value or "")))

    def _piece(self, m: re.Match[str]) -> str:
        literal = _LITERAL.fullmatch(m.group(1))
        if literal:  # an escaped `{{` (`{{ "{{" }}`) is text
            return literal.group(1)
        return "${" + self.rename(m.group(1)) + "}"

    def rename(self, text: str) -> str:
        if not self.compiled and self.outer is None:
            return _ENV.sub("", text)
        # `a < 5m` compiles to `seconds(a) < seconds("5m")`: shown as written (grammar/written.py)
        text = written_text(text)
        # `t.note` of an optional field compiles to `(item.note ?? null)`: shown as written
        text = _OR_NULL.sub(r"\1", text)
        return in_source_terms(text, self.names, outer=self.outer)


def _match_arms(meta: Any) -> dict[str, str] | None:
    """``{"then": patterns, "else": patterns}`` of a ``decide`` compiled from a ``match``
    (``meta.match``: its ``subject`` as written, the first arm's patterns, and the last arm's
    when ``else`` is that arm; compiler/lower_match.py), or None for another ``decide``."""
    match = meta.get("match") if isinstance(meta, dict) else None
    if not isinstance(match, dict) or not isinstance(match.get("subject"), str):
        return None
    return {k: _short(v) for k, v in match.items() if k in ("then", "else") and isinstance(v, str)}


def _tool_label(name: str) -> str:
    return name.removeprefix("builtin__")


def _schema_type(schema: Any) -> str | None:
    """A short name for a JSON Schema: its ``title``, else ``object{a, b, …}``."""
    if not isinstance(schema, dict):
        return None
    if schema.get("title"):
        return str(schema["title"])
    props = schema.get("properties")
    if isinstance(props, dict) and props:
        names = list(props)
        more = ", …" if len(names) > 4 else ""
        return "{" + ", ".join(names[:4]) + more + "}"
    return str(schema.get("type")) if schema.get("type") else None


def _agent_target(agent: Any, scope: _Scope | None = None) -> str:
    if not isinstance(agent, dict):
        return ""
    kind = agent.get("kind")
    if kind == "alias":
        return str(agent.get("name", ""))
    if kind == "team.main":
        return f"{agent.get('team', '')}.main"
    if kind == "team.member":
        member = scope.x(agent.get("member")) if scope else _expr(agent.get("member"))
        return f"{agent.get('team', '')}.member({member})"
    return ""


def _team_target(agent: dict[str, Any], meta: dict[str, Any], scope: _Scope) -> str:
    """A team step's target as the `.flow` writes it, with the team's alias (``dev.main``,
    ``dev.member(item.owner)``)."""
    team = meta.get("agent") or agent.get("team", "")
    if agent.get("kind") == "team.member":
        return f"{team}.member({scope.x(agent.get('member'))})"
    return f"{team}.main"


class _Builder:
    def __init__(self, root: Plan):
        self.root = root
        self.graph = Graph(root.name)
        self.tools: dict[str, str] = {}  # tool name → node id
        #: per plan (its prefix): its stages' groups, the group it is drawn in, its name
        self._groups_of: dict[str, tuple[dict[str, GraphGroup], GraphGroup | None, str]] = {}
        #: the node of each step a `.flow` name reads (a stage's value, a ``let``'s step, by
        #: ``step_names`` and ``meta.value_of``), by plan prefix: what a drawn ``let`` that
        #: reads the name is linked from (:meth:`let_values`)
        self._stage_nodes: dict[str, dict[str, str]] = {}

    # -- nodes and groups
    def add(self, node: GraphNode, group: GraphGroup | None) -> GraphNode:
        self.graph.nodes.append(node)
        if group is not None:
            group.members.append(node.id)
        return node

    def group(self, gid: str, label: str, kind: str, parent: GraphGroup | None) -> GraphGroup:
        g = GraphGroup(gid, label, kind, parent=parent.id if parent else None)
        self.graph.groups.append(g)
        return g

    def edge(self, src: str, dst: str, kind: str = "data", label: str = "") -> None:
        e = GraphEdge(src, dst, kind, label)
        if e not in self.graph.edges:
            self.graph.edges.append(e)

    def tool(self, name: str) -> str:
        if name not in self.tools:
            nid = "tool_" + _safe(name)
            self.tools[name] = nid
            self.add(GraphNode(nid, "", "tool", _tool_label(name)), None)
        return self.tools[name]

    # -- plans
    def plan(
        self,
        plan: Plan,
        prefix: str,
        parent_group: GraphGroup | None,
        outer: dict[str, str] | None = None,
    ) -> str | None:
        """Add ``plan``'s nodes (ids prefixed with ``prefix``); returns its first node's id.
        ``outer``: the names of the step that calls an outlined body (its ``input.item``)."""
        ids = {s.id for _, s in plan.iter_steps() if s.id}
        names = step_names(plan)
        scope = _Scope(names, outer, bool(names) or outer is not None)
        input_id = f"{prefix}input"
        props = (plan.input_schema or {}).get("properties") if plan.input_schema else None
        details = [", ".join(props)] if isinstance(props, dict) and props else []
        self.add(
            GraphNode(input_id, "", "input", "input", _shorten_all(details), plan.name),
            parent_group,
        )
        node_of: dict[str, str] = {"input": input_id}
        stage_groups: dict[str, GraphGroup] = {}
        self._groups_of[prefix] = (stage_groups, parent_group, plan.name)  # pure stages' groups
        previous = input_id
        first: str | None = input_id
        for i, step in enumerate(plan.steps):
            sid = step.id or f"steps[{i}]"
            stage = step.meta.get("stage") if isinstance(step.meta, dict) else None
            group = parent_group
            if stage:
                if stage not in stage_groups:
                    stage_groups[stage] = self.group(
                        f"{prefix}stage_{_safe(str(stage))}",
                        f"stage {stage}",
                        "stage",
                        parent_group,
                    )
                group = stage_groups[stage]
            own = scope
            if scope.compiled and stage and scope.names:  # another stage's `let`s out of scope
                own = _Scope(step_names_in_stage(plan, scope.names, stage), outer, True)
            nid = self.step(step, sid, prefix, plan, group, node_of, ids, own)
            node_of[sid] = nid
            if any(e.src == previous and e.dst == nid for e in self.graph.edges):
                pass
            elif not any(
                e.dst == nid and e.kind == "data" and e.src != input_id for e in self.graph.edges
            ):
                self.edge(previous, nid, "order")  # reads nothing earlier: runs after `previous`
            else:
                # steps are drawn in the order they run (stage after stage, top to bottom),
                # whatever they read: an invisible edge keeps the layout from spreading sideways
                self.edge(previous, nid, "rank")
            previous = nid
        fin = plan.effective_finish()
        fin_id = f"{prefix}finish"
        if fin.mode == "solver":
            title, details = "finish: solver", [_short(fin.prompt or "")] if fin.prompt else []
        elif fin.mode == "silent":
            title, details = "finish: silent", []
        else:
            title, details = "output", [scope.x(fin.output)] if fin.output else []
            written = fin.meta.get("text") if isinstance(fin.meta, dict) else None
            if scope.compiled and isinstance(written, str):
                details = [_short(written)]  # as the `.flow` writes it (lower_written.py)
        self.add(GraphNode(fin_id, "finish", "finish", title, details, plan.name), parent_group)
        if isinstance(fin.meta, dict):
            self.pure_stages(fin.meta, fin_id, prefix)
            self.let_values(fin.meta, fin_id, prefix)
        refs = _refs_of_text(fin.output) | _refs_of_text(fin.prompt)
        linked = False
        for ref in sorted(refs):
            if ref in node_of and ref != "input":
                self.edge(node_of[ref], fin_id)
                linked = True
        if not linked:
            self.edge(previous, fin_id, "order")
        return first

    def pure_stages(self, meta: dict[str, Any], reader: str, prefix: str) -> None:
        """The node of each stage whose value was inlined into the step drawn as ``reader``
        (``meta.stages``, compiler/lower_written.py): a ``pure`` node in its stage's group,
        titled with its value as written, once per plan, with an edge to ``reader`` (and from
        ``input`` when its value reads it) — a stage with no step of its own is still drawn
        (docs/reference/graph.md "Pure stages")."""
        groups, parent, plan_name = self._groups_of.get(prefix, ({}, None, ""))
        for entry in meta.get("stages") or []:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                continue
            name = entry["name"]
            nid = f"{prefix}pure_{_safe(name)}"
            if self.graph.node(nid) is None:
                if name not in groups:
                    groups[name] = self.group(
                        f"{prefix}stage_{_safe(name)}", f"stage {name}", "stage", parent
                    )
                text = entry.get("text")
                title = _short(text) if isinstance(text, str) else name
                source = entry.get("source") if isinstance(entry.get("source"), str) else None
                self.add(
                    GraphNode(
                        nid,
                        "",
                        "pure",
                        title,
                        ["pure: inlined where it is read"],
                        plan_name,
                        source,
                    ),
                    groups[name],
                )
                if isinstance(text, str) and re.search(r"\binput\b", text):
                    self.edge(f"{prefix}input", nid)
                self.let_values(
                    {"stage": name, "values": entry.get("lets"), "text": text}, nid, prefix
                )
            self.edge(nid, reader)

    def let_values(self, meta: dict[str, Any], reader: str, prefix: str) -> None:
        """The node of each inlined ``let`` of the stage ``meta.stage`` whose value the node
        ``reader`` holds (``meta.lets`` and ``meta.values``; a pure stage's ``lets`` passed as
        ``values``: compiler/lower_written.py):
        a ``value`` node in its stage's group, titled ``name = value`` as written, once per
        plan, with an edge from ``input`` when it reads it, from each drawn ``let`` it reads,
        and to ``reader`` when ``reader``'s text names it (or no other drawn ``let`` reads it)
        — a computed value drawn as a value step is (docs/observability.md "Values as written,
        and pure stages")."""
        stage = meta.get("stage")
        values: list[Any] = []
        for key in ("lets", "values"):
            held = meta.get(key)
            values += held if isinstance(held, list) else []
        if not isinstance(stage, str):
            return
        lets = [
            e for e in values
            if isinstance(e, dict) and isinstance(e.get("name"), str)
            and isinstance(e.get("text"), str)
        ]  # fmt: skip
        if not lets:
            return
        groups, parent, plan_name = self._groups_of.get(prefix, ({}, None, ""))
        if stage not in groups:
            groups[stage] = self.group(
                f"{prefix}stage_{_safe(stage)}", f"stage {stage}", "stage", parent
            )
        ids = {e["name"]: f"{prefix}let_{_safe(stage)}_{_safe(e['name'])}" for e in lets}
        for e in lets:
            nid = ids[e["name"]]
            if self.graph.node(nid) is None:
                source = e.get("source") if isinstance(e.get("source"), str) else None
                title = _short(f"{e['name']} = {e['text']}")
                details = ["inlined where it is read"]
                node = GraphNode(nid, "", "value", title, details, plan_name, source)
                self.add(node, groups[stage])
                if re.search(r"\binput\b", e["text"]):
                    self.edge(f"{prefix}input", nid)
                for name, step in self._stage_nodes.get(prefix, {}).items():
                    if _names(e["text"], name):  # a stage's or a `let`'s step, by its name
                        self.edge(step, nid)
        text = meta.get("text")
        for e in lets:
            read_by = [o for o in lets if o is not e and _names(o["text"], e["name"])]
            for other in read_by:
                self.edge(ids[e["name"]], ids[other["name"]])
            if not read_by or (isinstance(text, str) and _names(text, e["name"])):
                self.edge(ids[e["name"]], reader)

    def step(
        self,
        step: Step,
        path: str,
        prefix: str,
        plan: Plan,
        group: GraphGroup | None,
        node_of: dict[str, str],
        ids: set[str],
        scope: _Scope,
    ) -> str:
        nid = prefix + "s_" + _safe(path)  # prefixed: a step may be called `end` (a keyword)
        inp = step.input if isinstance(step.input, dict) else {}
        tool = step.tool_name
        meta = step.meta if isinstance(step.meta, dict) else {}
        own = scope.with_body(step) if tool in ("loop", "filter") else scope  # gate, until
        title, details, kind = self.describe(step, path, inp, meta, own)
        self.add(GraphNode(nid, path, kind, title, details, plan.name, meta.get("source")), group)
        if isinstance(meta.get("value_of"), str):
            self._stage_nodes.setdefault(prefix, {})[meta["value_of"]] = nid
        if scope.names.get(path) and "/" not in path:  # a stage's value or a `let`'s step
            self._stage_nodes.setdefault(prefix, {})[scope.names[path]] = nid
        if meta.get("stages"):
            self.pure_stages(meta, nid, prefix)
        if meta.get("values") or meta.get("lets"):
            self.let_values(meta, nid, prefix)
        for ref in sorted(template_refs(step.compiled) if step.compiled is not None else set()):
            if ref in node_of:
                self.edge(node_of[ref], nid)
        if tool == "agent":
            tools = inp.get("tools")
            for name in tools if isinstance(tools, list) else []:
                self.edge(nid, self.tool(str(name)), "tool")
        elif tool.startswith("plan__"):
            outer = scope.names if scope.compiled else None
            sub = self.sub_plan(tool.removeprefix("plan__"), plan, outer, group)
            if sub is not None:
                self.edge(nid, sub, "call", "calls")
        bodies = step.bodies()
        if bodies:
            body_group = group
            inner = scope.with_body(step)
            if tool in ("map", "reduce", "loop", "parallel"):
                var = inner.names.get("item", "item")
                label = {
                    "map": f"for each {var} of {scope.x(inp.get('over'))}",
                    "reduce": f"each {var} of {scope.x(inp.get('over'))}",
                    "loop": f"each round, up to {scope.x(inp.get('up_to'))}",
                    "parallel": "branches",
                }[tool]
                body_group = self.group(f"{nid}_body", label, "body", group)
            for label, body in bodies:
                bid = self.step(
                    body, f"{path}/{label}", prefix, plan, body_group, node_of, ids, inner
                )
                each = f"each {inner.names.get('item', 'item')}" if scope.compiled else "each item"
                guarded = "guarded" if meta.get("kind") == "catch" else "try"
                do = {"map": each, "try": guarded}.get(tool, "each")
                edge_label = {"do": do}.get(label, label)
                arms = _match_arms(step.meta) if tool == "decide" and scope.compiled else None
                if arms is not None:  # the arm's patterns as written: `"bug"`, `"a" | "b"`, `_`
                    edge_label = arms.get(label, edge_label)
                if tool == "loop":
                    edge_label = "round 1"
                self.edge(nid, bid, "branch" if tool == "decide" else "body", edge_label)
                if tool == "loop":  # the back edge: the next round, while rounds are left
                    self.edge(bid, nid, "loop", f"next round, ≤ {scope.x(inp.get('up_to'))}")
        return nid

    def sub_plan(
        self,
        name: str,
        caller: Plan,
        outer: dict[str, str] | None = None,
        within: GraphGroup | None = None,
    ) -> str | None:
        """The first node of sub-plan ``name`` (drawn once). A body flowc outlined is drawn
        inside ``within``, the group of the step that calls it (a loop's body inside the box
        `each round, up to N`, as the `.flow` nests it); a hand-written sub-plan, which any step
        may call, is a group of its own."""
        plans = {**(self.root.plans or {}), **(caller.plans or {})}
        sub = plans.get(name)
        if sub is None:
            return None
        prefix = f"p_{_safe(name)}__"
        if any(n.id == f"{prefix}input" for n in self.graph.nodes):
            return f"{prefix}input"
        description = sub.description or ""
        outlined = description.endswith(_OUTLINED)
        # an outlined body is named by the construct it came from (`map body of stage report`)
        label = description[: -len(_OUTLINED)].rstrip(", ").replace("`", "") if outlined else ""
        parent = within if outlined else None
        group = self.group(f"p_{_safe(name)}", label or f"plan {name}", "plan", parent)
        first = self.plan(sub, prefix, group, outer if outlined else None)
        if outlined and outer is None:
            self._unwrap_env(prefix, group.id)
        return first

    def _unwrap_env(self, prefix: str, group_id: str) -> None:
        """A sub-plan flowc outlined (a ``try`` block, a ``loop`` body) reads the caller's
        values through its input's ``env``: show ``input.env.input.rounds`` as the `.flow`
        wrote it, ``input.rounds`` (and ``input.env.outline`` as ``outline``)."""
        for node in self.graph.nodes:
            if node.id.startswith(prefix):
                node.title = _ENV.sub("", node.title)
                node.details = [_ENV.sub("", d) for d in node.details]
        for edge in self.graph.edges:
            if edge.src.startswith(prefix) or edge.dst.startswith(prefix):
                edge.label = _ENV.sub("", edge.label)
        for g in self.graph.groups:
            if g.id == group_id or g.id.startswith(prefix):
                g.label = _ENV.sub("", g.label)

    def describe(
        self, step: Step, path: str, inp: dict[str, Any], meta: dict[str, Any], scope: _Scope
    ) -> tuple[str, list[str], str]:
        """``(title, details, kind)`` of a step: in a plan compiled from a `.flow`, as the
        `.flow` writes the construct (``map tickets as t``, ``agent(triager)``, ``loop up to
        4``, ``ok = ask "…"``); in a hand-written plan, prefixed with the step's id."""
        x = scope.x
        tool = step.tool_name
        details: list[str] = []
        var = scope.with_body(step).names.get("item", "item")
        if tool == "agent":
            target = _agent_target(inp.get("agent"), scope)
            if scope.compiled:
                title = f"agent({meta.get('agent') or target})" if target else "agent"
                if isinstance(inp.get("agent"), dict) and inp["agent"].get("kind") != "alias":
                    title = f"agent({_team_target(inp['agent'], meta, scope)})"
            else:
                title = f"agent {target}".strip()
            expect = meta.get("expect") or _schema_type(inp.get("output_schema"))
            if expect:
                details.append(f"expect {expect}")
            tools = inp.get("tools")
            if tools == "none" or tools == []:
                details.append("no tools")
            elif isinstance(tools, list):
                details.append("tools: " + ", ".join(_tool_label(str(t)) for t in tools))
            else:
                details.append("tools: the whole catalog")
            if inp.get("max_iterations") is not None:
                details.append(f"≤ {x(inp['max_iterations'])} rounds")
            if inp.get("write") is not None:
                details.append(f"writes {x(inp['write'])}")
            kind = "agent"
        elif tool == "map":
            limit = inp.get("concurrency", 1)
            if scope.compiled:
                word = "parallel map" if "concurrency" in inp else "map"
                if meta.get("kind") == "filter":  # a filter's gates (lowering): its own work
                    word = "filter"
                    details.append("each item's `where`")
                title = f"{word} {x(inp.get('over'))} as {var}"
                if "concurrency" in inp:
                    details.append(f"limit {x(limit)}")
            else:
                title = f"map over {x(inp.get('over'))}"
                details.append(f"limit {x(limit)}")
            if inp.get("on_item_error") == "skip":
                details.append("failed items skipped")
            elif isinstance(inp.get("on_item_error"), dict):
                details.append(f"tolerate {x(inp['on_item_error'].get('tolerate'))} failed")
            kind = "map"
        elif tool == "reduce":
            if scope.compiled:
                acc = scope.with_body(step).names.get("accumulator", "accumulator")
                title = f"reduce {x(inp.get('over'))} as {var}, {acc}"
                details.append(f"{acc} = {x(inp.get('initial'))}")
            else:
                title = f"reduce over {x(inp.get('over'))}"
            kind = "map"
        elif tool == "loop":
            title = f"loop up to {x(inp.get('up_to'))}"
            if scope.compiled:
                names = scope.with_body(step).names
                details.append(
                    f"as {names.get('round', 'round')}, "
                    f"{names.get('accumulator', 'accumulator')} = {x(inp.get('initial'))}"
                )
            until = inp.get("until")
            if until is not None:
                details.append(f"until {x(until)}")
                exhausted = inp.get("on_exhausted")
                if isinstance(exhausted, dict) and "fail" in exhausted:
                    details.append("else fail (loop_exhausted)")
                elif isinstance(exhausted, dict) and "value" in exhausted:
                    details.append(f"else {x(exhausted['value'])}")
            kind = "map"
        elif tool == "parallel":
            title = "parallel"
            if inp.get("concurrency") is not None:
                details.append(f"limit {x(inp['concurrency'])}")
            kind = "map"
        elif tool == "decide" and scope.compiled and _match_arms(meta) is not None:
            # a `match` with an effectful arm: its subject as written, the arms on the edges
            title, kind = f"match {_short(str(meta['match']['subject']))}", "decide"
        elif tool == "decide":
            gate = inp.get("when") if "when" in inp else inp.get("infer")
            if "when" in inp and isinstance(meta.get("when"), str):
                gate = meta["when"]  # as the `.flow` writes it: its `let`s by name
            title = f"if {x(gate)}" if "when" in inp else f"if (judge) {x(gate)}"
            kind = "decide"
        elif tool == "filter":
            gate = inp.get("when") if "when" in inp else inp.get("infer")
            if scope.compiled:
                where = x(gate) if "when" in inp else f"judge {x(gate)}"
                if isinstance(meta.get("when"), str):  # as written (its gates computed first)
                    where = meta["when"] if "when" in inp else f"judge {meta['when']}"
                title = f"filter {x(inp.get('over'))} as {var} where {where}"
            else:
                title = f"filter {x(inp.get('over'))}"
                details.append(f"keep when {x(gate)}")
            kind = "filter"
        elif tool == "exit":
            written = meta.get("when")
            if isinstance(written, str) and isinstance(inp.get("when"), dict):
                inp = {**inp, "when": {"expr": written}}  # its `let`s by name (lowering)
            title, kind = self.exit_title(inp, scope)
            if inp.get("message"):
                details.append(_short(f'"{scope.text(inp["message"])}"'))
        elif tool == "ask":
            title = f'ask "{scope.text(inp.get("question", ""))}"'
            if not scope.compiled:
                title = f"ask: {_short(str(inp.get('question', '')))}"
            choices = inp.get("choices") or (inp.get("schema") or {}).get("enum")
            if isinstance(choices, list):
                details.append("choices: " + ", ".join(str(c) for c in choices))
            unanswered = inp.get("when_unanswered")
            if isinstance(unanswered, dict) and "default" in unanswered:
                details.append(f"unanswered: {x(unanswered['default'])}")
            elif isinstance(unanswered, dict) and "fail" in unanswered:
                details.append("unanswered: fail")
            kind = "ask"
        elif tool == "verify":
            checks = inp.get("checks") or []
            judges = inp.get("judges") or []
            title = "verify"
            details += [f"check {x(c.get('ok'))}" for c in checks if isinstance(c, dict)]
            details += [
                f"judge {scope.text(j.get('prompt', ''))}" for j in judges if isinstance(j, dict)
            ]
            kind = "verify"
        elif tool == "try":
            # `x catch { … }` is titled as written (no `try`: compiler/lower_effects.py meta.kind)
            title = "… catch" if meta.get("kind") == "catch" else "try … catch"
            if isinstance(inp.get("on"), list):
                details.append("on " + ", ".join(str(c) for c in inp["on"]))
            kind = "try"
        elif tool == "sleep":
            wait = inp.get("for")
            shown = wait if isinstance(wait, str) and "{{" not in wait else x(wait)
            title, kind = f"sleep {shown}", "value"
        elif tool == "value":
            title = "value"
            if scope.compiled and isinstance(meta.get("text"), str):
                title = _short(meta["text"])  # as the `.flow` writes it (lower_written.py)
            elif scope.compiled and "value" in inp:
                title = x(inp["value"])
            elif "value" in inp:
                details.append(x(inp["value"]))
            kind = "value"
        elif tool.startswith("plan__"):
            name = tool.removeprefix("plan__")
            sub = {**(self.root.plans or {})}.get(name)
            description = (sub.description or "") if sub is not None else ""
            if scope.compiled and description.endswith(_OUTLINED):
                body = description[: -len(_OUTLINED)].rstrip(", ").replace("`", "")
                title = body.split(" of stage ")[0] if " of stage " in body else body
            else:
                title = f"call {name}"
            kind = "call"
        else:
            title = _tool_label(tool)
            args = ", ".join(str(k) for k in inp) if inp else ""
            if args:
                details.append(f"({_short(args)})")
            if scope.compiled:
                title = f"{title}({_short(args)})" if args else f"{title}()"
                details = []
            kind = "tool_step"
        if scope.compiled:
            if meta.get("name"):
                title = f"{meta['name']} = {title}"
            return title, _shorten_all(details), kind
        head = step.id or path
        if meta.get("name"):
            head += f" · {meta['name']}"
        return f"{head}: {title}", _shorten_all(details), kind

    def exit_title(self, inp: dict[str, Any], scope: _Scope) -> tuple[str, str]:
        when = inp.get("when")
        status = inp.get("status", "ok")
        if isinstance(when, dict) and isinstance(when.get("expr"), str):
            text = when["expr"].strip()
            if text.startswith("not (") and text.endswith(")") and status == "error":
                return f"require {scope.x(text[5:-1])}", "require"
            if text.startswith("not ") and status == "error" and scope.compiled:
                return f"require {scope.x(text[4:])}", "require"
            verb = "fail" if status == "error" else "exit"
            return f"{verb} when {scope.x(when)}", "exit"
        if status == "error":
            return ("fail" if scope.compiled else f"fail ({inp.get('code', 'failed')})"), "exit"
        return "exit", "exit"


def _shorten_all(lines: list[str]) -> list[str]:
    return [_short(line) for line in lines[:8]] + (
        [f"… {len(lines) - 8} more"] if len(lines) > 8 else []
    )


def _refs_of_text(text: Any) -> set[str]:
    if not isinstance(text, str) or "{{" not in text:
        return set()
    return set(
        re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\b", " ".join(re.findall(r"\{\{(.*?)\}\}", text)))
    )


def build_graph(plan: Plan) -> Graph:
    """The :class:`Graph` of a loaded plan (its sub-plans included where they are called)."""
    builder = _Builder(plan)
    builder.plan(plan, "", None)
    for name in plan.plans or {}:  # sub-plans nobody calls directly still get drawn
        builder.sub_plan(name, plan)
    return builder.graph


# ------------------------------------------------------------------------------- outcomes


def node_for_path(path: str, stack: list[str] | None, root: str) -> str | None:
    """The node id of a step event: ``E3`` → ``s_E3``, ``E3/do.2`` → ``s_E3_do``, ``E1/then``
    → ``s_E1_then``, ``E3/do.2/E10`` in sub-plan ``p`` → ``p_p__s_E10``; None for paths that are
    not steps (an agent's tool calls)."""
    if not path:
        return None
    parts = path.split("/")
    if any(p.startswith("agent.") for p in parts):
        return None
    plan = stack[-1] if stack else root
    prefix = "" if plan == root else f"p_{_safe(plan)}__"
    # the step's own path inside its plan: drop the caller's prefix (a sub-plan's steps sit
    # under the calling step's path), keep body labels, turn map item numbers into `do`
    depth = len(stack or [root]) - 1
    local = _local(parts, depth)
    return prefix + "s_" + _safe("/".join("do" if _ITEM.match(p) else p for p in local))


def _local(parts: list[str], depth: int) -> list[str]:
    """The path segments inside the innermost plan: a sub-plan call adds a step path prefix per
    level; the first segment that is a step id after ``depth`` such prefixes starts it."""
    if depth <= 0:
        return parts
    # each nested plan's steps start after the calling path (which itself may hold bodies);
    # without the plans at hand the innermost plan's steps are the last id-like segment and
    # its body labels
    i = len(parts) - 1
    while i > 0 and (_ITEM.match(parts[i]) or parts[i] in _BODY_LABELS):
        i -= 1
    return parts[i:]


def outcomes_from_events(events: Iterable[Mapping[str, Any]], plan: Plan) -> dict[str, NodeOutcome]:
    """Fold trace events (the dicts of a ``--trace`` file) into ``{node id: NodeOutcome}`` for
    :func:`build_graph`'s nodes. Nodes of the plan that never ran are absent (``skipped``)."""
    out: dict[str, NodeOutcome] = {}
    root = plan.name
    # steps started and not finished (by path and stack): in flight when the trace ends, unless
    # a later run_started (a resumed process appending to the trace) left them behind
    open_steps: dict[tuple[str, tuple[str, ...]], str] = {}
    # a map's item count (by path and stack) and, once it finished, its body node's expected runs
    items: dict[tuple[str, tuple[str, ...]], int] = {}
    expected: dict[str, int] = {}
    for event in events:
        kind = event.get("kind")
        data = event.get("data") or {}
        path = str(event.get("path") or "")
        nid = node_for_path(path, event.get("stack"), root)
        at = (path, tuple(event.get("stack") or ()))
        if kind == "run_started":
            open_steps.clear()
        elif kind == "step_started" and nid is not None:
            open_steps[at] = nid
            count = started_items(data) if data.get("tool_name") == "map" else None
            if count is not None:
                items[at] = count
        if kind == "step_finished" and nid is not None:
            open_steps.pop(at, None)
            count = items.pop(at, None)
            body = node_for_path(f"{path}/do.0", event.get("stack"), root)
            if count and body is not None and not data.get("error") and not data.get("aborted"):
                expected[body] = expected.get(body, 0) + count
            o = out.setdefault(nid, NodeOutcome())
            o.runs += 1
            if isinstance(data.get("elapsed_ms"), int | float):
                o.elapsed_ms += data["elapsed_ms"]
            usage = _as_dict(data.get("usage"))
            if isinstance(usage.get("cost"), int | float):
                o.cost = (o.cost or 0.0) + usage["cost"]
            err = data.get("error")
            if err or data.get("aborted"):
                o.failed += 1
                if o.error is None:
                    o.error = dict(err) if isinstance(err, dict) else {
                        "code": Code.ABORTED, "message": str(data.get("aborted"))
                    }  # fmt: skip
        elif kind == "model_call" and not data.get("reused"):
            path = str(event.get("path") or "")
            target = node_for_path(path, event.get("stack"), root)
            if target is None:
                continue
            o = out.setdefault(target, NodeOutcome())
            o.inferences += 1
            o.input_tokens += _tokens(data.get("input_tokens"))
            o.output_tokens += _tokens(data.get("output_tokens"))
            if isinstance(data.get("cost"), int | float):
                o.cost = (o.cost or 0.0) + data["cost"]
    for nid, count in expected.items():
        # a resumed durable run's trace lacks the items it replayed from its record: the map
        # finished with `count` items, so those not in the trace were done (taken from the record)
        o = out.setdefault(nid, NodeOutcome())
        if o.runs < count:
            o.replayed = count - o.runs
            o.runs = count
    for nid in open_steps.values():
        out.setdefault(nid, NodeOutcome()).running += 1
    for o in out.values():
        if o.running:
            o.status = "running"  # started, and the trace ends before it finished
        elif o.runs == 0:
            o.status = "ok"  # model calls seen but no finish event (a judge/solver path)
        elif o.failed == 0:
            o.status = "ok"
        elif o.failed < o.runs:
            o.status = "partial"
        else:
            o.status = "error"
    return out


# ------------------------------------------------------------------------------- renderers

_STATUS_STYLE = {
    "ok": ("#d8f5d8", "#2e7d32"),
    "error": ("#fbd5d5", "#c62828"),
    "partial": ("#fde9c8", "#e65100"),
    "running": ("#dbe9fb", "#1565c0"),
    "skipped": ("#eeeeee", "#9e9e9e"),
}
_MERMAID_SHAPES = {
    "input": ('(["', '"])'),
    "finish": ('(["', '"])'),
    "tool": ('{{"', '"}}'),
    "decide": ('{"', '"}'),
    "require": ('[/"', '"/]'),
    "exit": ('[/"', '"/]'),
    "verify": ('[/"', '"/]'),
    "ask": ('(["', '"])'),
    "call": ('[["', '"]]'),
    "map": ('[["', '"]]'),
}


def _outcome_line(o: NodeOutcome | None) -> str | None:
    if o is None:
        return "not run"
    bits = []
    if o.running:
        done = [f"{o.runs - o.failed} ok"] if o.runs - o.failed else []
        done += [f"{o.failed} failed"] if o.failed else []
        running = "running" if not done and o.running == 1 else f"{o.running} running"
        bits.append(", ".join([*done, running]))
    elif o.runs > 1:
        bits.append(f"{o.runs - o.failed}/{o.runs} ok")
    elif o.runs == 1:
        bits.append("ok" if not o.failed else f"error: {o.error.get('code') if o.error else ''}")
    if o.replayed:
        bits.append(f"{o.replayed} from the record")
    if o.elapsed_ms:
        bits.append(f"{o.elapsed_ms / 1000:.2f}s")
    if o.inferences:
        bits.append(f"{o.inferences} inf, {o.input_tokens}→{o.output_tokens} tok")
    if o.cost is not None:
        bits.append(money(o.cost))
    return " · ".join(bits) if bits else None


def _mermaid_text(text: str) -> str:
    out = text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;")
    # `|` ends an edge's label (`-->|"a" | "b"|`): a `match` arm's patterns are joined by it
    out = out.replace("|", "#124;")
    return out.replace(">", "#gt;").replace("`", "#96;").replace("\n", " ")


def to_mermaid(graph: Graph, outcomes: Mapping[str, NodeOutcome] | None = None) -> str:
    """Mermaid ``flowchart TD`` text of ``graph``; with ``outcomes`` (from
    :func:`outcomes_from_events`) each step node is coloured by status and shows its time,
    inferences and tokens."""
    lines = ["flowchart TD"]
    grouped = {m for g in graph.groups for m in g.members}

    def node_line(node: GraphNode, indent: str) -> str:
        label = [f"<b>{_mermaid_text(node.title)}</b>"] + [_mermaid_text(d) for d in node.details]
        if outcomes is not None and node.path and node.kind not in ("input", "finish", "tool"):
            line = _outcome_line(outcomes.get(node.id))
            if line:
                label.append(f"<i>{_mermaid_text(line)}</i>")
        left, right = _MERMAID_SHAPES.get(node.kind, ('["', '"]'))
        return f"{indent}{node.id}{left}{'<br/>'.join(label)}{right}"

    def emit_group(group: GraphGroup, indent: str) -> None:
        lines.append(f'{indent}subgraph {group.id}["{_mermaid_text(group.label)}"]')
        lines.append(f"{indent}  direction TB")
        for member in group.members:
            node = graph.node(member)
            if node is not None:
                lines.append(node_line(node, indent + "  "))
        for child in graph.groups:
            if child.parent == group.id:
                emit_group(child, indent + "  ")
        lines.append(f"{indent}end")

    for node in graph.nodes:
        if node.id not in grouped:
            lines.append(node_line(node, "  "))
    for group in graph.groups:
        if group.parent is None:
            emit_group(group, "  ")
    arrows = {
        "data": "-->",
        "order": "-.->",
        "body": "==>",
        "loop": "-.->",
        "branch": "-->",
        "tool": "-.-",
        "call": "-.->",
        "rank": "~~~",  # invisible: keeps the steps in the order they run
    }
    for e in graph.edges:
        arrow = arrows.get(e.kind, "-->")
        label = f"|{_mermaid_text(e.label)}|" if e.label else ""
        lines.append(f"  {e.src} {arrow}{label} {e.dst}")
    lines.append("  classDef tool fill:#f3f0ff,stroke:#7e57c2,color:#311b92")
    lines.append("  classDef io fill:#e3f2fd,stroke:#1565c0")
    tools = [n.id for n in graph.nodes if n.kind == "tool"]
    if tools:
        lines.append(f"  class {','.join(tools)} tool")
    io = [n.id for n in graph.nodes if n.kind in ("input", "finish")]
    if io:
        lines.append(f"  class {','.join(io)} io")
    if outcomes is not None:
        by_status: dict[str, list[str]] = {}
        for node in graph.nodes:
            if node.path and node.kind not in ("input", "finish", "tool"):
                o = outcomes.get(node.id)
                by_status.setdefault(o.status if o else "skipped", []).append(node.id)
        for status, ids in by_status.items():
            fill, stroke = _STATUS_STYLE[status]
            lines.append(f"  classDef {status} fill:{fill},stroke:{stroke},stroke-width:2px")
            lines.append(f"  class {','.join(ids)} {status}")
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


_DOT_SHAPES = {
    "input": "oval",
    "finish": "oval",
    "tool": "hexagon",
    "decide": "diamond",
    "require": "parallelogram",
    "exit": "parallelogram",
    "verify": "parallelogram",
    "ask": "oval",
    "call": "component",
    "map": "box3d",
}


def to_dot(graph: Graph, outcomes: Mapping[str, NodeOutcome] | None = None) -> str:
    """Graphviz DOT text of ``graph`` (``dot -Tsvg``); ``outcomes`` as in :func:`to_mermaid`."""
    lines = [
        f'digraph "{_dot_text(graph.name)}" {{',
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    grouped = {m for g in graph.groups for m in g.members}

    def node_line(node: GraphNode, indent: str) -> str:
        label = [node.title, *node.details]
        fill, stroke = "#ffffff", "#555555"
        if node.kind == "tool":
            fill, stroke = "#f3f0ff", "#7e57c2"
        elif node.kind in ("input", "finish"):
            fill, stroke = "#e3f2fd", "#1565c0"
        if outcomes is not None and node.path and node.kind not in ("input", "finish", "tool"):
            o = outcomes.get(node.id)
            line = _outcome_line(o)
            if line:
                label.append(line)
            fill, stroke = _STATUS_STYLE[o.status if o else "skipped"]
        text = "\\n".join(_dot_text(x) for x in label)
        shape = _DOT_SHAPES.get(node.kind, "box")
        return f'{indent}{node.id} [label="{text}", shape={shape}, fillcolor="{fill}", color="{stroke}"];'

    def emit_group(group: GraphGroup, indent: str) -> None:
        lines.append(f"{indent}subgraph cluster_{group.id} {{")
        lines.append(f'{indent}  label="{_dot_text(group.label)}"; style="rounded,dashed";')
        for member in group.members:
            node = graph.node(member)
            if node is not None:
                lines.append(node_line(node, indent + "  "))
        for child in graph.groups:
            if child.parent == group.id:
                emit_group(child, indent + "  ")
        lines.append(f"{indent}}}")

    for node in graph.nodes:
        if node.id not in grouped:
            lines.append(node_line(node, "  "))
    for group in graph.groups:
        if group.parent is None:
            emit_group(group, "  ")
    styles = {
        "order": "style=dashed",
        "body": "penwidth=2",
        "loop": "style=dashed, constraint=false",
        "tool": "style=dotted, arrowhead=none",
        "call": "style=dashed",
        "rank": "style=invis",
    }
    inputs = {n.id for n in graph.nodes if n.kind == "input"}
    # a step placed by a step before it: the input's long edge to it does not set its rank
    placed = {e.dst for e in graph.edges if e.src not in inputs and e.kind != "tool"}
    for e in graph.edges:
        attrs = [styles.get(e.kind, "")] + ([f'label="{_dot_text(e.label)}"'] if e.label else [])
        if e.kind == "data" and e.src in inputs and e.dst in placed:
            attrs.append("constraint=false")
        text = ", ".join(a for a in attrs if a)
        lines.append(f"  {e.src} -> {e.dst}" + (f" [{text}];" if text else ";"))
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(
    plan: Plan, fmt: str = "mermaid", events: Iterable[Mapping[str, Any]] | None = None
) -> str:
    """``plan``'s graph as ``mermaid`` or ``dot`` text, coloured by a run's trace ``events``
    when given. Raises ValueError for another format."""
    graph = build_graph(plan)
    outcomes = outcomes_from_events(events, plan) if events is not None else None
    if fmt == "mermaid":
        return to_mermaid(graph, outcomes)
    if fmt == "dot":
        return to_dot(graph, outcomes)
    raise ValueError(f"unknown graph format {fmt!r} (mermaid, dot)")


def _as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping (an event field), else an empty one."""
    return value if isinstance(value, dict) else {}


def _tokens(value: Any) -> int:
    """A ``model_call`` event's token count: the number, or 0 when the trace holds something
    else there (a trace written by hand is read, never trusted)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return 0
    return int(value) if abs(value) < 1e18 else 0
