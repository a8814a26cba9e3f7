"""Every value an HTML page of agentflow shows is escaped for where it stands — `flowc report`'s
page, `flowc eval --html`'s page and `flowc ui`'s runs list and run page (docs/decisions.md
"HTML pages escape every value").

An outside tester's values go into every field those pages show — case, input, model output,
tool result, error message, flow / agent / step / stage / scorer / model names, run id, labels,
usage numbers: a closing ``</script>``, an ``<img onerror>``, an ``<svg onload>``, quotes,
backticks, ``${…}``, ``-->``, control characters, U+2028/U+2029, a 30,000-character word. The
pages are parsed by a real parser (the standard library's tokenizer) and opened in headless
Chromium (tests/support/browser.py): no script of theirs runs, no element of theirs exists, the
only scripts are the shipped ones, each value reads back as it was (control characters shown as
their ``\\xNN`` escapes), and the page is no wider than the window.

Before: the pages put the usage numbers of a trace (``inferences``, ``input_tokens``,
``output_tokens`` of ``run_finished``, ``step_finished`` and ``model_call``) and of the eval's
and the console's runs into the HTML unescaped, so a crafted trace opened with ``flowc report``
ran its script; control characters reached the page raw (a NUL vanished, ESC was invisible);
a long word stretched the page; and the eval page had no style sheet at all (``{{css}}`` was
left in it)."""

from __future__ import annotations

import json
import re
import time
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import pytest
from support.browser import start_chromium

from agentflow import api
from agentflow.evals.report import CaseRun, EvalReport, ScoreResult
from agentflow.runtime.durable.run_info import Question, RunInfo
from agentflow.runtime.report import report_css
from agentflow.ui import pages

#: a value that tries every way out of an element, an attribute, a comment or a script
H = (
    '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    "<svg onload='window.__pwned=3'></svg>\"' onmouseover=x `${window.__pwned=4}` --> <!-- "
    "</title></textarea></style>]]> &amp; \x00\x01\x1b[2J\x7f\x85\x9b \u2028\u2029\ttab\nline"
)
#: one word too long for any cell
LONG = "W" * 30_000
#: H as a page shows it: each control character (but tab and newline) as its escape
SHOWN = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", lambda m: ascii(m.group())[1:-1], H)

REPORT_SCRIPT = re.search(
    r"<script>(.*?)</script>",
    (resources.files("agentflow.runtime") / "report_assets" / "report.html").read_text("utf-8"),
    re.S,
)[1]  # type: ignore[index]
UI_SCRIPT = (resources.files("agentflow.ui") / "assets" / "ui.js").read_text("utf-8")


def _events() -> list[dict]:
    """A trace as a crafted file may hold it: H in every string, and in the usage numbers."""

    def ev(kind: str, path: str = "", data: dict | None = None, t: float = 1.0) -> dict:
        return {"kind": kind, "path": path, "data": data or {}, "time": t, "stack": ["hostile"]}

    usage = {"inferences": H, "input_tokens": H, "output_tokens": H, "cost": H}
    error = {"code": H, "message": H, "step_path": H, "label": H, "source": H}
    return [
        ev("run_started", data={"plan": H, "file": H, "input": {H: H, "long": LONG}}),
        ev(
            "step_started",
            "E0",
            {
                "tool_name": "agent",
                "source": H,
                "stage": H,
                "label": LONG,
                "input": {
                    "agent": H,
                    "model": H,
                    "tools": [H],
                    "system_prompt": H,
                    "prompt": H,
                    "input": H,
                },
            },
            1.1,
        ),
        ev(
            "model_call",
            "E0",
            {
                "model": H,
                "role": H,
                "round": 1,
                "latency_ms": 10,
                "input_tokens": H,
                "output_tokens": H,
                "finish_reason": H,
                "reply": {"text": H, "tool_calls": [{"name": H, "arguments": {H: H}}, H]},
            },
            1.2,
        ),
        ev("tool_started", "E0/agent.1/t", {"tool_name": H, "input": {H: H}}, 1.3),
        ev("tool_finished", "E0/agent.1/t", {"tool_name": H, "result": H, "error": H}, 1.4),
        ev("warning", "E0", {"message": H, "round": 1}, 1.45),
        ev(
            "step_finished",
            "E0",
            {"tool_name": "agent", "elapsed_ms": 100, "usage": usage, "error": error},
            1.5,
        ),
        ev("step_started", "E1", {"tool_name": H, "input": H, "source": H, "label": H}, 1.6),
        ev(
            "step_finished",
            "E1",
            {"tool_name": H, "elapsed_ms": 1, "usage": usage, "result": H},
            1.7,
        ),
        ev("run_finished", data={"status": H, "error": error, "output": H, "usage": usage}, t=2.0),
    ]


def _plan_file(folder: Path) -> Path:
    """A plan whose graph shows H (its description, a step's label, stage and source)."""
    plan = {
        "name": "hostile",
        "description": H,
        "steps": [
            {"id": "E0", "tool_name": "echo", "input": {"value": H},
             "meta": {"label": H, "stage": H, "source": H}},
            {"id": "E1", "tool_name": "echo", "input": {"value": "{{ E0 }}"},
             "meta": {"label": LONG}},
        ],
        "finish": {"output": "{{ E1 }}"},
    }  # fmt: skip
    path = folder / "hostile.plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path


def _eval_report() -> EvalReport:
    run = CaseRun(
        case=H, model=H, repeat=0, status=H, output={H: H}, error={"code": H, "message": H},
        usage={"inferences": H, "cost": H}, duration_ms=3,
        scores={H: ScoreResult(0.5, True, H), LONG: ScoreResult(None, None, H)},
        events=_events(), input={H: H}, expected=H, file=H, line=3,
    )  # fmt: skip
    return EvalReport(
        flow=H, name=H, scorers={H: {"kind": H, "threshold": 0.5}}, models=[H], runs=[run]
    )


def _run_info() -> RunInfo:
    asked = Question(run_id=H, workflow_id=H, path=H, question=H, label=H)
    closed = Question(
        run_id=H, workflow_id=H, path=H, question=H, label=H, closed="answer", answer=H
    )
    return RunInfo(
        run_id=H, status=H, plan=H, created_at=1.0, updated_at=2.0, questions=[asked],
        answered=[closed], error={"code": H, "message": H, "step_path": H, "source": H},
        output=H,
        cost={"inferences": H, "input_tokens": H, "output_tokens": H},
        steps=[
            {"path": "E0", "label": LONG, "kind": "model " + H, "status": H, "error": H,
             "value": {"text": H, "usage": {"input_tokens": H, "output_tokens": H},
                       "tool_calls": [{"name": H, "arguments": H}, H]},
             "started_at": 1.0, "finished_at": 2.0},
            {"path": "E0/t", "kind": "tool " + H, "status": "error", "error": {"code": H},
             "started_at": 1.0, "finished_at": 2.0},
        ],
    )  # fmt: skip


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, Path]:
    """The four pages, each written to a file: ``{name: path}``."""
    folder = tmp_path_factory.mktemp("hostile")
    trace = folder / "trace.jsonl"
    trace.write_text("".join(json.dumps(e) + "\n" for e in _events()), encoding="utf-8")
    info = _run_info()
    texts = {
        "report": api.report(trace, plan=_plan_file(folder), title=H),
        "eval": api.eval_page(_eval_report()),
        "runs": pages.runs_page([info], {H: info.cost}, status=H, flow=H, database=H, version=H),
        "run": pages.run_page(info, {"plan_file": H}, H, notice=H, version=H, problems={H: (H, H)}),
    }
    out = {}
    for name, text in texts.items():
        out[name] = folder / f"{name}.html"
        out[name].write_text(text, encoding="utf-8")
    return out


class _Page(HTMLParser):
    """The tags, attributes, comments, scripts and text of a page, as a parser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.comments: list[str] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend((tag, k, v) for k, v in attrs)
        self._in = tag if tag in ("script", "style") else None
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in is None:
            self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


@pytest.mark.parametrize("name", ["report", "eval", "runs", "run"])
def test_a_parser_finds_no_element_attribute_script_or_comment_of_the_values(written, name):
    page = _Page()
    page.feed(written[name].read_text(encoding="utf-8"))
    page.close()
    assert page.comments == []
    assert not {"img", "iframe", "object", "embed", "base", "link"} & set(page.tags)
    assert [(t, k) for t, k, _ in page.attrs if k.startswith("on")] == []
    assert page.scripts == [UI_SCRIPT if name in ("runs", "run") else REPORT_SCRIPT]
    assert page.tags.count("svg") == (1 if name == "report" else 0)  # the flow's graph
    text = "".join(page.text)
    assert SHOWN in text  # each value reads back as it was, its controls visible
    assert "\x00" not in text and "\x1b" not in text and "\x85" not in text
    # an attribute holding a value holds all of it: nothing of it got out
    held = [v for _, k, v in page.attrs if v is not None and "window.__pwned=1" in v]
    assert held and all(SHOWN in v for v in held), [v for v in held if SHOWN not in v][:3]


def test_the_eval_page_has_the_report_style_sheet(written):
    """It had none: its template's `{{css}}` was left in the page."""
    text = written["eval"].read_text(encoding="utf-8")
    assert "{{" not in text.split("<body>")[0]
    assert report_css() in text


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"), width=1200, height=900)
    try:
        yield driver
    finally:
        driver.quit()


_PROBE = """
var walker = document.createTreeWalker(document, NodeFilter.SHOW_COMMENT);
var on = Array.from(document.querySelectorAll('*')).filter(function (e) {
  return Array.from(e.attributes).some(function (a) { return a.name.indexOf('on') === 0; });
});
return {
  pwned: window.__pwned === undefined ? null : String(window.__pwned),
  title: document.title,
  scripts: Array.from(document.scripts).map(function (s) { return s.text; }),
  injected: document.querySelectorAll('img, iframe, object, embed, base').length,
  handlers: on.length,
  comments: walker.nextNode() !== null,
  overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
  shown: document.body.textContent.indexOf(arguments[0]) >= 0,
};
"""


def test_in_chromium_no_value_runs_a_script_or_adds_an_element_or_widens_the_page(browser, written):
    for name, path in written.items():
        browser.get(path.as_uri())
        deadline = time.monotonic() + 30
        while browser.execute_script("return document.readyState") != "complete":
            assert time.monotonic() < deadline, name
            time.sleep(0.05)
        found = browser.execute_script(_PROBE, SHOWN)
        assert found["pwned"] is None, (name, found["pwned"])
        assert found["injected"] == 0 and found["handlers"] == 0, name
        assert found["comments"] is False, name
        assert found["scripts"] == [UI_SCRIPT if name in ("runs", "run") else REPORT_SCRIPT]
        assert SHOWN.split("\n")[0][:40] in found["title"] or name in ("runs",), found["title"]
        assert found["shown"], name
        assert found["overflow"] <= 0, (name, found["overflow"])


@pytest.mark.parametrize(
    ("at", "odd"),
    [
        ((0, "time"), float("nan")),  # the header's start time
        ((0, "time"), 1e300),
        ((1, "data", "input", "tools"), 1),  # an agent's tools
        ((2, "data", "reply", "tool_calls"), 1),  # a reply's tool calls
        ((2, "data", "input_tokens"), [H]),  # a model call's tokens (the graph sums them)
        ((4, "data", "error"), H),  # a tool call's error that is not an object
    ],
)
def test_a_trace_written_by_hand_is_reported_never_a_traceback(tmp_path, at, odd):
    """The small version of bench/report_shapes_fuzz.py (every field × a dozen odd values)."""
    events = _events()
    holder = events
    for key in at[:-1]:
        holder = holder[key]
    holder[at[-1]] = odd
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    page = api.report(trace)
    assert "<img" not in page and page.rstrip().endswith("</html>")
