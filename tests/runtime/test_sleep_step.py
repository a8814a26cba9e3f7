"""The `sleep` step of a plain run (docs/reference/statements.md "sleep"): it waits, says when
it wakes (its `step_started` input, the console's progress line), is ended by the run's
deadline at the deadline, fails a computed duration out of range with `validation` in the
`.flow`'s terms; and `flowc test` sleeps in virtual time, listing the sleeps for `expect`."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time

from support.timing import Stretch

import agentflow
from agentflow import api
from agentflow.runtime.events import CallbackSink, ConsoleSink

POLL = """\
input { wait: duration }
stage s -> int {
  sleep 200ms
  sleep input.wait
  return 1
}
"""


def test_a_sleep_waits_and_its_start_says_when_it_wakes(tmp_path):
    flow = tmp_path / "poll.flow"
    flow.write_text(POLL)
    events = []
    began = time.time()
    result = agentflow.run_sync(
        flow, {"wait": "100ms"}, sinks=[CallbackSink(events.append)], config=None
    )
    took = time.time() - began
    assert result.status == "ok", result.error
    assert took >= 0.3  # both sleeps were waited: never less (a bound below holds under load)
    started = [e for e in events if e.kind == "step_started" and e.data["tool_name"] == "sleep"]
    assert [e.data["input"]["for"] for e in started] == ["200ms", "100ms"]
    for e in started:
        assert began <= e.data["input"]["until"] <= time.time()
    finished = [e for e in events if e.kind == "step_finished" and e.path in ("E0", "E1")]
    assert [e.data["elapsed_ms"] >= 100 for e in finished] == [True, True]


def test_the_console_line_says_sleeping_until_the_wake_up_time(tmp_path):
    flow = tmp_path / "poll.flow"
    flow.write_text(POLL)
    out = io.StringIO()
    result = agentflow.run_sync(flow, {"wait": "1ms"}, sinks=[ConsoleSink(out)], config=None)
    assert result.status == "ok", result.error
    lines = [line for line in out.getvalue().splitlines() if line.startswith("▶ s › sleep")]
    assert len(lines) == 2, out.getvalue()
    assert lines[0].startswith(f"▶ s › sleep  {flow}:3:3 · sleeping until ")
    assert lines[0].endswith(" (200ms)")
    clock = lines[0].split("sleeping until ")[1].split(" ")[0]
    assert len(clock) == 8 and clock.count(":") == 2  # HH:MM:SS today


def test_the_deadline_ends_a_long_sleep_at_the_deadline(tmp_path):
    flow = tmp_path / "late.flow"
    flow.write_text("deadline 300ms\nstage s -> int {\n  sleep 1h\n  return 1\n}\n")
    with Stretch() as stretch:
        result = agentflow.run_sync(flow, {}, config=None)
    assert result.status == "error"
    assert result.error["code"] == "deadline_exceeded"
    assert "expired during `sleep`" in result.error["message"]
    assert stretch.took < stretch.bound(5.0)


def test_a_computed_duration_out_of_range_fails_with_validation(tmp_path):
    flow = tmp_path / "bad.flow"
    flow.write_text(POLL)
    for wait, shown in (("0s", '"0s"'), ("9000h", '"9000h"')):
        result = agentflow.run_sync(flow, {"wait": wait}, config=None)
        assert result.status == "error"
        assert result.error["code"] == "validation"
        assert result.error["message"] == (
            f"`sleep` needs a duration from 1ms to 8760h (365 days), got {shown}"
        )
        assert result.error["source"].endswith("bad.flow:4:3")


def test_flowc_test_sleeps_in_virtual_time_and_lists_the_sleeps(tmp_path):
    (tmp_path / "wait.flow").write_text(
        "input { wait: duration }\n"
        "stage s -> int {\n  sleep 1h\n  sleep input.wait\n  return 1\n}\n"
        'test "sleeps take no time" {\n  input { wait: 90m }\n'
        "  expect s == 1\n  expect sleeps == [1h, 90m]\n  expect sleeps.count == 2\n}\n"
        'test "a wrong expectation of the sleeps fails" {\n  input { wait: 1s }\n'
        "  expect sleeps == [1h]\n}\n"
    )
    with Stretch() as stretch:
        report = api.run_tests(tmp_path)
    assert stretch.took < stretch.bound(10.0)  # not an hour and a half
    outcomes = {o.name: o for o in report.outcomes}
    assert outcomes["sleeps take no time"].passed, outcomes["sleeps take no time"].failures
    assert not outcomes["a wrong expectation of the sleeps fails"].passed


def test_flowc_test_keeps_the_deadline_in_virtual_time(tmp_path):
    (tmp_path / "late.flow").write_text(
        "deadline 1m\nstage s -> int {\n  sleep 2m\n  return 1\n}\n"
        'test "a sleep past the deadline" {\n  expect fail "deadline_exceeded"\n}\n'
    )
    report = api.run_tests(tmp_path)
    assert report.ok, [(o.name, o.failures) for o in report.outcomes]


def test_flowc_test_virtual_sleeps_use_up_the_deadline_and_parallel_ones_overlap(tmp_path):
    """Before: each sleep was compared with the whole deadline, so two of 1h30m under
    `deadline 2h` passed in `flowc test` though a real run fails `deadline_exceeded`."""
    (tmp_path / "twice.flow").write_text(
        "deadline 2h\nstage s -> int {\n  sleep 1h30m\n  sleep 1h30m\n  return 1\n}\n"
        'test "the second sleep outlasts what is left" {\n  expect fail "deadline_exceeded"\n}\n'
    )
    (tmp_path / "fan.flow").write_text(
        "deadline 2h\nstage a -> int[] {\n"
        "  return parallel map [1, 2, 3] as x limit 3 {\n    sleep 1h30m\n    x\n  }\n}\n"
        "stage b -> int {\n  sleep 20m\n  return 1\n}\n"
        'test "concurrent sleeps overlap: 1h50m in all" {\n  expect b == 1\n}\n'
    )
    (tmp_path / "late.flow").write_text(
        "deadline 2h\nstage a -> int[] {\n"
        "  return parallel map [1, 2] as x limit 2 {\n    sleep 1h30m\n    x\n  }\n}\n"
        "stage b -> int {\n  sleep 40m\n  return 1\n}\n"
        'test "after the longest concurrent sleep" {\n  expect fail "deadline_exceeded"\n}\n'
    )
    report = api.run_tests(tmp_path)
    assert report.ok, [(o.name, o.failures) for o in report.outcomes]
    assert len(report.outcomes) == 3


def test_flowc_test_explore_sleeps_in_virtual_time_too(tmp_path):
    flow = tmp_path / "hour.flow"
    flow.write_text("stage s -> int {\n  sleep 1h\n  return 1\n}\n")
    with Stretch() as stretch:
        report = api.explore(flow, 1)
    assert stretch.took < stretch.bound(10.0)  # not an hour
    assert report.failures == []


def test_ctrl_c_ends_a_plain_runs_sleep_at_once(tmp_path):
    (tmp_path / "hour.flow").write_text("stage s -> int {\n  sleep 1h\n  return 1\n}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentflow", "run", "hour.flow"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "sleeping until" in line:
            break
    with Stretch() as stretch:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert stretch.took < stretch.bound(5.0)
    text = "".join(seen) + err
    assert proc.returncode == 130, text
    assert "interrupted by SIGINT" in text and "Traceback" not in text
