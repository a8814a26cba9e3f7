"""SIGINT / SIGTERM during `flowc run` and `run_sync` (runtime/interrupt.py: `run`, `until_stopped`):
the run winds down, the trace gets its run_finished, the finished steps come back, and the exit
code is the shell's 128 + signal.  Real processes, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

PLAN = """\
version: 1
name: slow
steps:
  - {id: E0, tool_name: value, input: {value: 1}}
  - {id: E1, tool_name: user__nap, input: {s: 30}}
"""
TOOLS = '''\
import asyncio, sys


async def nap(s: float) -> float:
    """Sleep s seconds."""
    print("NAPPING", file=sys.stderr, flush=True)
    await asyncio.sleep(s)
    return s
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "slow.plan.yaml").write_text(PLAN, encoding="utf-8")
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    return tmp_path


def _interrupt(cmd: list[str], cwd: Path, sig: int) -> tuple[int, str, str]:
    """Start ``cmd``, wait until the slow tool runs (it says NAPPING on stderr), send ``sig``."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if "NAPPING" in line:
            break
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, "".join(seen) + err


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_flowc_run_winds_down_on_a_signal(project, sig, code):
    flowc = str(Path(sys.executable).with_name("flowc"))
    cmd = [flowc, "run", "slow.plan.yaml", "--config", "flow.toml", "--trace", "t.jsonl", "--json"]
    rc, out, err = _interrupt(cmd, project, sig)
    name = signal.Signals(sig).name
    assert rc == code, err
    assert f"interrupted by {name}; steps finished: E0" in err
    assert "Traceback" not in err
    result = json.loads(out)
    assert result["status"] == "aborted"
    assert result["results"] == {"E0": 1}
    assert result["error"]["message"] == f"interrupted by {name}"
    events = [json.loads(line) for line in (project / "t.jsonl").read_text().splitlines()]
    assert events[-1]["kind"] == "run_finished"
    assert events[-1]["data"]["status"] == "aborted"
    finished = [e for e in events if e["kind"] == "step_finished" and e["path"] == "E1"]
    assert finished and finished[0]["data"]["error"]["code"] == "aborted"


MAP_FLOW = """\
input { items: int[] }
extern tool user__nap(s: int) -> int
stage prep -> int[] { map [0, 0] as it { user__nap(s: it) } }
stage measure -> int[] {
  map input.items as it { user__nap(s: it) }
}
"""
NAP_TOOLS = '''\
import asyncio, sys


async def nap(s: int) -> int:
    """Sleep s seconds."""
    if s:
        print("NAPPING", file=sys.stderr, flush=True)
    await asyncio.sleep(s)
    return s
'''


def test_a_stopped_map_reports_its_finished_items(tmp_path):
    # a map runs one item at a time: prep's map finishes (it is a finished step, nothing
    # partial); measure's item 0 finishes, item 1 naps when SIGTERM comes
    (tmp_path / "m.flow").write_text(MAP_FLOW, encoding="utf-8")
    (tmp_path / "tools.py").write_text(NAP_TOOLS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    flowc = str(Path(sys.executable).with_name("flowc"))
    cmd = [flowc, "run", "m.flow", "--json", "--input", '{"items": [0, 30, 30]}']
    rc, out, err = _interrupt(cmd, tmp_path, signal.SIGTERM)
    assert rc == 143, err
    assert (
        "interrupted by SIGTERM; steps finished: prep › map; "
        "measure › map  m.flow:5:3: 1 of 3 items finished (item 0)"
    ) in err
    result = json.loads(out)
    assert result["status"] == "aborted" and result["results"] == {"E0": [0, 0]}
    assert result["partial"] == {
        "E1": {
            "of": 3,
            "items": {"0": 0},
            "stage": "measure",
            "label": "measure › map",
            "source": "m.flow:5:3",
        }
    }


def test_run_sync_raises_interrupted_with_the_partial_result(project):
    script = textwrap.dedent(
        """\
        import sys
        import agentflow
        from agentflow.errors import Interrupted

        try:
            agentflow.run_sync("slow.plan.yaml", {}, config="flow.toml")
        except Interrupted as e:
            assert isinstance(e, KeyboardInterrupt)
            print(e.signal, e.exit_code, e.result.status, sorted(e.result.results))
        """
    )
    rc, out, err = _interrupt([sys.executable, "-c", script], project, signal.SIGINT)
    assert rc == 0, err
    assert out.split() == ["SIGINT", "130", "aborted", "['E0']"]


STUBBORN_TOOLS = '''\
import asyncio, sys, time
from pathlib import Path

print("LOADING", file=sys.stderr, flush=True)
if Path("slow_import").exists():  # slow, within the 2 s a stop may take (runtime/watchdog.py)
    time.sleep(1)


async def deaf() -> int:
    """Ignores every cancellation."""
    print("DEAF", file=sys.stderr, flush=True)
    while True:
        try:
            await asyncio.sleep(100)
        except asyncio.CancelledError:
            print("IGNORED", file=sys.stderr, flush=True)


def touch() -> str:
    """A side effect."""
    Path("touched").write_text("x")
    return "x"
'''


def _start(cmd: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )


def _wait_for(proc: subprocess.Popen, marker: str, seen: list[str]) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if marker in line:
            return
    raise AssertionError("".join(seen))


@pytest.fixture
def deaf_project(tmp_path: Path) -> Path:
    (tmp_path / "tools.py").write_text(STUBBORN_TOOLS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    (tmp_path / "deaf.plan.yaml").write_text(
        "version: 1\nname: deaf\nsteps:\n"
        "  - {id: E0, tool_name: value, input: {value: 1}}\n"
        "  - {id: E1, tool_name: user__deaf, input: {}}\n",
        encoding="utf-8",
    )
    (tmp_path / "touch.plan.yaml").write_text(
        "version: 1\nname: touch\nsteps:\n  - {id: E0, tool_name: user__touch, input: {}}\n",
        encoding="utf-8",
    )
    return tmp_path


def test_a_second_signal_stops_even_a_tool_that_ignores_cancellation(deaf_project):
    flowc = str(Path(sys.executable).with_name("flowc"))
    cmd = [flowc, "run", "deaf.plan.yaml", "--config", "flow.toml", "--trace", "t.jsonl"]
    proc = _start(cmd, deaf_project)
    seen: list[str] = []
    _wait_for(proc, "DEAF", seen)
    proc.send_signal(signal.SIGINT)
    _wait_for(proc, "IGNORED", seen)  # the graceful stop waits for the step...
    proc.send_signal(signal.SIGINT)  # ...and the second Ctrl-C stops at once
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the second SIGINT did not stop the run")
    assert proc.returncode == 130, "".join(seen) + err
    assert "Traceback" not in err and "destroyed but it is pending" not in err
    events = [json.loads(x) for x in (deaf_project / "t.jsonl").read_text().splitlines()]
    assert events[-1]["kind"] == "run_finished"


def test_a_signal_while_the_tools_load_stops_before_the_first_step(deaf_project):
    (deaf_project / "slow_import").write_text("")
    flowc = str(Path(sys.executable).with_name("flowc"))
    cmd = [flowc, "run", "touch.plan.yaml", "--config", "flow.toml", "--json"]
    proc = _start(cmd, deaf_project)
    seen: list[str] = []
    _wait_for(proc, "LOADING", seen)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, "".join(seen) + err
    assert not (deaf_project / "touched").exists()  # the step never ran
    result = json.loads(out)
    assert result["status"] == "aborted" and result["results"] == {}


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs /proc/PID/wchan")
def test_ctrl_c_before_the_run_starts_exits_130(tmp_path):
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    (tmp_path / "p.plan.yaml").write_text(PLAN, encoding="utf-8")
    flowc = str(Path(sys.executable).with_name("flowc"))
    proc = _start([flowc, "run", "p.plan.yaml", "--input", f"@{fifo}"], tmp_path)
    wchan = Path(f"/proc/{proc.pid}/wchan")
    for _ in range(300):  # until it blocks opening the FIFO (before any event loop exists)
        if not wchan.exists() or "partner" in wchan.read_text():
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err
    assert "Aborted!" not in err and "Traceback" not in err
    assert "interrupted by SIGINT" in err


def test_a_durable_outcome_keeps_the_partial_items_by_index():
    # a durable run's outcome is recorded as RunResult.to_dict(); reading it back (durable
    # execution.result_of, temporal_runs) gives the same `partial`, item indices as integers
    from agentflow.runtime.result import RunResult, partial_from_json

    partial = {"E1": {"of": 3, "items": {0: 1, 2: [3]}, "label": "measure › map"}}
    data = json.loads(json.dumps(RunResult("aborted", partial=partial).to_dict()))
    assert data["partial"] == {
        "E1": {"of": 3, "items": {"0": 1, "2": [3]}, "label": "measure › map"}
    }
    assert partial_from_json(data["partial"]) == partial
    assert "partial" not in RunResult("ok").to_dict()
    # a loop's, a reduce's and a parallel's entries (no indices) come back as they were
    bodies = {
        "E0": {"kind": "parallel", "of": 2, "branches": {"a": {"x": 1}}},
        "E0/b/E1": {"kind": "loop", "of": 5, "rounds": 2, "state": [1, 2], "label": "l"},
        "E2": {"kind": "reduce", "of": 4, "folded": 3, "accumulator": {"n": 3}},
    }
    data = json.loads(json.dumps(RunResult("cancelled", partial=bodies).to_dict()))
    assert data["partial"] == bodies
    assert partial_from_json(data["partial"]) == bodies
    assert partial_from_json(None) == {}


BODIES_PLAN = """\
version: 1
name: bodies
steps:
  - id: E0
    tool_name: parallel
    input:
      branches:
        quick: {tool_name: value, input: {value: 7}}
        rounds: {tool_name: plan__rounds, input: {}}
        fold: {tool_name: plan__fold, input: {}}
plans:
  rounds:
    version: 1
    name: rounds
    steps:
      - id: E1
        tool_name: loop
        input:
          up_to: 3
          initial: 0
          do: {tool_name: user__nap, input: {s: "{{ (round - 1) * 30 }}"}}
    finish: {output: "{{ E1 }}"}
  fold:
    version: 1
    name: fold
    steps:
      - id: E2
        tool_name: reduce
        input:
          over: [0, 0, 30, 30]
          initial: 0
          do: {tool_name: user__nap, input: {s: "{{ item }}"}}
    finish: {output: "{{ E2 }}"}
"""


def _sigterm_at_the_second_nap(tmp_path: Path, name: str, plan: str, tools: str) -> tuple[str, str]:
    """Run plan ``name`` (``plan``, its tools ``tools``) with ``flowc run --json``, SIGTERM it
    once a second tool naps (its ``NAPPING`` line), and return its stdout and whole stderr
    after checking it exited 143."""
    (tmp_path / name).write_text(plan, encoding="utf-8")
    (tmp_path / "tools.py").write_text(tools, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    flowc = str(Path(sys.executable).with_name("flowc"))
    proc = subprocess.Popen(
        [flowc, "run", name, "--json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if sum("NAPPING" in s for s in seen) == 2:
            break
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    err = "".join(seen) + err
    assert proc.returncode == 143, err
    return out, err


def test_a_stopped_loop_reduce_and_parallel_report_what_they_finished(tmp_path):
    # the parallel's `quick` branch finishes; its loop finishes round 1 and naps in round 2,
    # its reduce folds items 0 and 1 and naps on item 2 when SIGTERM comes
    out, err = _sigterm_at_the_second_nap(tmp_path, "b.plan.yaml", BODIES_PLAN, NAP_TOOLS)
    result = json.loads(out)
    assert result["status"] == "aborted" and result["results"] == {}
    assert result["partial"] == {
        "E0": {"kind": "parallel", "of": 3, "branches": {"quick": 7}},
        "E0/fold/E2": {"kind": "reduce", "of": 4, "folded": 2, "accumulator": 0},
        "E0/rounds/E1": {"kind": "loop", "of": 3, "rounds": 1, "state": 0},
    }
    assert (
        "interrupted by SIGTERM; steps finished: none; "
        "E0: 1 of 3 branches finished (quick); "
        "E0/fold/E2: 2 of 4 items folded (items 0, 1); "
        "E0/rounds/E1: 1 of 3 rounds finished"
    ) in err


LOOP_FLOW = """\
extern tool user__nap(s: int) -> int
stage warm -> int {
  loop up to 3 as r, s = 0 { user__nap(s: s + (r - 1) * 30) }
}
"""


@pytest.mark.parametrize("durable", [[], ["--durable"]], ids=["plain", "durable"])
def test_a_stopped_loop_is_reported_in_the_flows_terms(tmp_path, durable):
    # round 1 naps 0 s and gives 0; round 2 naps when SIGINT comes (durable: the outcome
    # recorded by the engine is what --json prints)
    (tmp_path / "l.flow").write_text(LOOP_FLOW, encoding="utf-8")
    (tmp_path / "tools.py").write_text(NAP_TOOLS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    flowc = str(Path(sys.executable).with_name("flowc"))
    cmd = [flowc, "run", "l.flow", "--json", *durable]
    rc, out, err = _interrupt(cmd, tmp_path, signal.SIGINT)
    assert rc == 130, err
    assert (
        "interrupted by SIGINT; steps finished: none; "
        "warm › loop  l.flow:3:3: 1 of 3 rounds finished"
    ) in err
    result = json.loads(out)
    assert ("run_id" in result) == bool(durable)
    assert result["partial"] == {
        "E0": {
            "kind": "loop",
            "of": 3,
            "rounds": 1,
            "state": 0,
            "stage": "warm",
            "label": "warm › loop",
            "source": "l.flow:3:3",
        }
    }


CAUGHT_PLAN = """\
version: 1
name: caught
steps:
  - id: E0
    tool_name: try
    input:
      do: {tool_name: plan__both, input: {}}
      catch: {tool_name: value, input: {value: caught}}
  - {id: E1, tool_name: user__nap, input: {s: 30}}
plans:
  both:
    version: 1
    name: both
    steps:
      - id: E2
        tool_name: parallel
        input:
          branches:
            bad: {tool_name: user__boom, input: {}}
            rounds: {tool_name: plan__rounds, input: {}}
    finish: {output: "{{ E2 }}"}
  rounds:
    version: 1
    name: rounds
    steps:
      - id: E3
        tool_name: loop
        input:
          up_to: 3
          initial: 0
          do: {tool_name: user__nap, input: {s: "{{ (round - 1) * 30 }}"}}
    finish: {output: "{{ E3 }}"}
"""
BOOM_TOOLS = (
    NAP_TOOLS
    + '''

async def boom() -> int:
    """Fail once the loop naps in its round 2."""
    await asyncio.sleep(0.3)
    raise RuntimeError("boom")
'''
)


def test_a_loop_cancelled_by_a_failing_sibling_is_not_reported_when_the_run_stops(tmp_path):
    # the parallel's `bad` branch fails while the loop naps in round 2 (the loop is cancelled,
    # the failure caught); E1 naps when SIGTERM comes: nothing was stopped part-way
    out, err = _sigterm_at_the_second_nap(tmp_path, "c.plan.yaml", CAUGHT_PLAN, BOOM_TOOLS)
    result = json.loads(out)
    assert result["results"] == {"E0": "caught"}
    assert "partial" not in result, result["partial"]
    assert "interrupted by SIGTERM; steps finished: E0\n" in err, err


async def test_a_loop_thread_runs_work_on_its_own_loop_and_a_cancel_reaches_it():
    # `flowc serve`'s Temporal worker and its runs live on such a loop (interrupt.LoopThread):
    # the caller's loop goes on; the work's value and error come back; cancelling the awaiting
    # task cancels the work there
    import asyncio
    import threading

    from agentflow.runtime.interrupt import LoopThread

    engine = LoopThread(name="test-loop")
    try:
        here = threading.current_thread()

        async def where() -> bool:
            await asyncio.sleep(0)
            return threading.current_thread() is not here

        assert await engine.run(where)

        async def fails() -> None:
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            await engine.run(fails)
        ended = threading.Event()

        async def waits() -> None:
            try:
                await asyncio.sleep(60)
            finally:
                ended.set()

        task = asyncio.ensure_future(engine.run(waits))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(ended.wait, 10)
    finally:
        engine.close()
    with pytest.raises(RuntimeError):
        await engine.run(where)
