"""The console (plain log and live view) shows a run in the `.flow`'s terms: labels instead of
step paths, the compiler's bookkeeping folded into its parent, a warning said once."""

from __future__ import annotations

import io
import re

from rich.console import Console
from support.chat_server import answer, tool_calls

import agentflow
from agentflow.runtime.events import ConsoleSink, EventBus

FILES = 10

AUDIT = """\
flow todo_audit
input { dir: path }

use agent "auditor" as auditor

type Audit {
  file: path
  todos: int
}

stage files -> path[] {
  glob(pattern: "*.py", path: input.dir)
}

stage audits -> Audit[] {
  parallel map files as f limit 4 {
    let hits = grep(pattern: "TODO", path: f)
    if hits.count == 0 {
      return { file: f, todos: 0 }
    }
    agent(auditor) {
      task "Audit the TODOs of ${f}"
      tools [read_file]
      expect Audit
      max_iterations 3
    }
  }
}

stage report -> int {
  reduce audits as a, acc = 0 { acc + a.todos }
}
"""


def _auditor(request):
    task = next(m["content"] for m in request["messages"] if m["role"] == "user")
    file = re.search(r"TODOs of (\S+)", task).group(1)
    if not any(m["role"] == "tool" for m in request["messages"]):
        return tool_calls(("builtin__read_file", {"path": file}))
    return answer({"file": file, "todos": 1})


def test_a_map_reduce_run_prints_no_line_for_compiler_bookkeeping(
    chat_server, scripted_config, tmp_path
):
    """Ten files: per item its `grep` and its agent (tool call, two inferences); no line for
    the outlined body's call, the `if`, or a value step of a body."""
    chat_server.script(_auditor)
    src = tmp_path / "src"
    src.mkdir()
    for i in range(FILES):
        (src / f"m{i}.py").write_text(f"# TODO: item {i}\n")
    (tmp_path / "todo-audit.flow").write_text(AUDIT)
    log = io.StringIO()
    result = agentflow.run_sync(
        tmp_path / "todo-audit.flow",
        {"dir": "src"},
        config=scripted_config,
        workspace=tmp_path,
        sinks=[ConsoleSink(log, force_plain=True)],
        shape_cache=False,
    )
    assert result.status == "ok", result.error
    lines = log.getvalue().splitlines()
    text = "\n".join(lines)
    for bookkeeping in ("plan__", "› if", "value", "decide", "E1/do."):
        assert bookkeeping not in text, bookkeeping
    per_item = 7  # ▶/✓ grep, ▶/✓ agent, → read_file, ◆ ×2
    others = 2 + 2 + 2 + 2 + 1  # run, glob, map, reduce, the warning of a missing profile
    assert len(lines) == FILES * per_item + others, text
    assert "  → audits › item 7 › agent(auditor) › read_file  src/m7.py" in lines
    assert sum(line.startswith("! ") for line in lines) == 1  # said once, not once per item
    finished = [line for line in lines if line.startswith("✓ audits › item 3 › agent(auditor)")]
    assert len(finished) == 1
    assert re.fullmatch(
        # the place as the run's file was given (here absolute): it opens from anywhere
        rf"✓ audits › item 3 › agent\(auditor\)  {re.escape(str(tmp_path))}/todo-audit\.flow:21:5"
        r"  \d+\.\d\ds · 2 inference\(s\), 20→10 tokens",
        finished[0],
    )


def _plain(*events: tuple) -> list[str]:
    stream = io.StringIO()
    bus = EventBus([ConsoleSink(stream, force_plain=True)])
    for kind, path, data in events:
        bus.emit(kind, path, ["t"], **data)
    return stream.getvalue().splitlines()


def test_a_folded_step_shows_the_error_it_raised_itself():
    label = {"label": "s › item 2 › value", "fold": True, "source": "t.flow:4:5"}
    error = {"code": "bad_path", "message": "path `x.y`: `y` is missing", "step_path": "E0/do.2"}
    lines = _plain(
        ("step_started", "E0/do.1", {"tool_name": "value", **label}),
        ("step_finished", "E0/do.1", {"tool_name": "value", "elapsed_ms": 0, **label}),
        ("step_started", "E0/do.2", {"tool_name": "value", **label}),
        ("step_finished", "E0/do.2", {"error": error, "elapsed_ms": 10, **label}),
        ("step_finished", "E0/do.3", {"error": {**error, "step_path": "E0/do.3/E1"}, **label}),
    )
    assert lines == [
        "✗ s › item 2 › value  t.flow:4:5  0.01s  bad_path: path `x.y`: `y` is missing"
    ]


def test_live_view_lists_running_steps_by_label_and_leaves_bookkeeping_out():
    stream = io.StringIO()
    console = ConsoleSink(stream, force_live=True)
    bus = EventBus([console])
    bus.emit("run_started", "", ["t"], plan="t")
    bus.emit("step_started", "E1", ["t"], tool_name="map", input={"over": [1, 2, 3]},
             label="audits › map", source="t.flow:16:12")  # fmt: skip
    bus.emit("step_started", "E1/do.0", ["t"], tool_name="plan__t__audits_0",
             label="audits › item 0", fold=True)  # fmt: skip
    bus.emit("step_started", "E1/do.0/E1/else", ["t"], tool_name="agent",
             label="audits › item 0 › agent(auditor)", source="t.flow:21:5")  # fmt: skip
    bus.emit("tool_started", "E1/do.0/E1/else/agent.1/builtin__read_file", ["t"],
             tool_name="builtin__read_file", input={"path": "src/app.py", "offset": 12},
             label="audits › item 0 › agent(auditor) › read_file")  # fmt: skip
    out = Console(file=io.StringIO(), width=120, force_terminal=False)
    out.print(console._render())
    view = out.file.getvalue()
    console.close()
    assert "audits › map (3 items)" in view and "0/3" in view
    assert "audits › item 0 › agent(auditor)" in view and "t.flow:21:5" in view
    assert "agent(auditor) › read_file" in view and "src/app.py:12" in view
    assert "plan__" not in view and "E1/do.0" not in view


def test_a_failed_inlined_let_is_shown_where_the_final_error_points(tmp_path):
    # `let m` is inlined into the `return` step: its progress line and the run's error both
    # name the expression that failed (`s › m` at 3:11), not one the statement that read it
    (tmp_path / "div0.flow").write_text(
        "input { n: int, z: int }\nstage s -> number {\n  let m = input.n / input.z\n  return m\n}\n",
        encoding="utf-8",
    )
    stream = io.StringIO()
    sink = ConsoleSink(stream, force_plain=True)
    run = agentflow.run_sync(tmp_path / "div0.flow", {"n": 1, "z": 0}, sinks=[sink])
    assert run.error is not None and run.error.source is not None
    assert run.error.source.endswith("div0.flow:3:11")
    failed = [line for line in stream.getvalue().splitlines() if line.startswith("✗")]
    assert len(failed) == 1
    assert re.fullmatch(
        rf"✗ s › m  (?:\S*/)?{re.escape(run.error.source)}  [0-9.]+s  "
        r"arithmetic: `input\.n / input\.z`: division by zero \(`input\.z` is 0\)",
        failed[0],
    )  # the console gives the place from where the file was named (here an absolute path)


def test_a_reused_answer_says_reused_once_on_its_line():
    # the ask's own event and its step_finished both say it was reused: one "(reused)"
    ask = {"answered": True, "answer": "ship", "reused": True}
    labelled = {"label": "s › c = ask", "source": "t.flow:3:11"}
    lines = _plain(
        ("step_started", "E1", {"tool_name": "ask", **labelled}),
        ("ask", "E1", ask),
        ("step_finished", "E1", {"tool_name": "ask", "elapsed_ms": 70, "reused": True, **labelled}),
        ("step_started", "E2", {"tool_name": "ask"}),
        ("ask", "E2", ask),
        ("step_finished", "E2", {"tool_name": "ask", "elapsed_ms": 70, "reused": True}),
        ("step_started", "E3", {"tool_name": "ask", **labelled}),
        ("ask", "E3", ask),  # a reused answer whose step_finished does not say so
        ("step_finished", "E3", {"tool_name": "ask", "elapsed_ms": 70, **labelled}),
    )
    assert [line for line in lines if line.startswith("✓")] == [
        '✓ s › c = ask  t.flow:3:11  0.07s · answered "ship" (reused)',
        '✓ E2 0.07s (reused) · answered "ship"',
        '✓ s › c = ask  t.flow:3:11  0.07s · answered "ship" (reused)',
    ]
