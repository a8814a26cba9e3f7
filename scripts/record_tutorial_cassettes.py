#!/usr/bin/env python3
"""Re-record the tutorial's cassettes (docs/tutorial/cassettes/*.jsonl).

Every `flowc run … --replay cassettes/NAME.jsonl` command of the tutorial's pages
(docs/tutorial/*.md) is run once more with `--record` instead, from docs/tutorial, and the
recordings of the commands that replay one cassette are concatenated into it.

The "model" behind the recording is NOT a real LLM: it is the scripted loopback
chat-completions server of tests/support/chat_server.py driven by
tests/support/tutorial_script.py, whose reviewer really calls `read_file` on the tutorial's
`project/` directory and answers from what it returned.  To record against a real model
instead, run the same command with `--record FILE` and a model configured.

Usage: .venv/bin/python scripts/record_tutorial_cassettes.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial"
sys.path.insert(0, str(ROOT / "tests"))

from support.chat_server import TEST_API_KEY, ChatServer  # noqa: E402
from support.markdown import commands, fences  # noqa: E402
from support.tutorial_script import TutorialScript  # noqa: E402

#: options of the tutorial's commands that a recording leaves out (they change no request)
_DROPPED = {"--replay": 1, "--config": 1, "--trace": 1, "--json": 0}


def replayed_runs() -> dict[str, list[list[str]]]:
    """Cassette (relative to docs/tutorial) → the arguments after `flowc run` of each command
    that replays it and succeeds, in the order of the pages, without
    --replay/--config/--trace/--json."""
    out: dict[str, list[list[str]]] = {}
    for page in sorted(TUTORIAL.glob("*.md")):
        for fence in fences(page):
            if fence.lang != "console":
                continue
            for command in commands(fence):
                argv = list(command.argv)
                if argv[:2] != ["flowc", "run"] or "--replay" not in argv or command.exit:
                    continue  # a failing command shows what a replay does not answer
                cassette = argv[argv.index("--replay") + 1]
                args, i = [], 2
                while i < len(argv):
                    skip = _DROPPED.get(argv[i])
                    if skip is None:
                        args.append(argv[i])
                        i += 1
                    else:
                        i += 1 + skip
                out.setdefault(cassette, []).append(args)
    return out


def recording_config(server: ChatServer, directory: Path) -> Path:
    """A flow.toml in ``directory``: every model role answers from ``server``; the agent
    profiles and policy are the tutorial's own (docs/tutorial/flow.toml)."""
    text = (TUTORIAL / "flow.toml").read_text(encoding="utf-8")
    rest = "[agents." + text.partition("[agents.")[2]
    path = directory / "flow.toml"
    path.write_text(server.config_text() + "\n" + rest, encoding="utf-8")
    return path


def record(work: Path) -> int:
    """Record every cassette of :func:`replayed_runs`; returns the first non-zero exit status."""
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["SCRIPTED_API_KEY"] = TEST_API_KEY
    with ChatServer(TutorialScript()) as server:
        config = recording_config(server, work)
        for cassette, runs in replayed_runs().items():
            parts = []
            for n, args in enumerate(runs):
                part = work / f"{Path(cassette).stem}.{n}.jsonl"
                proc = subprocess.run(
                    [sys.executable, "-m", "agentflow", "run", *args]
                    + ["--config", str(config), "--record", str(part)],
                    cwd=TUTORIAL,
                    env=env,
                )
                if proc.returncode:
                    return proc.returncode
                parts.append(part.read_text(encoding="utf-8"))
            text = "".join(parts)
            if TEST_API_KEY in text:
                print("the API key leaked into the cassette", file=sys.stderr)
                return 1
            (TUTORIAL / cassette).write_text(text, encoding="utf-8")
            print(f"wrote docs/tutorial/{cassette} ({len(runs)} run(s))")
    return 0


def main() -> int:
    return record(ROOT / "build" / "record-tutorial")


if __name__ == "__main__":
    sys.exit(main())
