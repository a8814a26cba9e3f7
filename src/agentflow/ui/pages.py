"""The HTML of ``flowc ui``'s pages (docs/reference/ui.md): the runs list and a run's page,
plain HTML rendered here from the :mod:`agentflow.api` functions' results, styled by the run
report's sheet (``runtime/report_assets/report.css``) plus ``assets/ui.css``, with
``assets/ui.js`` (live updates over Server-Sent Events) inline: a page fetches nothing but
itself.

A waiting question's form is generated from its type: choices are radio buttons, a yes/no
question two radio buttons, a number a number field (with the schema's bounds), a text a text
field, anything else a JSON text area.  Whatever the form sends is checked on the server by the
same function as ``flowc answer`` (:func:`agentflow.api.answer_durable`)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from agentflow.core import version as core_version
from agentflow.core.text import html_number, html_text, source_lines
from agentflow.core.vocabulary import seconds_text
from agentflow.ir.graph import NodeOutcome, build_graph, node_for_path
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.report import graph_section, json_text, report_css, source_caret

__all__ = [
    "STATUSES",
    "durable_outcomes",
    "page",
    "question_form",
    "run_page",
    "runs_page",
]

#: the statuses the runs list can be filtered by (runtime/durable/runs.py RunInfo)
STATUSES = (
    "running", "waiting", "stopped", "ok", "exited", "error", "aborted", "cancelled", "unreadable"
)  # fmt: skip
#: run statuses a cancel applies to, and those a resume or a redrive does
CANCELLABLE = frozenset({"running", "waiting", "stopped"})
RESUMABLE = frozenset({"stopped"})
#: (a run that has ended can also be run again from its edited file, reusing its steps)
REDRIVABLE = frozenset({"error", "aborted", "cancelled"})


def _e(value: Any) -> str:
    """``value`` as text fit for the page's content or a double-quoted attribute value
    (:func:`agentflow.core.text.html_text`)."""
    return html_text(value)


def _v(value: Any) -> str:
    """A form's value (what was typed, a step path, a token), escaped as :func:`_e` escapes
    but never cut: the form sends it back."""
    return html_text(value, limit=None)


def run_url(run_id: str, tail: str = "") -> str:
    """The console's address of run ``run_id`` (``/runs/ID``, the id percent-encoded) + ``tail``."""
    from urllib.parse import quote

    return f"/runs/{quote(run_id, safe='~')}{tail}"


def _asset(name: str) -> str:
    return (resources.files("agentflow.ui") / "assets" / name).read_text(encoding="utf-8")


def page(
    title: str,
    body: str,
    *,
    live: str | None = None,
    version: str = "",
    heading: str = "",
    here: str | None = None,
) -> str:
    """A whole page: ``body`` under a header with ``heading`` (default ``title``) and the
    console's navigation; ``live``: the URL of its Server-Sent Events (the page refreshes its
    ``<main>`` when they say the state moved past ``version``)."""
    live_attr = f' data-live="{_e(live)}" data-version="{_e(version)}"' if live else ""
    if here:  # the page's own address (a refused form's answer is shown at the form's)
        live_attr += f' data-page="{_e(here)}"'
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="agentflow {_e(core_version.__version__)}">'
        f"<title>{_e(title)} · flowc ui</title><style>{report_css()}\n{_asset('ui.css')}</style>"
        f"</head><body{live_attr}><header><h1>{heading or _e(title)}</h1></header>"
        '<nav aria-label="console"><a href="/">runs</a></nav>'
        '<p id="live-status" class="visually-hidden" role="status"></p>'
        f"{body}<script>{_asset('ui.js')}</script></body></html>"
    )


def _when(epoch: float | None) -> str:
    if not epoch:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def _duration(info: Any, now: float | None = None) -> str:
    """How long a run has taken, as ``flowc run`` says it (:func:`seconds_text`, in the run
    list and on the run's page alike): the time its process measured once ended (a run that
    recorded none: start to last change), start to now while on."""
    if getattr(info, "duration_ms", None) is not None and info.status not in CANCELLABLE:
        return seconds_text(info.duration_ms / 1000)
    if not info.created_at:
        return "—"
    ongoing = info.status in CANCELLABLE
    end = (now or time.time()) if ongoing else (info.updated_at or info.created_at)
    return seconds_text(max(0.0, end - info.created_at))


def money(cost: Mapping[str, Any]) -> str:
    """A run's cost as money (``$0.0012``), or ``—`` when its model calls had no price."""
    value = cost.get("cost")
    if not isinstance(value, int | float):
        return "—"
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def _closed(q: Any) -> str:
    """How a question its run has not taken yet was closed: ``answered "ship"``."""
    if q.closed == "answer":
        return "answered " + json.dumps(q.answer, ensure_ascii=False)
    return "closed unanswered"


def _badge(status: str) -> str:
    return f'<span class="badge {_e(status)}">{_e(status)}</span>'


def _csrf(token: str) -> str:
    return f'<input type="hidden" name="csrf" value="{_v(token)}">'


# ------------------------------------------------------------------------------- runs list


def runs_page(
    runs: list[Any],
    costs: Mapping[str, Mapping[str, Any]],
    *,
    status: str = "",
    flow: str = "",
    database: str = "",
    version: str = "",
    more: str = "",
) -> str:
    """The runs list: a filter form (status, flow name) and one row per run of ``runs``
    (:class:`~agentflow.runtime.durable.run_info.RunInfo`, newest first) with its status, flow,
    start, duration, cost (``costs`` by run id) and waiting questions; ``more``: a line under
    the table saying what the page leaves out."""
    options = '<option value="">any</option>' + "".join(
        f'<option value="{s}"{" selected" if s == status else ""}>{s}</option>' for s in STATUSES
    )
    form = (
        '<form class="filters" method="get" action="/" role="search" aria-label="filter runs">'
        f'<label for="f-status">status</label><select id="f-status" name="status">{options}'
        '</select><label for="f-flow">flow</label>'
        f'<input id="f-flow" name="flow" value="{_v(flow)}" placeholder="name contains">'
        '<button type="submit">filter</button></form>'
    )
    rows = []
    for r in runs:
        cost = costs.get(r.run_id, {})
        asks = "".join(
            f'<div class="ask-line">? {_e(q.question)}</div>' for q in getattr(r, "questions", [])
        ) + "".join(
            f'<div class="ask-line">✓ {_e(q.question)} {_e(_closed(q))}</div>'
            for q in getattr(r, "answered", [])
        )
        rows.append(
            f'<tr data-run="{_e(r.run_id)}" data-status="{_e(r.status)}">'
            f'<td data-label="run"><a href="{_e(run_url(r.run_id))}">{_e(r.run_id)}</a>{asks}</td>'
            f'<td data-label="status">{_badge(r.status)}</td>'
            f'<td data-label="flow">{_e(r.plan or "—")}</td>'
            f'<td data-label="started" class="num">{_e(_when(r.created_at))}</td>'
            f'<td data-label="duration" class="num">{_e(_duration(r))}</td>'
            f'<td data-label="inferences" class="num">{html_number(cost.get("inferences", 0))}</td>'
            f'<td data-label="cost" class="num">{_e(money(cost))}</td></tr>'
        )
    head = "".join(
        f'<th scope="col">{h}</th>'
        for h in ("run", "status", "flow", "started", "duration", "inferences", "cost")
    )
    table = (
        f'<table id="runs" class="stack"><caption class="visually-hidden">durable runs, newest '
        f"first</caption><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows
        else '<p class="muted">no durable runs'
        + (" match the filter" if status or flow else "")
        + "</p>"
    )
    body = (
        f'<main><section><h2>Runs</h2><p class="muted">database <code>{_e(database)}</code></p>'
        f"{form}{table}"
        + (f'<p class="muted" id="more-runs">{_e(more)}</p>' if more else "")
        + "</section></main>"
    )
    return page("durable runs", body, live="/events", version=version, here="/")


# ------------------------------------------------------------------------------- a run


def question_form(q: Any, csrf: str, *, value: str = "", problem: str | None = None) -> str:
    """The form answering waiting question ``q`` (a
    :class:`~agentflow.runtime.durable.run_info.Question`), its field generated from the
    question's choices and JSON Schema; ``value``: what was typed before, ``problem``: why the
    server refused it."""
    schema = q.schema if isinstance(q.schema, dict) else {}
    kind = schema.get("type")
    fid = "q-" + "".join(c if c.isalnum() else "-" for c in q.path)
    label = _e(q.question)
    hint = ""
    if q.choices:
        field = _radios(fid, [(c if isinstance(c, str) else json.dumps(c), c) for c in q.choices],
                        value)  # fmt: skip
        control = f"<fieldset><legend>{label}</legend>{field}</fieldset>"
    elif kind == "boolean":
        field = _radios(fid, [("true", "yes"), ("false", "no")], value)
        control = f"<fieldset><legend>{label}</legend>{field}</fieldset>"
    elif kind in ("integer", "number"):
        bounds = "".join(
            f' {attr}="{_e(schema[key])}"'
            for key, attr in (("minimum", "min"), ("maximum", "max"))
            if isinstance(schema.get(key), int | float)
        )
        # step "any": the server checks the type (as `flowc answer` does) and says why; a
        # browser's own check would count steps from a refused value shown again
        mode = "numeric" if kind == "integer" else "decimal"
        control = (
            f'<label for="{fid}">{label}</label><input id="{fid}" name="value" type="number" '
            f'step="any" inputmode="{mode}"{bounds} required value="{_v(value)}">'
        )
    elif kind == "string" or not schema:
        limit = schema.get("maxLength")
        extra = f' maxlength="{limit}"' if isinstance(limit, int) else ""
        control = (
            f'<label for="{fid}">{label}</label><input id="{fid}" name="value" type="text"'
            f'{extra} value="{_v(value)}" autocomplete="off">'
        )
    else:
        hint = f'<p class="muted" id="{fid}-hint">a JSON value of type {_e(kind or "any")}</p>'
        control = (
            f'<label for="{fid}">{label}</label><textarea id="{fid}" name="value" rows="4" '
            f'aria-describedby="{fid}-hint">{_v(value)}</textarea>'
        )
    said = (
        f'<p class="form-problem" role="alert" id="{fid}-problem">{_e(problem)}</p>'
        if problem
        else ""
    )
    # the question as the .flow names it, its step path after (docs/reference/ui.md)
    where = f"{_e(q.label)} · " if q.label else ""
    late = (
        " · its timeout ran out: the run goes on unanswered when it is taken up, unless "
        "answered before"
        if q.timed_out
        else ""
    )
    return (
        f'<form class="question" method="post" action="{_e(run_url(q.run_id, "/answer"))}" '
        f'data-step="{_e(q.path)}"><p class="muted">asked at {where}<code>{_e(q.path)}</code>'
        f" {_e(_when(q.asked_at))}{late}</p>{said}{control}{hint}"
        f'<input type="hidden" name="step" value="{_v(q.path)}">{_csrf(csrf)}'
        '<button type="submit">answer</button></form>'
    )


def _radios(fid: str, options: list[tuple[str, Any]], chosen: str) -> str:
    out = []
    for i, (value, shown) in enumerate(options):
        checked = " checked" if value == chosen else ""
        text = shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False)
        out.append(
            f'<div class="choice"><input type="radio" id="{fid}-{i}" name="value" '
            f'value="{_v(value)}" required{checked}><label for="{fid}-{i}">{_e(text)}</label></div>'
        )
    return "".join(out)


def durable_outcomes(plan: Any, info: Any) -> dict[str, Any]:
    """``{graph node id: NodeOutcome}`` of a durable run's recorded operations (``info``:
    :func:`agentflow.api.show_durable_run`): a node with an operation that failed is
    ``error``, one waiting on a question ``waiting``, one with an operation under way while
    the run is on ``running``, one with finished operations (or holding such a node: a map and
    its items) ``ok``; the run's error names its failing step; other steps ``unrecorded``."""
    graph = build_graph(plan)
    root = plan.name
    out: dict[str, NodeOutcome] = {}

    def node(path: str) -> str | None:
        parts = path.split("/")
        cut = next((i for i, p in enumerate(parts) if p.startswith("agent.")), len(parts))
        if not cut:
            return None
        return node_for_path("/".join(parts[:cut]), _stack_of(plan, parts[:cut]), root)

    def mark(path: str, status: str, *, elapsed: float = 0.0, inference: bool = False) -> None:
        parts = path.split("/")
        for i in range(len(parts), 0, -1):  # the step, and each step holding it
            nid = node("/".join(parts[:i]))
            if nid is None:
                continue
            o = out.setdefault(nid, NodeOutcome(status="ok"))
            if i == len(parts):
                o.runs += 1
                o.elapsed_ms += elapsed
                o.inferences += int(inference)
                rank = ["ok", "running", "waiting", "error"]
                if rank.index(status) > rank.index(o.status if o.status in rank else "ok"):
                    o.status = status
            elif status in ("running", "waiting") and o.status == "ok":
                o.status = "running"

    on = info.status in CANCELLABLE
    for s in info.steps:
        if s.get("internal") or not s.get("path"):
            continue
        start, end = s.get("started_at"), s.get("finished_at")
        took = (end - start) * 1000 if start and end else 0.0
        stopped = s.get("status") == "interrupted" and isinstance(s.get("error"), dict)
        if s.get("status") == "error" or stopped:
            # a failed operation, or a step the run's end stopped (an `ask` waiting when the
            # run was cancelled: `✗ … aborted`, as `flowc run` says it)
            status = "error"
        elif end is None and on and s.get("status") != "unanswered":
            status = "running"
        else:
            status = "ok"
        mark(s["path"], status, elapsed=took, inference=str(s.get("kind", "")).startswith("model"))
        nid = node(s["path"]) if stopped else None
        if nid is not None and out[nid].error is None:
            out[nid].error = dict(s["error"])
    for q in info.questions:
        mark(q.path, "waiting")
    error = info.error or {}
    if error.get("step_path"):
        nid = node(str(error["step_path"]))
        if nid is not None:
            out.setdefault(nid, NodeOutcome()).status = "error"
            out[nid].error = dict(error)
    for n in graph.nodes:
        if n.path and n.kind not in ("input", "finish", "tool") and n.id not in out:
            out[n.id] = NodeOutcome(status="unrecorded")
    return out


def _stack_of(plan: Any, parts: list[str]) -> list[str]:
    """The plans a step path runs through (``[root, sub-plan, …]``): a body that calls a
    sub-plan (``plan__NAME``: an outlined ``try`` or loop body) puts the next segments in it
    (``E1/round.2/E0/do`` is step ``E0/do`` of the loop's sub-plan)."""
    stack = [plan.name]
    plans = dict(plan.plans or {})
    steps = {s.id: s for s in plan.steps if s.id}
    step = None
    for seg in parts:
        if step is None or seg in steps and not seg.startswith(("do", "round")):
            step = steps.get(seg)
            if step is None:
                break
            continue
        label = "do" if seg.startswith(("do.", "round.")) else seg
        body = next((b for name, b in step.bodies() if name == label), None)
        if body is None:
            break
        step = body
        tool = str(body.tool_name or "")
        if tool.startswith("plan__") and tool.removeprefix("plan__") in plans:
            sub = plans[tool.removeprefix("plan__")]
            stack.append(sub.name)
            plans.update(sub.plans or {})
            steps = {s.id: s for s in sub.steps if s.id}
            step = None
    return stack


def _steps_table(info: Any) -> str:
    rows = []
    for s in info.steps:
        if s.get("internal"):
            continue
        start, end = s.get("started_at"), s.get("finished_at")
        took = seconds_text(end - start) if start and end else "—"
        status = "reused" if s.get("reused") else str(s.get("status", ""))
        what = _e(s.get("label") or s.get("path") or "(run)")
        err = s.get("error")
        code = f" <code>{_e(err.get('code'))}</code>" if isinstance(err, dict) and err else ""
        rows.append(
            f'<tr data-path="{_e(s.get("path", ""))}" data-status="{_e(status)}">'
            f'<td data-label="step">{what}<div class="muted"><code>{_e(s.get("path") or "")}'
            f"</code></div></td>"
            f'<td data-label="operation">{_e(s.get("kind") or s.get("operation", ""))}</td>'
            f'<td data-label="status">{_badge(status)}{code}</td>'
            f'<td data-label="started" class="num">{_e(_clock(start))}</td>'
            f'<td data-label="time" class="num">{took}</td></tr>'
        )
    if not rows:
        return '<section id="steps"><h2>Steps</h2><p class="muted">none recorded yet</p></section>'
    head = "".join(
        f'<th scope="col">{h}</th>' for h in ("step", "operation", "status", "started", "time")
    )
    return (
        '<section id="steps"><h2>Steps</h2><table id="steps-table" class="stack"><thead><tr>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _clock(epoch: float | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch)) if epoch else "—"


def _pre(value: Any) -> str:
    return f'<pre tabindex="0">{html_text(json_text(value), limit=None)}</pre>'


def _conversations(info: Any) -> str:
    """Each agent's recorded conversation: per model call its reply (text, tool calls), per
    tool call its result, in the order recorded."""
    agents: dict[str, list[dict[str, Any]]] = {}
    for s in info.steps:
        kind = str(s.get("kind") or "")
        path = str(s.get("path") or "")
        if kind.startswith("model"):
            agents.setdefault(path, []).append(s)
    if not agents:
        return ""
    for s in info.steps:
        path = str(s.get("path") or "")
        if str(s.get("kind") or "").startswith("tool"):
            owner = next((a for a in agents if path.startswith(a + "/")), None)
            if owner is not None:
                agents[owner].append(s)
    cards = []
    for path, ops in agents.items():
        ops.sort(key=lambda s: s.get("started_at") or 0.0)
        label = next((o.get("label") for o in ops if o.get("label")), None) or path
        parts = []
        for o in ops:
            value = o.get("value")
            kind = str(o.get("kind") or "")
            if kind.startswith("model"):
                reply = value if isinstance(value, dict) else {}
                used = reply.get("usage")
                usage: dict[str, Any] = used if isinstance(used, dict) else {}
                parts.append(
                    f'<div class="round"><h3>{_e(kind)}</h3><div class="muted">'
                    f"{html_number(usage.get('input_tokens', 0))}→"
                    f"{html_number(usage.get('output_tokens', 0))} tokens</div>"
                )
                if reply.get("text"):
                    parts.append(
                        f"<div class='msg'><span class='who'>reply</span>{_pre(reply['text'])}"
                        "</div>"
                    )
                calls = reply.get("tool_calls")
                for tc in calls if isinstance(calls, list) else []:
                    tc = tc if isinstance(tc, dict) else {}
                    parts.append(
                        f"<div class='msg'><span class='who'>calls</span>"
                        f"<code>{_e(tc.get('name'))}</code>{_pre(tc.get('arguments'))}</div>"
                    )
                parts.append("</div>")
            else:
                failed = " failed" if o.get("status") == "error" else ""
                result = o.get("error") if failed else value
                parts.append(
                    f'<div class="call{failed}"><b>{_e(kind)}</b> <span class="muted">'
                    f"<code>{_e(o.get('path'))}</code></span>{_pre(result)}</div>"
                )
        cards.append(
            f'<details class="agent" open data-path="{_e(path)}"><summary>{_e(label)} · '
            f"{sum(1 for o in ops if str(o.get('kind', '')).startswith('model'))} model call(s)"
            f"</summary>{''.join(parts)}</details>"
        )
    return f'<section id="agents"><h2>Agents</h2>{"".join(cards)}</section>'


def run_page(
    info: Any,
    spec: Mapping[str, Any],
    csrf: str,
    *,
    problems: Mapping[str, tuple[str, str]] | None = None,
    notice: str | None = None,
    version: str = "",
) -> str:
    """A run's page: its facts and the buttons that steer it (cancel, resume, redrive), its
    waiting questions as forms, its error with the `.flow` line under a caret, its graph
    coloured by what it recorded, its steps in the `.flow`'s terms with timings, each agent's
    conversation, its output.  ``problems``: ``{step: (typed value, why refused)}`` of answers
    the server refused; ``notice``: a line said at the top (what the last action did)."""
    from urllib.parse import urlencode

    plan = _plan(spec)
    rid = _e(info.run_id)
    cost = info.cost or {}
    facts = [
        f"status {_badge(info.status)}",
        f"flow <code>{_e(info.plan or '—')}</code>",
        f"started {_e(_when(info.created_at))}",
        f"duration {_e(_duration(info))}",
        f"inferences {html_number(cost.get('inferences', 0))}",
        f"tokens {html_number(cost.get('input_tokens', 0))}→"
        f"{html_number(cost.get('output_tokens', 0))}",
        f"cost {_e(money(cost))}",
    ]
    actions = []
    if info.status in CANCELLABLE:
        actions.append(_action(info.run_id, "cancel", "cancel the run", csrf))
    if info.status in RESUMABLE:
        actions.append(_action(info.run_id, "resume", "resume the run", csrf))
    if info.status in REDRIVABLE:
        actions.append(_action(info.run_id, "redrive", "redrive from its failed steps", csrf))
    if info.status not in CANCELLABLE and _edited_flow(spec) is not None:
        actions.append(
            _action(info.run_id, "reuse", f"run the edited {Path(str(spec['plan_file'])).name} again, "
                    "reusing this run's steps", csrf)
        )  # fmt: skip
    said = f'<p class="notice" role="status">{_e(notice)}</p>' if notice else ""
    head = (
        '<section id="run-facts" aria-label="the run"><div class="facts">'
        + "".join(f"<span>{f}</span>" for f in facts)
        + f'</div><div class="actions">{"".join(actions)}</div>{said}</section>'
    )
    questions = ""
    if info.questions:
        forms = "".join(
            question_form(
                q,
                csrf,
                value=(problems or {}).get(q.path, ("", ""))[0],
                problem=(problems or {}).get(q.path, ("", None))[1],
            )
            for q in info.questions
        )
        questions = f'<section id="questions"><h2>Waiting for an answer</h2>{forms}</section>'
    if info.answered:
        taken = " (the run takes it when it is resumed)" if info.status == "stopped" else ""
        items = "".join(
            f"<li>{_e(q.label or q.path)}: {_e(q.question)} — {_e(_closed(q))}{taken}</li>"
            for q in info.answered
        )
        questions += f'<section id="answered"><h2>Answered</h2><ul>{items}</ul></section>'
    lines = None
    file = spec.get("plan_file")
    if isinstance(file, str) and file.endswith(".flow") and Path(file).is_file():
        try:
            lines = source_lines(Path(file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            lines = None
    errors = ""
    if info.error:
        e = info.error
        path, label = e.get("step_path"), e.get("label")
        # the failed step as the .flow names it, its path after (as flowc run says it)
        where = f" in {_e(label)} (step {_e(path)})" if label and path else ""
        where = where or (f" at step {_e(path)}" if path else "")
        errors = (
            f'<section id="errors"><h2>Error</h2><div class="error-box"><div><code>'
            f"{_e(e.get('code'))}</code>{where} — {_e(e.get('message', ''))}</div>"
            f"{source_caret(e.get('source'), lines)}</div></section>"
        )
    graph = graph_section(plan, durable_outcomes(plan, info)) if plan is not None else ""
    output = ""
    if info.status in ("ok", "exited"):
        output = f'<section id="output"><h2>Output</h2>{_pre(info.output)}</section>'
    body = (
        f"<main>{head}{questions}{errors}{graph}{_steps_table(info)}{_conversations(info)}"
        f"{output}</main>"
    )
    return page(
        f"run {info.run_id}",
        body,
        live="/events?" + urlencode({"run": info.run_id}),
        version=version,
        heading=f"run <code>{rid}</code>",
        here=run_url(info.run_id),
    )


def _action(run_id: str, verb: str, text: str, csrf: str) -> str:
    return (
        f'<form method="post" action="{_e(run_url(run_id, "/" + verb))}" class="action">'
        f"{_csrf(csrf)}"
        f'<button type="submit" name="do" value="{verb}" class="{verb}">{_e(text)}</button></form>'
    )


def _edited_flow(spec: Mapping[str, Any]) -> Path | None:
    """The file a run was started from (its ``plan_file``) when it is still there: what
    "run the edited flow again" runs, with ``--reuse`` of the run."""
    file = spec.get("plan_file")
    if not isinstance(file, str) or not file.endswith((".flow", ".yaml", ".yml", ".json")):
        return None
    path = Path(file)
    return path if path.is_file() else None


def _plan(spec: Mapping[str, Any]) -> Any:
    """The plan recorded with a run, or None when it no longer loads."""
    text = spec.get("plan_text")
    if not isinstance(text, str):
        return None
    try:
        return load_plan_text(text, str(spec.get("plan_file") or "<durable>"))
    except Exception:  # noqa: BLE001 - the graph is left out; the rest of the page shows
        return None
