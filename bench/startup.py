"""Benchmark: start-up of ``flowc`` commands beside the peers' import times (issue 35).

Each command runs in a fresh process (bytecode caches written first, as an installed package
has them), alternating with the others round by round; prints the median wall time and the
median CPU time (user + system, which a loaded machine stretches less) of ``--rounds`` rounds,
each command's budget (CPU), and the heavy modules each command imported:

- ``flowc --version``; ``flowc check`` of a small flow; ``flowc run`` of a trivial flow (no
  agent); ``flowc runs`` (a SQLite database with one run); a fresh agent task: ``flowc run`` of
  a flow whose agent calls a tool then answers, against a scripted OpenAI-compatible server on
  127.0.0.1 (agentflow.testing.ChatServer);
- beside them, in the bench environment (``.venv-bench``: ``pip install -e '.[bench]'
  instructor``), the import time of Pydantic AI, LangGraph and Instructor, and Pydantic AI's
  fresh agent task (the same server, the same task: one tool call, then a typed answer).

Goal (issue 35): the fresh agent task ≤ ⅓ of the fastest peer's.

    .venv-bench/bin/python bench/startup.py [--rounds 5] [--peers PYTHON]
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, str(ROOT / "src"))

from agentflow.testing.chat_server import ChatServer, completion, tool_calls  # noqa: E402

#: CPU budget (user + system, seconds) of each command on the shared 2-core machine.
BUDGET = {
    "flowc --version": 0.25,
    "flowc check": 0.45,
    "flowc run (trivial)": 0.65,
    "flowc runs": 1.2,
    "flowc run (agent task)": 0.8,
}
HEAVY = (
    *("sqlalchemy", "dbos", "psycopg", "jsonschema", "httpx", "rich", "pygments", "mcp"),
    "opentelemetry",
)

TRIVIAL = """\
flow trivial "Add one"
input { x: int }
stage main -> int {
  return input.x + 1
}
"""

AGENT = """\
flow triage "Triage a bug"
input { title: text }

type Finding {
  /// where the bug is
  file: path
  reason: text
}

use agent "finder" as finder

stage find -> Finding {
  return agent(finder) {
    task "Find the file that causes: ${input.title}"
    tools [read_file]
    expect Finding
  }
}
"""

ANSWER = {"file": "src/config.py", "reason": "config['name'] is read without a default"}

PEER_AGENT = """\
import sys
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

class Finding(BaseModel):
    file: str
    reason: str

model = OpenAIChatModel("test-model", provider=OpenAIProvider(base_url=sys.argv[1], api_key="k"))
agent = Agent(model, output_type=Finding)

@agent.tool_plain
def read_file(path: str) -> str:
    \"\"\"Read a text file of the workspace.\"\"\"
    return open(path).read()

print(agent.run_sync("Find the file that causes: crash on start").output)
"""


PEER_INSTRUCTOR = """\
import sys
import instructor
from openai import OpenAI
from pydantic import BaseModel

class Finding(BaseModel):
    file: str
    reason: str

client = instructor.from_openai(OpenAI(base_url=sys.argv[1], api_key="k"))
print(client.chat.completions.create(
    model="test-model",
    response_model=Finding,
    messages=[{"role": "user", "content": "Find the file that causes: crash on start"}],
))
"""


def script(request: dict) -> object:
    """Round 1: read_file; round 2: the answer (a final_result call where one is offered);
    Instructor's one request: its `Finding` tool call."""
    names = [t["function"]["name"] for t in request.get("tools") or []]
    if "Finding" in names:
        return tool_calls(("Finding", ANSWER))
    done = sum(1 for m in request.get("messages", []) if m.get("role") == "tool")
    if done == 0:
        return tool_calls(("read_file", {"path": "src/config.py"}))
    if "final_result" in names:
        return tool_calls(("final_result", ANSWER))
    return completion(json.dumps(ANSWER))


def _env() -> dict[str, str]:
    env = dict(os.environ, SCRIPTED_API_KEY="k", NO_COLOR="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode cached
    return env


def timed(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its stderr tail) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return wall, cpu, proc.stderr


def imported(python: str, argv: list[str], cwd: Path) -> list[str]:
    """The heavy top-level packages a command imports (its sys.modules at exit)."""
    code = (
        "import sys, runpy, json\n"
        f"sys.argv = ['flowc', *{argv!r}]\n"
        "try:\n    runpy.run_module('agentflow', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        f"print('MODULES', json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))\n"
    )
    out = subprocess.run(
        [python, "-c", code], cwd=cwd, env=_env(), capture_output=True, text=True
    ).stdout
    for line in out.splitlines():
        if line.startswith("MODULES "):
            return json.loads(line[len("MODULES ") :])
    return ["?"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--peers", default=sys.executable, help="the Python that has the peers")
    ap.add_argument(
        "--baseline",
        metavar="SRC",
        help="another version's src/ directory (e.g. from `git archive`): its commands run "
        "interleaved with these, under the same load, marked 'before'",
    )
    args = ap.parse_args()
    python = sys.executable
    flowc = [python, "-m", "agentflow"]
    with ChatServer(script) as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "trivial.flow").write_text(TRIVIAL)
        (work / "agent.flow").write_text(AGENT)
        (work / "src").mkdir()
        (work / "src" / "config.py").write_text("def load(data):\n    return data['name']\n")
        server.write_config(work)
        commands = {
            "flowc --version": [*flowc, "--version"],
            "flowc check": [*flowc, "check", "agent.flow"],
            "flowc run (trivial)": [*flowc, "run", "trivial.flow", "--input", '{"x": 1}'],
            "flowc runs": [*flowc, "runs"],
            "flowc run (agent task)": [*flowc, "run", "agent.flow", "--input", '{"title": "x"}'],
        }
        peers = {
            "import pydantic_ai": [args.peers, "-c", "import pydantic_ai"],
            "import langgraph": [args.peers, "-c", "import langgraph.graph"],
            "import instructor": [args.peers, "-c", "import instructor"],
            "Pydantic AI (agent task)": [args.peers, "-c", PEER_AGENT, server.url],
            "Instructor (one typed call)": [args.peers, "-c", PEER_INSTRUCTOR, server.url],
        }
        available = {}
        for label, argv in peers.items():
            probe = subprocess.run(argv, cwd=work, env=_env(), capture_output=True)
            if probe.returncode == 0:
                available[label] = argv
            else:
                print(f"({label}: not available with {args.peers})")
        timed([*flowc, "run", "trivial.flow", "--durable", "--input", '{"x": 1}'], work)
        subprocess.run([python, "-m", "compileall", "-q", str(ROOT / "src")], env=_env())
        before = {}
        if args.baseline:
            base = ["env", f"PYTHONPATH={Path(args.baseline).resolve()}"]
            before = {f"{k} before": [*base, *argv] for k, argv in commands.items()}
            timed([*base, *flowc, "--version"], work)  # its bytecode written
        every = {**commands, **before, **available}
        for argv in every.values():  # warm the bytecode and the file cache
            timed(argv, work)
        walls: dict[str, list[float]] = {k: [] for k in every}
        cpus: dict[str, list[float]] = {k: [] for k in every}
        for _ in range(args.rounds):
            for label, argv in every.items():
                wall, cpu, _err = timed(argv, work)
                walls[label].append(wall)
                cpus[label].append(cpu)
        load = os.getloadavg()[0]
        print(f"median of {args.rounds} rounds, load average {load:.1f}; CPU = user + system\n")
        print(f"{'command':<28} {'wall':>7} {'CPU':>7} {'budget':>7}  imports")
        for label in every:
            wall = statistics.median(walls[label])
            cpu = statistics.median(cpus[label])
            budget = BUDGET.get(label)
            mark = "" if budget is None else (" ok" if cpu <= budget else " OVER")
            mods = ""
            if label in commands:
                mods = ", ".join(imported(python, commands[label][3:], work)) or "-"
            shown = f"{budget:.2f}" if budget is not None else ""
            print(f"{label:<28} {wall:>6.2f}s {cpu:>6.2f}s {shown:>7}{mark:<5} {mods}")
        print()
        tasks = [k for k in available if not k.startswith("import ")]
        for name, figures in (("wall", walls), ("CPU", cpus)):
            agent = statistics.median(figures["flowc run (agent task)"])
            fastest = min(tasks, key=lambda k: statistics.median(figures[k]), default=None)
            if fastest is not None:
                peer = statistics.median(figures[fastest])
                print(
                    f"fresh agent task / fastest peer's task ({fastest}), {name}: "
                    f"{agent:.2f}s / {peer:.2f}s = {agent / peer:.2f} (goal ≤ 0.33)"
                )


if __name__ == "__main__":
    main()
