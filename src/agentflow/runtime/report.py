"""A run report: one self-contained HTML file built from a run's trace events
(``flowc report TRACE``, :func:`agentflow.report`; docs/observability.md).

The page needs no network and no script library: its CSS is inline, the flow's graph is SVG
drawn here (:mod:`agentflow.ir.graph_svg`, with its text alternative), everything else is plain
HTML, and one line of script only marks when the page is drawn. It reads at any width (the steps
table stacks its cells on a narrow screen). It shows:

- a header with the run's status, duration, inferences, tokens and cost;
- the run's errors with their `.flow` location (and the source line, when the `.flow` is known);
- the flow's graph (:mod:`agentflow.ir.graph`) coloured by outcome, when the plan is known;
- a table of every step instance (map items included: one row each) with status, start, time,
  inferences, tokens, cost and source;
- a timeline: one row per step instance, its model calls and tool calls drawn on it, so a
  map's concurrency shows as overlapping rows;
- each agent's conversation round by round: the task and input, each model reply (text and tool
  calls), each tool call's arguments and result, warnings (e.g. a contract violation sent back),
  and the contract check of the final answer;
- the run's output.

Everything comes from the events a ``--trace`` file holds (docs/spec/RUNTIME.md §8); the trace
already records step inputs, tool arguments and results and the models' replies, so the report shows
what the trace shows — keep traces of runs on sensitive data as private as the data.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from agentflow.core.text import clean_text, finite_dumps, html_number, html_text, source_lines
from agentflow.core.version import __version__
from agentflow.core.vocabulary import Code
from agentflow.ir.graph import build_graph, outcomes_from_events
from agentflow.ir.graph_svg import STATUS_STYLE, text_alternative, to_svg
from agentflow.runtime.where import outlined_call

__all__ = [
    "RunView",
    "build_report",
    "graph_section",
    "outcomes_of",
    "read_run",
    "report_css",
    "source_caret",
]

_ROUND = re.compile(r"/agent\.(\d+)/[^/]+$")
_ITEM = re.compile(r"/do\.(\d+)$")
_SOURCE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<column>\d+)$")
#: characters of one JSON value shown in the report before it is cut
SHOW_CHARS = 20_000


@dataclass
class StepRun:
    """One step instance of the run (a map item is one): ``path``, ``tool``, times (Unix
    seconds), ``status`` (``ok``, ``error``, ``aborted``, ``exited``, ``running``), ``error``,
    ``usage`` (this step and what it contains), ``input``/``result``, its `.flow` ``source``
    and its ``label`` in the `.flow`'s terms (``audits › item 3 › agent(auditor)``)."""

    path: str
    tool: str
    start: float
    end: float | None = None
    status: str = "running"
    error: dict[str, Any] | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    input: Any = None
    result: Any = None
    source: str | None = None
    stage: str | None = None
    stack: list[str] = field(default_factory=list)
    label: str | None = None
    #: the step's ``input`` is a preview (``input_preview``: over the events' size limit)
    input_preview: bool = False
    #: the step's own duration in seconds (``elapsed_ms / 1000`` of its ``step_finished``, the
    #: number the console prints), else None
    elapsed: float | None = None

    @property
    def took(self) -> float | None:
        """Seconds the step took: its own ``elapsed`` when the event said it (so the report
        rounds the very number the console rounds), else ``end - start``; None while running."""
        if self.elapsed is not None:
            return self.elapsed
        return None if self.end is None else self.end - self.start

    @property
    def name(self) -> str:
        """How the report names the step: its label, else its path."""
        return self.label or self.path

    @property
    def item(self) -> int | None:
        """The map item index when this step is a map item (``…/do.N``), else None."""
        m = _ITEM.search(self.path)
        return int(m.group(1)) if m else None


@dataclass
class Call:
    """A model call (``kind="model"``) or tool call (``kind="tool"``) at step ``path``."""

    kind: str
    path: str
    name: str
    start: float
    end: float
    data: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None

    @property
    def owner(self) -> str:
        """The step the call belongs to (``E0/agent.2/grep`` → ``E0``)."""
        return _ROUND.sub("", self.path) if self.kind == "tool" else self.path

    @property
    def round(self) -> int | None:
        """The agent round of the call, when it was made by an agent."""
        if self.kind == "tool":
            m = _ROUND.search(self.path)
            return int(m.group(1)) if m else None
        r = self.data.get("round")
        return r if isinstance(r, int) else None


@dataclass
class RunView:
    """A run as read from its events: the run's facts, its step instances in start order, its
    model and tool calls, its warnings."""

    plan: str = ""
    file: str | None = None
    start: float = 0.0
    end: float | None = None
    status: str = "running"
    error: dict[str, Any] | None = None
    output: Any = None
    input: Any = None
    usage: dict[str, Any] = field(default_factory=dict)
    steps: list[StepRun] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def step(self, path: str) -> StepRun | None:
        """The last instance of the step at ``path`` (a retried step keeps one row)."""
        for s in reversed(self.steps):
            if s.path == path:
                return s
        return None


def read_run(events: Iterable[Mapping[str, Any]]) -> RunView:
    """Fold trace events into a :class:`RunView` (top-level run only; a nested run's events —
    ``plan_and_execute`` — still add their steps and calls)."""
    view = RunView()
    open_tools: dict[str, list[Call]] = {}
    for event in events:
        kind = event.get("kind")
        data = event.get("data") or {}
        path = str(event.get("path") or "")
        stack = list(event.get("stack") or [])
        t = float(event.get("time") or 0.0)
        if kind == "run_started" and not stack[1:]:
            view.plan = str(data.get("plan") or "")
            view.file = data.get("file")
            view.start = t
            view.input = data.get("input")
        elif kind == "run_finished" and not stack[1:]:
            view.end = t
            view.status = str(data.get("status") or "")
            view.error = data.get("error") if isinstance(data.get("error"), dict) else None
            view.output = data.get("output")
            view.usage = _as_dict(data.get("usage"))
        elif kind == "step_started":
            tool = str(data.get("tool_name") or "")
            view.steps.append(
                StepRun(
                    path=path,
                    # a map item's / loop round's sub-plan call: `item` / `round`, not its id
                    tool=_whole(tool, data) or tool,
                    start=t,
                    input=data.get("input"),
                    source=data.get("source"),
                    stage=data.get("stage"),
                    stack=stack,
                    label=data.get("label") if isinstance(data.get("label"), str) else None,
                    input_preview=bool(data.get("input_preview")),
                )
            )
        elif kind == "step_finished":
            step = view.step(path)
            if step is None:
                tool = str(data.get("tool_name") or "")
                step = StepRun(path, _whole(tool, data) or tool, t, stack=stack)
                view.steps.append(step)
            step.end = t
            if isinstance(data.get("elapsed_ms"), int | float):
                # the step's own clock, as the console shows it: its `step_started` is emitted
                # once its input is rendered, after MCP servers are connected (or a map slot,
                # a dependency awaited), so the events' times alone would leave that out
                step.elapsed = data["elapsed_ms"] / 1000
                step.start = t - step.elapsed
            step.usage = _as_dict(data.get("usage"))
            if data.get("error"):
                step.status, step.error = "error", _as_error(data["error"])
            elif data.get("aborted"):
                step.status = "aborted"
                step.error = _as_error(
                    data.get("error") or {"code": Code.ABORTED, "message": data["aborted"]}
                )
            else:
                step.status = "exited" if data.get("exit") else "ok"
                step.result = data.get("result")
        elif kind in ("tool_started", "tool_finished") and _whole(
            str(data.get("tool_name") or ""), data
        ):
            continue  # a map item's / loop round's sub-plan call: its step is the call
        elif kind == "tool_started":
            call = Call(
                "tool", path, str(data.get("tool_name") or ""), t, t, {"input": data.get("input")}
            )
            open_tools.setdefault(path, []).append(call)
            view.calls.append(call)
        elif kind == "tool_finished":
            pending = open_tools.get(path) or []
            if pending:
                call = pending.pop()
            else:
                call = Call("tool", path, str(data.get("tool_name") or ""), t, t)
                view.calls.append(call)
            call.end = t
            call.data["result"] = data.get("result")
            call.data["skipped"] = bool(data.get("skipped"))
            if data.get("error"):
                call.error = _as_error(data["error"])
        elif kind == "model_call":
            latency = data.get("latency_ms")
            start = t - (latency / 1000 if isinstance(latency, int | float) else 0.0)
            view.calls.append(
                Call("model", path, str(data.get("model") or ""), start, t, dict(data))
            )
        elif kind in ("warning", "retry"):
            view.warnings.append({"kind": kind, "path": path, "time": t, **data})
    if view.end is None:
        ends = [s.end for s in view.steps if s.end] + [c.end for c in view.calls]
        view.end = max(ends, default=view.start)
    return view


# ------------------------------------------------------------------------------- rendering


def _e(value: Any) -> str:
    """``value`` as text fit for the page's content or a double-quoted attribute value
    (:func:`agentflow.core.text.html_text`)."""
    return html_text(value)


def _n(value: Any) -> str:
    """A count from an event (tokens, inferences) for the page (:func:`html_number`)."""
    return html_number(value)


def json_text(value: Any) -> str:
    if isinstance(value, str):
        text = value
    else:
        text = finite_dumps(value, ensure_ascii=False, indent=2, default=str)
    if len(text) > SHOW_CHARS:
        text = text[:SHOW_CHARS] + f"\n… [{len(text)} characters; the trace has all of them]"
    return text


def _pre(value: Any) -> str:
    # focusable: a long value scrolls, and a scrolling region must be reachable by keyboard
    return f'<pre tabindex="0">{html_text(json_text(value), limit=None)}</pre>'


def _secs(seconds: float | None) -> str:
    """Seconds as the console prints them (``0.19 s``: two decimals, whatever the size)."""
    if seconds is None:
        return "—"
    return f"{seconds:.2f} s"


def _step_cell(s: StepRun) -> str:
    """The step column: its label in the `.flow`'s terms over its path, or the path alone."""
    path = f"<code>{_e(s.path)}</code>"
    return f"{_e(s.label)}<div class='muted'>{path}</div>" if s.label else path


def _badge(status: str) -> str:
    return f'<span class="badge {_e(status)}">{_e(status)}</span>'


_STEP_COLUMNS = (
    "step", "tool", "stage", "status", "start", "time", "inferences", "tokens", "cost", "source"
)  # fmt: skip
_NUMERIC = frozenset({"start", "time", "inferences", "tokens", "cost"})
_NUM = ' class="num"'


def _tokens(usage: Mapping[str, Any], unit: str = "") -> str:
    """``IN→OUT`` of a usage record or a ``model_call``, saying the calls whose usage is
    unknown (not reported, or not counts) as the console does: ``not reported`` for a call
    that gave none, ``unknown`` when no call of a record reported a count, ``IN→OUT (1
    unknown)`` otherwise — never a silent ``0→0`` (docs/models.md "Usage").  ``unit``: put
    after the counts (`` tokens``)."""
    if usage.get("usage_reported") is False:
        return "usage not reported"
    tokens = f"{_n(usage.get('input_tokens', 0))}→{_n(usage.get('output_tokens', 0))}{unit}"
    unknown = usage.get("usage_unknown")
    if unknown is True:  # one call's
        return f"{tokens} (unknown)"
    if isinstance(unknown, int) and not isinstance(unknown, bool) and unknown > 0:
        if unknown >= (usage.get("inferences") or 0) and not usage.get("input_tokens"):
            return "unknown"
        return f"{tokens} ({_n(unknown)} unknown)"
    return tokens


def _usage_values(usage: Mapping[str, Any]) -> list[str]:
    """The inferences, tokens and cost cells' text of a step's usage."""
    inf = usage.get("inferences") or 0
    tok = _tokens(usage) if inf else ""
    cost = usage.get("cost")
    cost_text = f"${cost:.4f}" if isinstance(cost, int | float) else ""
    return [_n(inf or ""), tok, _e(cost_text)]


def outcomes_of(plan: Any, events: list[Mapping[str, Any]]) -> dict[str, Any]:
    """``{graph node id: NodeOutcome}`` of a run's trace ``events`` over ``plan``'s graph."""

    return dict(outcomes_from_events(events, plan))


def graph_section(plan: Any, outcomes: Mapping[str, Any] | None, *, heading: str = "h2") -> str:
    """The ``<section id="graph">`` of a report or a ``flowc ui`` run page: ``plan``'s graph as
    inline SVG coloured by ``outcomes`` (:mod:`agentflow.ir.graph_svg`), in a scrolling frame,
    with its text alternative (an ordered list) in a ``<details>`` below it."""

    graph = build_graph(plan)
    svg = to_svg(graph, outcomes, title=f"graph of {plan.name}", described_by="graph-text-summary")
    legend = ""
    if outcomes is not None:
        used = {str(getattr(o, "status", "")) for o in outcomes.values()}
        if any(
            n.id not in outcomes
            for n in graph.nodes
            if n.path and n.kind not in ("input", "finish", "tool")
        ):
            used.add("skipped")
        legend = '<ul class="graph-legend" aria-label="colours of the graph">' + "".join(
            f'<li><i style="background:{fill};border-color:{stroke}"></i>{_e(word)}</li>'
            for status, (fill, stroke, word) in STATUS_STYLE.items()
            if status in used
        ) + "</ul>"  # fmt: skip
    steps = sum(1 for n in graph.nodes if n.path and n.kind not in ("input", "finish", "tool"))
    return (
        f'<section id="graph"><{heading}>Graph</{heading}>{legend}'
        f'<div class="graph" tabindex="0" role="region" aria-label="graph of {_e(plan.name)}">'
        f"{svg}</div>"
        f'<details class="graph-alt"><summary id="graph-text-summary">The graph as text: '
        f"{steps} step(s) of {_e(plan.name)}, top to bottom</summary>"
        f"{text_alternative(graph, outcomes)}</details></section>"
    )


class _Report:
    def __init__(self, view: RunView, plan: Any, source: str | None, source_name: str | None):
        self.view = view
        self.plan = plan
        self.source_lines = source_lines(source) if source else None
        self.source_name = source_name
        self.events: list[
            Mapping[str, Any]
        ] = []  # the trace's events (the graph's outcome colours)
        self.t0 = view.start or min((s.start for s in view.steps), default=0.0)
        self.span = max((view.end or self.t0) - self.t0, 0.001)
        self.expect: dict[str, str] = {}
        if plan is not None:
            for path, step in plan.iter_steps():
                meta = step.meta if isinstance(step.meta, dict) else {}
                if meta.get("expect"):
                    self.expect[path] = str(meta["expect"])

    def location(self, source: str | None) -> str:
        """``file:line:col`` and, when the `.flow` text is known, the line with a caret."""
        return source_caret(source, self.source_lines)

    # -- sections
    def header(self) -> str:
        v = self.view
        usage = v.usage or {}
        facts = [
            f"status {_badge(v.status)}",
            f"time {_secs((v.end or v.start) - v.start) if v.start else '—'}",
            f"steps {len(v.steps)}",
            f"inferences {_n(usage.get('inferences', 0))}",
            f"tokens {_tokens(usage)}",
        ]
        if isinstance(usage.get("cost"), int | float):
            facts.append(f"cost ${usage['cost']:.4f}")
        if v.start:
            try:
                when = _dt.datetime.fromtimestamp(v.start, tz=_dt.UTC)
            except (ValueError, OverflowError, OSError):  # a time no clock gives (a NaN)
                when = None
            if when is not None:
                facts.append(f"started {when.strftime('%Y-%m-%d %H:%M:%S UTC')}")
        if v.file:
            facts.append(f"file <code>{_e(v.file)}</code>")
        spans = "".join(f"<span>{f}</span>" for f in facts)
        return (
            f"<header><h1>run <code>{_e(v.plan or '?')}</code></h1>"
            f'<div class="facts">{spans}</div></header>'
            '<nav><a href="#errors">errors</a><a href="#graph">graph</a><a href="#steps">steps</a>'
            '<a href="#timeline">timeline</a><a href="#agents">agents</a>'
            '<a href="#output">output</a></nav>'
        )

    def errors(self) -> str:
        v = self.view
        boxes = []
        if v.error:
            # named as the console names it: `in a › require (step E0)`
            label, path = v.error.get("label"), v.error.get("step_path")
            what = "the run"
            if label and path:
                what = f"the run, in {label} (step {path})"
            elif path:
                what = f"the run, at step {path}"
            boxes.append(self.error_box(what, v.error, v.error.get("source")))
        for s in v.steps:
            if s.error and not (v.error and v.error.get("step_path") == s.path):
                what = f"step {s.label} ({s.path})" if s.label else f"step {s.path}"
                boxes.append(self.error_box(what, s.error, s.error.get("source") or s.source))
        for call in v.calls:
            if call.kind == "tool" and call.error:
                owner = v.step(call.owner)
                what = f"tool call {call.path}"
                if "/agent." in call.path:
                    what += " (the error went back to the agent)"
                boxes.append(self.error_box(what, call.error, owner.source if owner else None))
        body = "".join(boxes) or '<p class="muted">no errors</p>'
        return f'<section id="errors"><h2>Errors</h2>{body}</section>'

    def error_box(self, what: str, error: Mapping[str, Any], source: Any) -> str:
        return (
            f'<div class="error-box"><div><b>{_e(what)}</b>: <code>{_e(error.get("code", "error"))}'
            f"</code> — {_e(error.get('message', ''))}</div>"
            f"{self.location(str(source) if source else None)}</div>"
        )

    def graph(self) -> str:
        if self.plan is None:
            return (
                '<section id="graph"><h2>Graph</h2><p class="muted">the flow that ran was not '
                "found (pass it with <code>--plan</code>), so its graph is left out</p></section>"
            )
        return graph_section(self.plan, outcomes_of(self.plan, self.events))

    def steps_table(self) -> str:
        rows = []
        for s in self.view.steps:
            cls = "item" if s.item is not None else "step"
            start = s.start - self.t0
            took = s.took
            code = f" <code>{_e(s.error.get('code', 'error'))}</code>" if s.error else ""
            cells = [
                _step_cell(s),
                _e(s.tool),
                _e(s.stage or ""),
                f"{_badge(s.status)}{code}",
                _secs(start),
                _secs(took),
                *_usage_values(s.usage),
                f"<code>{_e(s.source or '')}</code>",
            ]
            tds = "".join(
                f'<td data-label="{name}"{_NUM if name in _NUMERIC else ""}>{cell}</td>'
                for name, cell in zip(_STEP_COLUMNS, cells, strict=True)
            )
            rows.append(
                f'<tr class="{cls}" data-path="{_e(s.path)}" data-status="{_e(s.status)}">'
                f"{tds}</tr>"
            )
        head = "".join(f'<th scope="col">{name}</th>' for name in _STEP_COLUMNS)
        return (
            '<section id="steps"><h2>Steps</h2><table id="steps-table" class="stack">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
        )

    def pct(self, t: float) -> float:
        return max(0.0, min(100.0, (t - self.t0) / self.span * 100))

    def bar(self, cls: str, start: float, end: float, title: str) -> str:
        left = self.pct(start)
        width = max(self.pct(end) - left, 0.15)
        return (
            f'<div class="bar {cls}" style="left:{left:.3f}%;width:{width:.3f}%" '
            f'title="{_e(title)}"></div>'
        )

    def timeline(self) -> str:
        by_owner: dict[str, list[Call]] = {}
        for call in self.view.calls:
            by_owner.setdefault(call.owner, []).append(call)
        rows = []
        for s in self.view.steps:
            end = s.end if s.end is not None else (self.view.end or s.start)
            cls = "error" if s.status in ("error", "aborted") else ""
            bars = [
                self.bar(
                    f"step {cls}",
                    s.start,
                    end,
                    f"{s.path} {s.tool}: {_secs(s.took if s.took is not None else end - s.start)}",
                )
            ]
            for call in by_owner.get(s.path, []):
                label = (
                    f"model {call.name} ({call.data.get('role', 'chat')}): {_secs(call.end - call.start)}"
                    if call.kind == "model"
                    else f"tool {call.name}: {_secs(call.end - call.start)}"
                )
                bars.append(self.bar(call.kind, call.start, call.end, label))
            item = ' data-item="1"' if s.item is not None else ""
            rows.append(
                f'<div class="row"{item}><div class="label" title="{_e(s.path)} {_e(s.tool)}">'
                f"{_e(s.name)} <span class='muted'>{_e(s.tool)}</span></div>"
                f'<div class="lane">{"".join(bars)}</div></div>'
            )
        axis = "".join(f"<span>{_secs(self.span * k / 4)}</span>" for k in range(5))
        legend = (
            '<div class="legend"><span><i style="background:var(--step)"></i>step</span>'
            '<span><i style="background:var(--model)"></i>model call</span>'
            '<span><i style="background:var(--tool)"></i>tool call</span>'
            '<span><i style="background:var(--err)"></i>failed step</span></div>'
        )
        return (
            f'<section id="timeline"><h2>Timeline</h2>{legend}<div class="gantt">'
            f'<div class="axis">{axis}</div>{"".join(rows)}</div></section>'
        )

    def agents(self) -> str:
        cards = [self.agent(s) for s in self.view.steps if s.tool == "agent"]
        body = "".join(cards) or '<p class="muted">no agent steps ran</p>'
        return f'<section id="agents"><h2>Agents</h2>{body}</section>'

    def agent(self, s: StepRun) -> str:
        inp = s.input if isinstance(s.input, dict) else {}
        calls = [c for c in self.view.calls if c.owner == s.path]
        warnings = [w for w in self.view.warnings if w.get("path") == s.path]
        rounds = sorted({c.round for c in calls if c.round is not None})
        parts = [
            f"<div class='msg'><span class='who'>agent</span><code>{_e(inp.get('agent') or '')}</code>"
            f" · model <code>{_e(inp.get('model') or '')}</code> · tools "
            f"{_e(', '.join(str(t) for t in _as_list(inp.get('tools'))) or 'none')}</div>"
        ]
        if inp.get("system_prompt"):
            parts.append(
                f"<div class='msg'><span class='who'>system</span>{_pre(inp['system_prompt'])}</div>"
            )
        parts.append(
            f"<div class='msg'><span class='who'>task</span>{_pre(inp.get('prompt', ''))}</div>"
        )
        if inp.get("input") is not None:
            parts.append(
                f"<div class='msg'><span class='who'>input</span>{_pre(inp['input'])}</div>"
            )
        if s.input_preview:  # cut by the trace, not by the run: the agent had all of it
            parts.append(
                "<p class='muted'>a preview: the step's input was too large for the trace to "
                "hold whole (lists cut to 10 items, texts to 200 characters); the agent had "
                "all of it</p>"
            )
        for number in rounds:
            parts.append(self.agent_round(number, calls, warnings))
        parts.append(self.contract_check(s))
        title = (
            f"{_e(s.name)} · {_e(inp.get('agent') or 'agent')} · {len(rounds)} agent turn(s) "
            f"{_badge(s.status)}"
        )
        return f'<details class="agent" open data-path="{_e(s.path)}"><summary>{title}</summary>{"".join(parts)}</details>'

    def agent_round(self, number: int, calls: list[Call], warnings: list[dict[str, Any]]) -> str:
        out = [f'<div class="round" data-round="{number}"><h3>agent turn {number}</h3>']
        for call in [c for c in calls if c.kind == "model" and c.round == number]:
            d = call.data
            out.append(
                f"<div class='muted'>{_e(d.get('role') or 'chat')} · <code>{_e(call.name)}</code> · "
                f"{_secs(call.end - call.start)} · {_tokens(d, ' tokens')} "
                f"· finish <code>{_e(d.get('finish_reason') or '')}</code></div>"
            )
            reply = _as_dict(d.get("reply"))
            if reply.get("text"):
                out.append(
                    f"<div class='msg'><span class='who'>reply</span>{_pre(reply['text'])}</div>"
                )
            for tc in _as_list(reply.get("tool_calls")):
                tc = _as_dict(tc)
                out.append(
                    f"<div class='msg'><span class='who'>calls</span><code>{_e(tc.get('name'))}</code>"
                    f"{_pre(tc.get('arguments'))}</div>"
                )
        for call in [c for c in calls if c.kind == "tool" and c.round == number]:
            failed = " failed" if call.error else ""
            result = (
                f"<code>{_e(call.error.get('code', 'error'))}</code> {_e(call.error.get('message'))}"
                if call.error
                else _pre(call.data.get("result"))
            )
            out.append(
                f'<div class="call{failed}"><b>{_e(call.name)}</b> '
                f"<span class='muted'>{_secs(call.end - call.start)}</span>"
                f"{_pre(call.data.get('input'))}<div>→ {result}</div></div>"
            )
        for w in [w for w in warnings if w.get("round") == number]:
            out.append(f"<div class='warning-line'>⚠ {_e(w.get('message', ''))}</div>")
        out.append("</div>")
        return "".join(out)

    def contract_check(self, s: StepRun) -> str:
        pattern = re.sub(r"/do\.\d+", "/do", s.path)
        expect = self.expect.get(pattern) or self.expect.get(s.path) or "the output_schema"
        if s.status == "ok":
            result = s.result
            return (
                f'<div class="check ok">✓ the answer conforms to <code>{_e(expect)}</code></div>'
                f"{_pre(result)}"
            )
        if s.error:
            return (
                f'<div class="check bad">✗ <code>{_e(s.error.get("code", "error"))}</code> '
                f"{_e(s.error.get('message', ''))}</div>"
            )
        return f'<div class="check">{_badge(s.status)}</div>'

    def output(self) -> str:
        v = self.view
        if v.status in ("ok", "exited"):
            body = _pre(v.output)
        else:
            body = f'<p class="muted">no output: the run ended with status {_badge(v.status)}</p>'
        return f'<section id="output"><h2>Output</h2>{body}</section>'


def build_report(
    events: Iterable[Mapping[str, Any]],
    *,
    plan: Any = None,
    source: str | None = None,
    source_name: str | None = None,
    title: str | None = None,
) -> str:
    """The HTML report (one self-contained page) of the run whose trace ``events`` are given
    (dicts as :func:`agentflow.runtime.events.read_trace` returns them). ``plan``: the loaded
    :class:`~agentflow.ir.models.Plan` that ran (draws the graph and names contract types);
    ``source``: its `.flow` text (shows error lines); ``title``: the page title."""
    events = list(events)
    view = read_run(events)
    report = _Report(view, plan, source, source_name)
    report.events = events
    body = "".join(
        [
            report.header(),
            "<main>",
            report.errors(),
            report.graph(),
            report.steps_table(),
            report.timeline(),
            report.agents(),
            report.output(),
            "</main>",
        ]
    )
    assets = resources.files("agentflow.runtime") / "report_assets"
    page = (assets / "report.html").read_text(encoding="utf-8")

    values = {
        "title": _e(title or f"agentflow run {view.plan}"),
        "version": _e(__version__),
        "body": body,
        "css": report_css(),
    }
    # one pass: a `{{…}}` inside the inserted text (a trace's content) is never substituted;
    # a lone surrogate a trace may hold (its JSON escape) is U+FFFD in a page, which is UTF-8
    return clean_text(re.sub(r"\{\{(\w+)\}\}", lambda m: values.get(m.group(1), m.group(0)), page))


def source_caret(source: str | None, lines: list[str] | None) -> str:
    """HTML of a `.flow` position ``file:line:col``: the position, and when the file's
    ``lines`` are known, its line with a caret under the column ("" without a position)."""
    if not source:
        return ""
    out = f"<div>at <code>{_e(source)}</code></div>"
    m = _SOURCE.match(str(source))
    if m and lines is not None:
        line, col = int(m.group("line")), int(m.group("column"))
        if 1 <= line <= len(lines):
            caret = " " * max(col - 1, 0) + "^"
            out += (
                f'<pre tabindex="0" class="caret">{line:>4} | {_e(lines[line - 1])}\n'
                f"     | {_e(caret)}</pre>"
            )
    return out


def report_css() -> str:
    """The report's style sheet (``report_assets/report.css``), which ``flowc ui`` shares."""
    return (resources.files("agentflow.runtime") / "report_assets" / "report.css").read_text(
        encoding="utf-8"
    )


def _whole(tool: str, data: Mapping[str, Any]) -> str | None:
    """``item`` / ``round`` for an event of a map item's / loop round's sub-plan call (what the
    `.flow` calls it: :func:`~agentflow.runtime.where.outlined_call`), else None."""
    whole = outlined_call(tool, data.get("label"))
    return whole.split(" ", 1)[0] if whole else None


def _as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping (an event field), else an empty one."""
    return value if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    """``value`` when it is a list (an event field), else an empty one."""
    return value if isinstance(value, list) else []


def _as_error(value: Any) -> dict[str, Any]:
    """An event's ``error`` as the ``{code, message, …}`` the page shows: ``value`` when it is
    a mapping, else ``{"message": value}`` (a trace written by hand; shown with code ``error``)."""
    return value if isinstance(value, dict) else {"message": str(value)}


def conversation_html(events: Iterable[Mapping[str, Any]]) -> str:
    """The agents' conversations of one run (the report's "Agents" section) as HTML, for a page
    that embeds runs (the eval page, :mod:`agentflow.evals.html`); ``events`` as for
    :func:`build_report`."""
    return _Report(read_run(list(events)), None, None, None).agents()
