"""What ``flowc run`` and ``flowc runs show`` say of a compiled `.flow` names its places as the
`.flow` does — stage, ``let``, construct, file:line — never a compiled id, a plan step path
before the user's name, or the name of a sub-plan the compiler outlined (``t__s_0``); the
step path stays only after the user's name.  One golden file holds what they print
(tests/cli/golden/run-messages.txt; times masked)."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner
from support.paths import REPO

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

GOLDEN = REPO / "tests" / "cli" / "golden" / "run-messages.txt"

#: an MCP tool of a server flow.toml does not configure, in a branch the compiler outlines
UNCONFIGURED = """\
flow t
input { n: int }
extern tool linear__list_issues(team: text) -> json

stage s -> json {
  if input.n > 0 {
    return 1
  } else {
    let a = linear__list_issues(team: "x")
    let _b = list_dir(path: ".")
    return a
  }
}
"""

#: a failure in what a `let` bound to an ask does with the answer (folded into the ask's step)
ASKED = """\
flow t
input { n: int }
type Call = "urgent" | "later"

stage triage -> int {
  if input.n > 0 {
    return 1
  } else {
    let decision = ask "Is it urgent?" expect Call default "later"
    let k = parse_int(decision)
    return k
  }
}
"""

#: a stage whose value is a step of its own: its line is the `return`'s
VALUE = """\
flow t6
input { email: text }

stage triage -> { a: text, b: int } {
  let n = 3
  return {
    a: input.email,
    b: n
  }
}
"""

#: a tool that fails in an outlined branch of a durable run: `runs show` names it and its error
OUTLINED = """\
flow t3
input { n: int }

stage s -> int {
  if input.n > 0 {
    return 1
  } else {
    let a = read_file(path: "nope.txt")
    let b = list_dir(path: ".")
    return a.count + b.count
  }
}
"""


#: a failure in the flow's output, a pure last stage the compiler inlined into the plan's finish
FINISH = """\
flow t2
input { n: int }

stage listed -> int {
  return list_dir(path: ".").count
}

stage s -> int {
  let r = [1, 2]
  return r[input.n + 5]
}
"""


def _masked(text: str) -> str:
    text = re.sub(r"\d+\.\d+s\b", "N.NNs", text)
    return re.sub(r"\d\d:\d\d:\d\d", "HH:MM:SS", text)


def _flowc(*args: str) -> str:
    try:
        done = CliRunner().invoke(main, list(args))
    finally:
        shutdown()
    return f"$ flowc {' '.join(args)}  # exit {done.exit_code}\n{done.stdout}{done.stderr}"


def test_run_and_runs_show_name_places_as_the_flow_does(tmp_path: Path, monkeypatch, golden):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    flows = (("mcp", UNCONFIGURED), ("asked", ASKED), ("value", VALUE), ("finish", FINISH))
    for name, text in flows:
        (tmp_path / f"{name}.flow").write_text(text)
    (tmp_path / "outlined.flow").write_text(OUTLINED)
    shown = [
        _flowc("run", "mcp.flow", "--input", '{"n": 0}'),
        _flowc("run", "asked.flow", "--input", '{"n": 0}'),
        _flowc("run", "value.flow", "--input", '{"email": "x"}'),
        _flowc("run", "finish.flow", "--input", '{"n": 0}'),
        _flowc("run", "outlined.flow", "--durable", "--run-id", "o1", "--input", '{"n": 0}'),
    ]
    runs_show = _flowc("runs", "show", "o1")
    shown.append("\n".join(line for line in runs_show.splitlines() if "started" not in line) + "\n")
    text = _masked("\n".join(shown))
    for internal in ("t__s_0", "(plan ", "at step", "result.answer"):
        assert internal not in text, internal
    golden.check(GOLDEN, text)
