"""A provider reply with no usage block (an OpenAI-compatible server streaming without
`include_usage`, a local server that sends none) used to read as a call of no tokens: `◆ …
0→0 tokens`, `✓ … 1 inference(s), 0→0 tokens`, and totals that counted it as 0 without a word.
Now the reply's usage is *unknown* (docs/models.md "Usage"): the `◆` line says `usage not
reported`, a warning says it is counted as 0, the step's and the run's lines say the usage is
unknown, the `model_call` event has `usage_unknown: true, usage_reported: false`, and the run's
`usage` counts it in `usage_unknown`; `flowc report` says the same."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from support.chat_server import TEST_API_KEY, Reply, answer, completion
from support.terminal import Terminal, plain

from agentflow.runtime.events import ConsoleSink, Event

FLOWC = str(Path(sys.executable).with_name("flowc"))

FLOW = textwrap.dedent(
    """
    flow a "a"
    type N { note: text }
    use agent "w" as w
    stage s -> N {
      let one = agent(w) { task "first" tools none expect N }
      return agent(w) { task "second" tools none expect N }
    }
    """
)


def _no_usage(value: dict[str, str]) -> Reply:
    body = completion(json.dumps(value))
    del body["usage"]
    return Reply(body=body)


def test_a_reply_without_usage_is_said_not_reported_never_0_tokens(
    chat_server, tmp_path: Path
) -> None:
    chat_server.script([_no_usage({"note": "a"}), answer({"note": "b"})])  # the second: 10→5
    chat_server.write_config(tmp_path)
    (tmp_path / "a.flow").write_text(FLOW, encoding="utf-8")
    env = {**os.environ, "SCRIPTED_API_KEY": TEST_API_KEY, "NO_COLOR": "1"}
    run = subprocess.run(
        [FLOWC, "run", "a.flow", "--trace", "t.jsonl", "--json"],
        cwd=tmp_path, capture_output=True, timeout=120, env=env, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    err = run.stderr
    assert "0→0" not in err, err
    calls = [line for line in err.splitlines() if "◆" in line]
    assert len(calls) == 2 and calls[0].endswith("usage not reported"), calls
    assert calls[1].endswith("10→5 tokens"), calls
    assert "reported no token usage: its calls' usage is unknown and counted as 0 tokens" in err
    done = [line for line in err.splitlines() if line.startswith("✓")]
    assert done[0].endswith("· 1 inference(s), usage unknown"), done
    assert done[1].endswith("· 1 inference(s), 10→5 tokens"), done
    (summary,) = [line for line in err.splitlines() if line.startswith("run ok in")]
    assert summary.endswith("· 2 inference(s), 10→5 tokens (1 call's usage unknown)"), summary
    usage = json.loads(run.stdout)["usage"]
    assert (usage["inferences"], usage["input_tokens"], usage["usage_unknown"]) == (2, 10, 1)
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    first = [e["data"] for e in events if e["kind"] == "model_call"][0]
    assert (first["usage_unknown"], first["usage_reported"]) == (True, False)
    # the HTML report says so too: the run's tokens and the call's
    report = subprocess.run(
        [FLOWC, "report", "t.jsonl", "-o", "r.html"], cwd=tmp_path, capture_output=True,
        timeout=120, env=env, text=True,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "tokens 10→5 (1 unknown)" in page and "usage not reported" in page
    assert "0→0" not in page


def test_on_a_terminal_a_reply_without_usage_is_never_0_tokens(chat_server, tmp_path: Path) -> None:
    chat_server.script([_no_usage({"note": "a"}), _no_usage({"note": "b"})])
    chat_server.write_config(tmp_path)
    (tmp_path / "a.flow").write_text(FLOW, encoding="utf-8")
    env = {"SCRIPTED_API_KEY": TEST_API_KEY}
    with Terminal([FLOWC, "run", "a.flow"], cwd=tmp_path, env=env, cols=200) as term:
        assert term.wait(60) == 0, term.raw
        shown = plain(term.raw)
    assert "0→0" not in shown, shown
    assert "usage not reported" in shown, shown
    assert "· 2 inference(s), usage unknown" in shown, shown  # the run's line


def test_runs_show_says_a_durable_calls_usage_is_unknown(chat_server, tmp_path: Path) -> None:
    chat_server.script([_no_usage({"note": "a"}), answer({"note": "b"})])
    chat_server.write_config(tmp_path)
    (tmp_path / "a.flow").write_text(FLOW, encoding="utf-8")
    env = {**os.environ, "SCRIPTED_API_KEY": TEST_API_KEY, "NO_COLOR": "1"}
    argv = [FLOWC, "run", "a.flow", "--durable", "--run-id", "u1"]
    run = subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=120, env=env, text=True)
    assert run.returncode == 0, run.stderr
    shown = subprocess.run(
        [FLOWC, "runs", "show", "u1"], cwd=tmp_path, capture_output=True, timeout=120, env=env,
        text=True,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    said = shown.stdout + shown.stderr
    assert "model calls so far: 2 (10 in, 5 out tokens; 1 call's usage unknown)" in said, said


def test_counts_that_are_not_counts_are_said_unknown_on_the_call_line() -> None:
    stream = io.StringIO()
    sink = ConsoleSink(stream, force_plain=True)
    data = {"role": "chat", "model": "m", "latency_ms": 10, "input_tokens": 0,
            "output_tokens": 7, "usage_unknown": True}  # fmt: skip
    sink.handle(Event(kind="model_call", path="E0", stack=[], data=data))
    assert stream.getvalue().strip().endswith("0→7 tokens (usage unknown)")
