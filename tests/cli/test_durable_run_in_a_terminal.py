"""A durable run in a terminal (issue 28 item 8): its waiting question and the `flowc answer`
command stay on the screen under the live view, `flowc runs` says the run is waiting, the answer
may be spelled `yes`, and DBOS's own log goes to `.flowc/dbos.log`, never to the terminal.

Before: the notice was written with ``click.echo``, which does not take rich's stderr proxy for a
text stream and wrote beneath it to the terminal's raw buffer, where the view's next redraw erased
it; DBOS's logger had its own stderr handler (an ``[ERROR] … Traceback`` of a handled tool error
looked like a crash); ``flowc answer RUN STEP yes`` was refused for a ``bool``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from support.terminal import Terminal

FLOWC = str(Path(sys.executable).with_name("flowc"))

FLOW = textwrap.dedent(
    """
    flow q "a durable question"
    extern tool user__wait(s: int) -> bool

    stage confirm -> bool[] {
      parallel map [0, 1, 2] as x limit 3 {
        if x == 0 {
          let waited = user__wait(s: 1)  // the live view is up when the question comes
          return ask "Go on (${waited})?" expect bool default false
        }
        user__wait(s: 3)
      }
    }
    """
)

TOOLS = '''
import time

def wait(s: int) -> bool:
    """Sleeps s seconds (the live view shows the step meanwhile)."""
    time.sleep(s)
    return True
'''


def test_a_durable_question_stays_on_the_screen_and_dbos_logs_to_its_file(tmp_path):
    (tmp_path / "q_tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["q_tools.py"]\nentry_points = false\n')
    (tmp_path / "q.flow").write_text(FLOW)
    argv = [FLOWC, "run", "q.flow", "--durable", "--run-id", "t1"]
    env = {"AGENTFLOW_DBOS_LOG": "INFO"}  # DBOS says a lot at launch: none of it on the terminal
    with (
        (tmp_path / "out.json").open("w") as out,
        Terminal(argv, cwd=tmp_path, env=env, stdout=out) as term,
    ):
        found = term.expect(r"answer with: flowc answer t1 (\S+) VALUE", timeout=60)
        step = found.group(1)
        time.sleep(1.0)  # the live view (three rows: the map's items) redraws itself meanwhile
        screen = term.screen()
        shown_lines = "\n".join(screen)
        assert "? [confirm › item 0 › ask] Go on (true)?" in screen, shown_lines
        assert f"  answer with: flowc answer t1 {step} VALUE" in screen, shown_lines
        runs = subprocess.run([FLOWC, "runs"], cwd=tmp_path, capture_output=True, text=True)
        assert runs.returncode == 0 and "t1  waiting" in runs.stdout, runs
        answered = subprocess.run(
            [FLOWC, "answer", "t1", step, "yes"], cwd=tmp_path, capture_output=True, text=True
        )
        assert answered.returncode == 0, answered.stderr
        assert term.wait(timeout=60) == 0, term.text[-2000:]
        shown = term.text
    assert json.loads((tmp_path / "out.json").read_text()) == [True, True, True]
    assert "answered true" in shown
    assert "DBOS" not in shown and "[INFO]" not in shown and "Traceback" not in shown, shown
    log = (tmp_path / ".flowc" / "dbos.log").read_text()
    assert "Initializing DBOS" in log
