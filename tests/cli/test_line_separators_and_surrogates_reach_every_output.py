"""Every value a model or a tool can produce reaches every output of a run intact: a loopback
model answers with U+2028, U+2029, U+0085, NUL and a JSON-escaped lone surrogate after a tool
read a file holding the line separators; the run's `--trace`, `--json` output, cassette,
`flowc report` and `flowc graph --run` all read what was written (issue 28, item 11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from support.chat_server import TEST_API_KEY, Reply, text, tool_calls

from agentflow.cli import main
from agentflow.runtime.events import read_trace

FLOWC = [sys.executable, "-m", "agentflow"]

FLOW = """flow odd "Say what the file holds"

type Said {
  words: text
}

use agent "reader" as reader

stage say -> Said {
  return agent(reader) {
    task "Read odd.txt and say what it holds."
    tools [read_file]
    expect Said
  }
}
"""

#: the file the tool reads: every Unicode line boundary str.splitlines knows but "\n"
FILE_TEXT = "a\u2028b\u2029c\u0085d\x1ce\x0bf\x0cg"
#: what the model answers (the lone surrogate travels as the JSON escape \udcd9)
SAID = "x\udcd9 \u2028\u2029\u0085\x00 y"
#: what the run makes of it: the lone surrogate is U+FFFD, everything else kept
KEPT = "x\ufffd \u2028\u2029\u0085\x00 y"


def flowc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["SCRIPTED_API_KEY"] = TEST_API_KEY
    return subprocess.run(
        [*FLOWC, *args], capture_output=True, cwd=cwd, env=env, timeout=120
    )  # bytes: the test decodes strictly


def test_odd_characters_from_a_model_and_a_tool_reach_every_output(chat_server, tmp_path):
    (tmp_path / "odd.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "odd.txt").write_text(FILE_TEXT, encoding="utf-8")
    config = chat_server.write_config(tmp_path)
    chat_server.script(
        [tool_calls(("builtin__read_file", {"path": "odd.txt"})), text(json.dumps({"words": SAID}))]
    )
    trace, cassette = tmp_path / "t.jsonl", tmp_path / "c.jsonl"
    run = flowc(
        "run", "odd.flow", "--config", str(config), "--workspace", str(tmp_path),
        "--trace", str(trace), "--record", str(cassette), "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr.decode("utf-8", "replace")
    assert b"failed" not in run.stderr and b"Traceback" not in run.stderr
    assert json.loads(run.stdout.decode("utf-8"))["output"] == {"words": KEPT}

    events = read_trace(trace)  # every line an event, none split at a Unicode line boundary
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert events[-1]["data"]["output"] == {"words": KEPT}
    read = [e for e in events if e["kind"] == "tool_finished"]
    assert read[0]["data"]["result"] == FILE_TEXT  # the tool's text, no line split off

    # the readers of the trace and the cassette, in this process (the run above was the real one)
    cli = CliRunner()
    report = cli.invoke(main, ["report", str(trace), "-o", str(tmp_path / "r.html")])
    assert report.exit_code == 0, report.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")  # strict UTF-8
    assert "x\ufffd" in page
    graph = cli.invoke(main, ["graph", str(tmp_path / "odd.flow"), "--run", str(trace)])
    assert graph.exit_code == 0, graph.stderr
    assert "class s_E0 ok" in graph.stdout
    replay = cli.invoke(
        main,
        ["run", str(tmp_path / "odd.flow"), "--replay", str(cassette),
         "--workspace", str(tmp_path), "--json"],
    )  # fmt: skip
    assert replay.exit_code == 0, replay.stderr
    assert json.loads(replay.stdout_bytes.decode("utf-8"))["output"] == {"words": KEPT}
    assert len(chat_server.requests) == 2  # the replay asked no model


def _escaped(body: dict) -> Reply:
    """A reply whose body is JSON text with every non-ASCII character escaped (a lone surrogate
    as ``\\udcd9``, as a provider's JSON encoder sends it)."""
    return Reply(body=json.dumps(body, ensure_ascii=True))


def test_flowc_ask_through_the_planner_with_lone_surrogates_answers_without_a_traceback(
    chat_server, tmp_path
):
    from support.chat_server import completion

    config = chat_server.write_config(tmp_path)
    plan = (
        "version: 1\nname: goal_plan\nsteps:\n"
        '  - {id: E0, tool_name: value, input: {value: "odd \u2028 value"}}\n'
    )
    chat_server.script(
        [
            _escaped(tool_calls(("plan_and_execute", {"goal": "Say it \udcd9"})).body),
            _escaped(completion(plan)),
            _escaped(completion("SOLVED \udcd9")),
            _escaped(completion("Said \udcd9 \u2028.")),
        ]
    )
    trace = tmp_path / "ask.jsonl"
    proc = flowc(
        "ask", "Say it", "--config", str(config), "--workspace", str(tmp_path),
        "--trace", str(trace),
        cwd=tmp_path,
    )  # fmt: skip
    err = proc.stderr.decode("utf-8")  # strict: what reached the terminal is UTF-8
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert proc.stdout.decode("utf-8") == "Said \ufffd \u2028.\n"
    kinds = [e["kind"] for e in read_trace(trace)]  # readable to its end, no sink dropped
    assert kinds.count("model_call") == 4 and "run_finished" in kinds
