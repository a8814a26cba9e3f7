#!/usr/bin/env python3
"""Re-record examples/bug-triage.cassette.jsonl.

The "model" behind the recording is NOT a real LLM: it is the scripted loopback chat-completions
server of src/agentflow/testing/chat_server.py driven by tests/support/triage_script.py, whose investigator
really calls list_dir, grep and read_file on examples/workspace and answers from what they
returned.  To record against a real model instead, run
`flowc run examples/bug-triage.flow --record FILE …` with a model configured.

Usage: .venv/bin/python scripts/record_demo_cassette.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.chat_server import TEST_API_KEY, ChatServer  # noqa: E402
from support.triage_script import TriageScript  # noqa: E402


def main() -> int:
    cassette = ROOT / "examples" / "bug-triage.cassette.jsonl"
    with ChatServer(TriageScript(member_delay=0.2)) as server:
        config = ROOT / "build" / "record" / "flow.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        text = (ROOT / "examples" / "flow.toml").read_text(encoding="utf-8")
        head, _, rest = text.partition("[agents.")
        config.write_text(server.config_text() + "\n[agents." + rest, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
        env["SCRIPTED_API_KEY"] = TEST_API_KEY
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentflow",
                "run",
                "examples/bug-triage.flow",
                "--input",
                "@examples/bug-report.json",
                "--workspace",
                "examples/workspace",
                "--config",
                str(config),
                "--record",
                str(cassette),
            ],
            cwd=ROOT,
            env=env,
        )
    if TEST_API_KEY in cassette.read_text(encoding="utf-8"):
        print("the API key leaked into the cassette", file=sys.stderr)
        return 1
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
