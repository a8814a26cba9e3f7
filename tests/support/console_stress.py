"""The console stress scenario (issue 28): ``flowc run`` on a real pseudo-terminal, its live view
up, a ``parallel map`` whose items emit events as fast as the tools return, then one whose items
each ask a question on the terminal; the questions are answered as a person would — ``yes``, ``n``,
``Y``, ``FALSE``, one nonsense answer that must be refused and asked again — while the other
items go on.

Used by ``tests/cli/test_console_under_a_terminal.py`` (a few iterations) and
``bench/console_stress.py`` (200 in a row). The view froze for good when the sink's lock and rich's
``Live`` lock were taken in opposite orders: a run then never ends, which :func:`run_once` reports
as a failure after ``timeout`` seconds.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from support.terminal import Terminal

FLOWC = str(Path(sys.executable).with_name("flowc"))

TOOLS = textwrap.dedent(
    '''
    def tick(n: int) -> int:
        """n + 1"""
        return n + 1
    '''
)

FLOW = textwrap.dedent(
    """
    flow stress "the console under load"
    input { items: int[], asked: int[] }
    extern tool user__tick(n: int) -> int
    type Item { n: int, keep: bool }

    stage burst -> int[] {
      parallel map input.items as x limit 8 {
        let a = user__tick(n: x)
        let b = user__tick(n: a)
        let c = user__tick(n: b)
        let d = user__tick(n: c)
        user__tick(n: d)
      }
    }

    stage work -> Item[] {
      parallel map input.asked as x limit 4 {
        let a = user__tick(n: x)
        let b0 = user__tick(n: a)
        let keep = ask "Keep item ${x}?" expect bool default false
        let b = user__tick(n: b0)
        return { n: b, keep: keep }
      }
    }
    """
)

#: how the answers are spelled, in turn: each means ``keep = (item is even)``
YES = ["yes", "Y", "true", "y", "YES"]
NO = ["n", "no", "FALSE", "No", "false"]


def project(root: Path) -> Path:
    """Write the scenario's flow, tools and flow.toml into ``root``; returns ``root``."""
    (root / "stress_tools.py").write_text(TOOLS, encoding="utf-8")
    (root / "flow.toml").write_text(
        '[tools]\nmodules = ["stress_tools.py"]\nentry_points = false\n', encoding="utf-8"
    )
    (root / "stress.flow").write_text(FLOW, encoding="utf-8")
    return root


@dataclass
class Outcome:
    """One run of the scenario: seconds from start to exit, questions answered, answers refused
    and asked again."""

    seconds: float
    asked: int
    refused: int


def run_once(root: Path, items: int = 32, asks: int = 6, timeout: float = 60.0) -> Outcome:
    """Run the scenario once in ``root`` (made by :func:`project`): ``items`` items of five tool
    calls each, then ``asks`` items that each ask a question between their tool calls.
    Raises AssertionError (with what the terminal showed) when the run does not end within
    ``timeout`` seconds, exits non-zero, refuses a right answer, accepts the nonsense one or
    returns another output than the answers given."""
    started = time.monotonic()
    out = root / "out.json"
    argv = [
        FLOWC,
        "run",
        "stress.flow",
        "--input",
        json.dumps({"items": list(range(items)), "asked": list(range(asks))}),
    ]
    question = re.compile(r"Keep item (\d+)\?[\s\S]*?\n> ")
    with out.open("w") as stdout, Terminal(argv, cwd=root, stdout=stdout) as term:
        pos = 0
        for turn in range(asks):
            left = timeout - (time.monotonic() - started)
            found = term.expect(question.pattern, timeout=max(left, 0.1), start=pos)
            pos = found.end()
            n = int(found.group(1))
            if turn == asks // 2:  # a nonsense answer: refused with the reason, asked again
                term.send("perhaps")
                again = term.expect(r"not accepted: [^\n]*try again\n> ", timeout=10, start=pos)
                pos = again.end()
            term.send((YES if n % 2 == 0 else NO)[turn % 5])
        try:
            code = term.wait(timeout=max(timeout - (time.monotonic() - started), 0.1))
        except Exception:  # noqa: BLE001 - any failure to end is the finding
            raise AssertionError(
                f"the run did not end within {timeout}s; the terminal showed:\n{term.text[-3000:]}"
            ) from None
        shown = term.text
    assert code == 0, f"exit {code}; the terminal showed:\n{shown[-3000:]}"
    output = json.loads(out.read_text())
    assert output == [{"n": i + 3, "keep": i % 2 == 0} for i in range(asks)], output
    # the refusals the terminal showed (each `not accepted: … try again`)
    refused = len(re.findall(r"not accepted: [^\n]*try again", shown))
    return Outcome(time.monotonic() - started, asks, refused)
