"""Tools say whether a durable run may repeat them: user tools by ``@tool(idempotent=False)``,
MCP tools by their ``readOnlyHint``/``idempotentHint`` annotations, builtins all but
``edit_file``.  A non-idempotent call in flight when its process died is reported
(``outcome_unknown``) on resume, not run again (a real ``flowc run --durable`` killed with
SIGKILL while the call runs)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from mcp.types import Tool as McpTool
from mcp.types import ToolAnnotations

from agentflow.core.vocabulary import ERROR_CODES
from agentflow.runtime.durable.engine import tool_idempotent
from agentflow.runtime.tools.builtin import builtin_tools
from agentflow.runtime.tools.mcp_tools import _catalog_tool
from agentflow.runtime.tools.user import function_tool, tool


def test_user_tools_are_idempotent_unless_declared_otherwise():
    def lookup(q: str) -> str:
        """Look q up."""
        return q

    @tool(idempotent=False)
    def send(to: str) -> str:
        """Send a message."""
        return to

    assert tool_idempotent(function_tool(lookup))
    assert not tool_idempotent(function_tool(send))


def test_builtins_are_idempotent_except_edit_file():
    flags = {t.name: tool_idempotent(t) for t in builtin_tools()}
    assert flags.pop("builtin__edit_file") is False
    assert all(flags.values()), flags


def test_mcp_tools_follow_their_annotations_and_default_to_not_idempotent():
    conn = SimpleNamespace(name="tracker")

    def catalog(**annotations) -> bool:
        raw = McpTool(
            name="t",
            inputSchema={"type": "object"},
            annotations=ToolAnnotations(**annotations) if annotations else None,
        )
        return tool_idempotent(_catalog_tool(conn, raw))

    assert catalog() is False
    assert catalog(destructiveHint=True) is False
    assert catalog(readOnlyHint=True) is True
    assert catalog(idempotentHint=True) is True


PLAN = """\
version: 1
name: sender
steps:
  - {id: E0, tool_name: user__send, input: {to: ops}}
"""

TOOLS = """\
import os, time

from agentflow import tool


@tool(idempotent=False)
def send(to: str) -> str:
    \"\"\"Send a message to `to` (appends to the outbox; slow).\"\"\"
    with open(os.environ["OUTBOX"], "a") as f:
        f.write(to + "\\n")
    time.sleep(30)
    return "sent"
"""


def _sent(outbox: Path) -> bool:
    return outbox.exists() and outbox.read_text().endswith("\n")


def test_a_non_idempotent_call_cut_by_a_crash_is_reported_not_repeated(tmp_path: Path):
    assert "outcome_unknown" in ERROR_CODES
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "plan.yaml").write_text(PLAN)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    outbox = tmp_path / "outbox"
    env = {**os.environ, "OUTBOX": str(outbox), "NO_COLOR": "1"}
    flowc = [sys.executable, "-m", "agentflow"]
    run = subprocess.Popen(
        [*flowc, "run", "--durable", "--run-id", "send-1", "plan.yaml"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    # the file appears when the tool opens it, the line when it closes it: wait for the line
    while not _sent(outbox) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _sent(outbox), run.communicate()[1].decode()[-2000:]
    run.send_signal(signal.SIGKILL)
    run.wait()

    resumed = subprocess.run(
        [*flowc, "resume", "send-1", "--json"], cwd=tmp_path, env=env, capture_output=True
    )
    assert resumed.returncode == 1, resumed.stderr.decode()[-2000:]
    error = json.loads(resumed.stdout)["error"]
    assert error["code"] == "outcome_unknown"
    assert "`user__send` was running when the run stopped" in error["message"]
    assert outbox.read_text() == "ops\n"  # sent once: not again on resume
