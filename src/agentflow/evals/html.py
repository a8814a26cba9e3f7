"""The HTML page of an eval (``flowc eval --html FILE``, :func:`agentflow.api.eval_page`;
docs/reference/evals.md "Reports").

One self-contained file with the run report's look (its template and styles,
``runtime/report_assets/report.html``; no graph, so no Mermaid): a header with what was
measured, the scorers' table per model (mean, pass rate, pass^k), the comparison with a baseline
when there is one, then every case run as a row — status, each scorer's score (a judge's reason
on hover), usage — with its conversation one click away: the row's ``conversation`` summary opens
the agents' rounds (the report's "Agents" section), the output and the error. Layer: api.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

from agentflow.core import version as core_version
from agentflow.core.text import clean_text, html_number, html_text
from agentflow.evals.report import Comparison, EvalReport
from agentflow.runtime.report import conversation_html, json_text, report_css

__all__ = ["build_page"]

_STYLE = """<style>
.evalcase td.score.pass { color: var(--ok); font-weight: 600; }
.evalcase td.score.fail { color: var(--err); font-weight: 600; }
.evalcase td.score.none { color: var(--muted); }
tr.drill > td { background: #fcfcfc; border-bottom: 2px solid var(--line); }
tr.drill details > summary { cursor: pointer; color: #37474f; }
.delta.regression { color: var(--err); } .delta.improvement { color: var(--ok); }
</style>"""


def _e(value: Any) -> str:
    """``value`` as text fit for the page's content or a double-quoted attribute value
    (:func:`agentflow.core.text.html_text`)."""
    return html_text(value)


def _pre(value: Any) -> str:
    # as the run report shows a value (cut at its SHOW_CHARS), focusable as its are
    return f'<pre tabindex="0">{html_text(json_text(value), limit=None)}</pre>'


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:.0f}%"


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def build_page(report: EvalReport, comparison: Comparison | None = None) -> str:
    """The page (see the module docstring) as text."""
    passed = sum(1 for r in report.runs if r.passed)
    facts = [
        f"<span>flow <code>{_e(report.flow)}</code></span>",
        f"<span>{passed} of {len(report.runs)} case runs passed</span>",
        f"<span>models {_e(', '.join(report.models))}</span>",
        f"<span>repeat {report.repeat}</span>",
        f"<span>{_e(report.requests_text())}</span>",
    ]
    parts = [
        f'<header><h1>eval "{_e(report.name)}"</h1><div class="facts">{"".join(facts)}</div>'
        "</header>",
        '<nav><a href="#scorers">Scorers</a><a href="#cases">Cases</a>'
        + ('<a href="#baseline">Baseline</a>' if comparison is not None else "")
        + "</nav><main>",
        _scorers(report),
    ]
    if comparison is not None:
        parts.append(_baseline(comparison))
    names = list(report.scorers)
    head = "".join(f"<th>{_e(n)}</th>" for n in names)
    rows = []
    for index, run in enumerate(report.runs):
        cells = []
        for name in names:
            s = run.scores.get(name)
            if s is None or s.passed is None:
                reason = s.reason if s is not None else ""
                cells.append(f'<td class="score none" title="{_e(reason or "")}">—</td>')
                continue
            cls = "pass" if s.passed else "fail"
            cells.append(
                f'<td class="num score {cls}" title="{_e(s.reason or "")}">{_num(s.score)}</td>'
            )
        status = "ok" if run.passed else "error"
        cost = run.usage.get("cost")
        cost_text = f"${cost:.4f}" if isinstance(cost, int | float) and cost else ""
        rows.append(
            f'<tr class="evalcase" id="run-{index}" data-case="{_e(run.case)}" '
            f'data-model="{_e(run.model)}" data-repeat="{_e(run.repeat)}" '
            f'data-passed="{str(run.passed).lower()}">'
            f"<td>{_e(run.case)}<div class='muted'>{_e(run.file)}:{_e(run.line)}</div></td>"
            f"<td>{_e(run.model)}</td><td class='num'>{_e(run.repeat + 1)}</td>"
            f'<td><span class="badge {status}">{_e(run.status)}</span></td>{"".join(cells)}'
            f"<td class='num'>{html_number(run.usage.get('inferences', 0))}</td>"
            f"<td class='num'>{_e(run.duration_ms)} ms</td>"
            f"<td class='num'>{_e(cost_text)}</td></tr>"
        )
        detail = [conversation_html(run.events)]
        detail.append(f"<h4>input</h4>{_pre(run.input)}")
        if run.expected is not None:
            detail.append(f"<h4>expected</h4>{_pre(run.expected)}")
        if run.error:
            detail.append(
                f'<div class="error-box"><code>{_e(run.error.get("code"))}</code> '
                f"{_e(run.error.get('message', ''))}</div>"
            )
        else:
            detail.append(f"<h4>output</h4>{_pre(run.output)}")
        reasons = [
            f"<li><b>{_e(n)}</b>: {_num(s.score)} {_e(s.reason or '')}</li>"
            for n, s in run.scores.items()
        ]
        detail.append(f"<h4>scores</h4><ul>{''.join(reasons)}</ul>")
        span = 7 + len(names)
        rows.append(
            f'<tr class="drill" data-run="run-{index}"><td colspan="{span}">'
            f'<details class="conversation"><summary>conversation</summary>{"".join(detail)}'
            "</details></td></tr>"
        )
    parts.append(
        '<section id="cases"><h2>Cases</h2><table id="cases-table"><tr><th>case</th>'
        f"<th>model</th><th>run</th><th>status</th>{head}<th>inferences</th><th>time</th>"
        f"<th>cost</th></tr>{''.join(rows)}</table></section></main>"
    )
    assets = resources.files("agentflow.runtime") / "report_assets"
    page = (assets / "report.html").read_text(encoding="utf-8")
    values = {
        "title": _e(f'eval "{report.name}" of {report.flow}'),
        "version": _e(core_version.__version__),
        "body": _STYLE + "".join(parts),
        "css": report_css(),
    }
    return clean_text(re.sub(r"\{\{(\w+)\}\}", lambda m: values.get(m.group(1), m.group(0)), page))


def _scorers(report: EvalReport) -> str:
    k = report.repeat
    rows = []
    for s in report.summaries():
        info = report.scorers.get(s.scorer, {})
        rows.append(
            f'<tr data-scorer="{_e(s.scorer)}" data-model="{_e(s.model)}"><td>{_e(s.scorer)}</td>'
            f"<td>{_e(info.get('kind', ''))}</td><td class='num'>{_num(info.get('threshold'))}"
            f"</td><td>{_e(s.model)}</td><td class='num'>{_num(s.mean)}</td>"
            f"<td class='num'>{_pct(s.pass_rate)}</td>"
            + (f"<td class='num'>{_pct(s.pass_k)}</td>" if k > 1 else "")
            + "</tr>"
        )
    extra = f"<th>pass^{k}</th>" if k > 1 else ""
    return (
        '<section id="scorers"><h2>Scorers</h2><table id="scorers-table"><tr><th>scorer</th>'
        f"<th>kind</th><th>threshold</th><th>model</th><th>mean</th><th>pass rate</th>{extra}"
        f"</tr>{''.join(rows)}</table></section>"
    )


def _baseline(c: Comparison) -> str:
    rows = [
        f'<tr class="delta {c_.kind}"><td>{_e(c_.case)}</td><td>{_e(c_.scorer)}</td>'
        f"<td>{_e(c_.model)}</td><td class='num'>{_num(c_.before)}</td>"
        f"<td class='num'>{_num(c_.after)}</td><td>{_e(c_.kind)}</td></tr>"
        for c_ in c.changes
    ]
    body = (
        "<table><tr><th>case</th><th>scorer</th><th>model</th><th>before</th><th>after</th>"
        f"<th></th></tr>{''.join(rows)}</table>"
        if rows
        else '<p class="muted">no case changed its scores</p>'
    )
    return f'<section id="baseline"><h2>Against the baseline</h2>{body}</section>'
