"""`flowc graph` and `flowc report` from the command line: output, files written, and the
user errors (exit codes 1 and 2, one line, no traceback).

The commands run in this process (click's runner, through the same ``main`` a flowc process
runs, in the test's directory): what they print and exit with is a flowc process's, without a
new interpreter per command; an exception escaping a command fails the test (it would be a
traceback in a terminal)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from agentflow.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@dataclass
class Done:
    """What a flowc command gave: its exit status and its two output streams."""

    returncode: int
    stdout: str
    stderr: str


def flowc(*args: str, cwd: Path) -> Done:
    env = {k: None for k in os.environ if k.startswith(("OPENAI_", "ANTHROPIC_"))}
    here = Path.cwd()
    os.chdir(cwd)
    try:
        done = CliRunner().invoke(main, list(args), env=env)
    finally:
        os.chdir(here)
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception  # a traceback, not a one-line error
    return Done(done.exit_code, done.stdout, done.stderr)


def test_graph_prints_mermaid_or_dot_of_a_flow_and_of_its_compiled_plan(tmp_path):
    proc = flowc("graph", str(EXAMPLES / "bug-triage.flow"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.startswith("flowchart TD\n") and "parallel map plan.work as item" in proc.stdout
    )
    plan = tmp_path / "bug-triage.plan.yaml"
    assert (
        flowc(
            "compile", str(EXAMPLES / "bug-triage.flow"), "-o", str(plan), cwd=tmp_path
        ).returncode
        == 0
    )
    from_plan = flowc("graph", str(plan), cwd=tmp_path)
    assert from_plan.stdout == proc.stdout  # same graph from the .flow and from its plan
    dot = flowc("graph", str(plan), "--format", "dot", "-o", str(tmp_path / "g.dot"), cwd=tmp_path)
    assert dot.returncode == 0 and "wrote" in dot.stderr
    assert (tmp_path / "g.dot").read_text().startswith('digraph "bug_triage"')


def test_run_trace_then_report_writes_a_self_contained_page(tmp_path):
    trace = tmp_path / "trace.jsonl"
    run = flowc(
        "run", str(EXAMPLES / "bug-triage.flow"),
        "--input", f"@{EXAMPLES / 'bug-report.json'}",
        "--workspace", str(EXAMPLES / "workspace"),
        "--replay", str(EXAMPLES / "bug-triage.cassette.jsonl"),
        "--config", str(EXAMPLES / "flow.toml"),
        "--trace", str(trace),
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    proc = flowc("report", str(trace), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and '<svg xmlns="http://www.w3.org/2000/svg"' in page
    assert "<script src=" not in page and "<link " not in page  # nothing to fetch
    assert 'data-path="E3/do.1"' in page and "jobs/runner.py" in page
    graph = flowc("graph", str(EXAMPLES / "bug-triage.flow"), "--run", str(trace), cwd=tmp_path)
    assert "class s_E0,s_E1,s_E2,s_E3,s_E3_do ok" in graph.stdout


def test_report_without_the_flow_leaves_the_graph_out(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"kind": "run_started", "path": "", "stack": ["gone"], "time": 1.0, '
        '"data": {"plan": "gone", "file": "nowhere/gone.flow"}}\n'
        '{"kind": "run_finished", "path": "", "stack": ["gone"], "time": 2.0, '
        '"data": {"status": "ok", "output": 1}}\n'
    )
    proc = flowc("report", str(trace), "-o", str(tmp_path / "r.html"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "r.html").read_text()
    assert "its graph is left out" in page and "<svg" not in page
    assert len(page) < 100_000


def test_graph_and_report_user_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "run_started"}\nnot json\n')
    proc = flowc("report", str(bad), cwd=tmp_path)
    assert proc.returncode == 1
    assert (
        proc.stderr.strip() == f"error: {bad}:2: not a trace event (invalid JSON: Expecting value)"
    )
    assert flowc("report", str(tmp_path / "missing.jsonl"), cwd=tmp_path).returncode == 2
    assert flowc("graph", "missing.flow", cwd=tmp_path).returncode == 2
    broken = tmp_path / "broken.flow"
    broken.write_text("flow broken\nstage a -> text { return nope }\n")
    proc = flowc("graph", str(broken), cwd=tmp_path)
    assert proc.returncode == 1 and "error[" in proc.stderr and "Traceback" not in proc.stderr
    proc = flowc("graph", str(EXAMPLES / "bug-triage.flow"), "--run", str(bad), cwd=tmp_path)
    assert proc.returncode == 1 and "not a trace event" in proc.stderr


def test_graph_of_a_trace_says_it_is_a_trace_and_how_to_colour_a_graph_with_it(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"kind": "run_started"}\n')
    flow = tmp_path / "f.flow"
    flow.write_text("stage a -> int { return 1 }\n")
    swapped = CliRunner().invoke(main, ["graph", "--run", str(flow), str(trace)])
    assert swapped.exit_code == 2
    said = " ".join(swapped.stderr.split())
    assert f"{trace} is a trace (JSON Lines), not a .flow or plan file" in said
    assert f"`flowc graph {flow} --run {trace}`" in said
    alone = CliRunner().invoke(main, ["graph", str(trace)])
    assert alone.exit_code == 2
    assert f"`flowc graph FLOW --run {trace}`" in " ".join(alone.stderr.split())


def test_graph_coloured_by_another_flows_run_is_refused_naming_both(tmp_path):
    # break14: every node was drawn grey ("not run") without a word
    (tmp_path / "a.flow").write_text('flow a "x"\nstage s -> int { 1 }\n')
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"kind": "run_started", "path": "", "stack": ["k"], "time": 1.0, '
        '"data": {"plan": "k", "file": "k.flow"}}\n'
    )
    done = flowc("graph", "a.flow", "--run", str(trace), cwd=tmp_path)
    assert done.returncode == 1
    assert "the trace is a run of `k` (k.flow), not of `a`" in done.stderr
