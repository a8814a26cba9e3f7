#!/usr/bin/env python3
"""Re-record examples/issue-review.cassette.jsonl (the model answers of issue-review.flow and of
its hand-written twin issue-review.plan.yaml).

The "model" behind the recording is NOT a real LLM: it is the scripted loopback chat-completions
server of src/agentflow/testing/chat_server.py driven by tests/support/review_script.py, whose
investigator really calls `linear__get_issue` on the offline Linear MCP server
examples/mcp/linear_stub.py (run over stdio) and answers from what it returned.  Both runs are
recorded, then concatenated into the one cassette (the requests differ, so the keys do not clash).

To record against a real model instead, run
`flowc run examples/issue-review.flow --input '{"limit": 50}' --config examples/issue-review.toml
--record FILE` with a model configured (and a real or stub `linear` server).

Usage: .venv/bin/python scripts/record_issue_review_cassette.py [OUT]
(default OUT: examples/issue-review.cassette.jsonl)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.chat_server import TEST_API_KEY, ChatServer  # noqa: E402
from support.review_script import ReviewScript  # noqa: E402

#: (target, --input) of each recorded run, in cassette order.
RUNS = (
    ("examples/issue-review.flow", '{"limit": 50}'),
    ("examples/issue-review.plan.yaml", None),
)


def recording_config(server: ChatServer, directory: Path) -> Path:
    """A flow.toml in ``directory``: every model role answers from ``server``; ``[mcp.linear]``
    runs the stub with this interpreter; the agents come from examples/issue-review.toml."""
    text = (ROOT / "examples" / "issue-review.toml").read_text(encoding="utf-8")
    agents = "[agents." + text.partition("[agents.")[2]
    mcp = (
        "[mcp.linear]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f'args = ["linear_stub.py"]\n'
        f"cwd = {json.dumps(str(ROOT / 'examples' / 'mcp'))}\n"
    )
    path = directory / "flow.toml"
    path.write_text(server.config_text() + "\n" + mcp + "\n" + agents, encoding="utf-8")
    return path


def record(out: Path, work: Path) -> int:
    """Record every run of :data:`RUNS` into ``out``; returns the first non-zero exit status."""
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["SCRIPTED_API_KEY"] = TEST_API_KEY
    parts = []
    with ChatServer(ReviewScript()) as server:
        config = recording_config(server, work)
        for n, (target, input_) in enumerate(RUNS):
            part = work / f"part{n}.cassette.jsonl"
            args = [sys.executable, "-m", "agentflow", "run", target, "--config", str(config)]
            args += ["--input", input_] if input_ is not None else []
            proc = subprocess.run([*args, "--record", str(part)], cwd=ROOT, env=env)
            if proc.returncode:
                return proc.returncode
            parts.append(part.read_text(encoding="utf-8"))
    text = "".join(parts)
    if TEST_API_KEY in text:
        print("the API key leaked into the cassette", file=sys.stderr)
        return 1
    out.write_text(text, encoding="utf-8")
    return 0


def main() -> int:
    out = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else ROOT / "examples" / "issue-review.cassette.jsonl"
    )
    return record(out.resolve(), ROOT / "build" / "record-issue-review")


if __name__ == "__main__":
    sys.exit(main())
