"""`flowc resume` of a run whose workspace is no directory any more (deleted, moved, not
mounted) is refused before the run is taken up, as `flowc run --workspace` refuses one, and the
run stays `stopped`: once the directory is back a resume finishes it (break14: the run was
taken up and its first file tool ended it `error` for good, "cannot open the workspace")."""

from __future__ import annotations

import shutil
import signal

from support.durable_questions import cli_in_process as _cli
from support.durable_questions import run_status as _status
from support.durable_questions import start_flowc, wait_asked

from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
flow ws "t"
stage s -> json {
  let ok = ask "go?" expect bool default true
  return write_file(path: "o.txt", content: "x")
}
"""


def test_resume_without_its_workspace_is_refused_and_the_run_stays_stopped(tmp_path, monkeypatch):
    (tmp_path / "ws.flow").write_text(FLOW)
    workspace = tmp_path / "work"
    workspace.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    proc = start_flowc(
        tmp_path, "run", "--durable", "--run-id", "w1", "--workspace", "work", "ws.flow"
    )
    try:
        wait_asked(tmp_path / ".flowc" / "durable.sqlite", "w1", proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    try:
        assert _cli("answer", "w1", "ok", "true").exit_code == 0
        shutil.rmtree(workspace)
        refused = _cli("resume", "w1")
        assert refused.exit_code == 1, refused.output
        assert "its workspace" in refused.stderr and "is not a directory" in refused.stderr
        assert _status("w1") == "stopped"
        workspace.mkdir()
        again = _cli("resume", "w1")
        assert again.exit_code == 0, again.output
        assert (workspace / "o.txt").read_text() == "x"
    finally:
        shutdown()
