#!/usr/bin/env python3
"""Re-record examples/patterns/*.cassette.jsonl, one cassette per pattern program.

The "model" behind the recordings is NOT a real LLM: it is the scripted loopback
chat-completions server of src/agentflow/testing/chat_server.py driven by
tests/support/pattern_script.py, which answers each agent of the patterns by fixed rules from
what its request holds (the topic, the outline, the diff, the members' results …) and any agent
it has no rule for with a value generated from its contract.  Each program runs with the input
of its first `test` block (tests/support/patterns.py) and the agent profiles of
examples/patterns/flow.toml.  To record against a real model instead, run
`flowc run examples/patterns/NAME.flow --record FILE …` with a model configured.

Usage: .venv/bin/python scripts/record_pattern_cassettes.py [NAME.flow …]   (default: all)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.chat_server import TEST_API_KEY, ChatServer  # noqa: E402
from support.pattern_script import PatternScript  # noqa: E402
from support.patterns import CONFIG, PATTERNS_DIR, cassette, pattern_input, patterns  # noqa: E402

from agentflow import api  # noqa: E402
from agentflow.runtime.config import load_config  # noqa: E402


def record(flow: Path, server: ChatServer, build: Path) -> bool:
    """Run ``flow`` against ``server``, recording its model exchanges; True when it ran ok."""
    config_path = build / "flow.toml"
    profiles = CONFIG.read_text(encoding="utf-8").partition("[agents.")[2]
    config_path.write_text(server.config_text() + "\n[agents." + profiles, encoding="utf-8")
    config = load_config(config_path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
    out = cassette(flow)
    result = api.run_sync(
        flow,
        pattern_input(flow),
        config=config,
        workspace=PATTERNS_DIR,
        record=out,
        shape_cache=False,
    )
    # concurrent calls (`parallel map`) record in the order they end: keep the file stable by
    # sorting on the request key (stable, so identical requests keep their recorded order)
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text("".join(sorted(lines, key=lambda line: json.loads(line)["key"])), "utf-8")
    if TEST_API_KEY in out.read_text(encoding="utf-8"):
        print(f"{out.name}: the API key leaked into the cassette", file=sys.stderr)
        out.unlink()
        return False
    inferences = result.usage.get("inferences")
    print(f"{out.relative_to(ROOT)}: {result.status}, {inferences} exchange(s)")
    if result.status != "ok":
        print(f"  {result.error}", file=sys.stderr)
    return result.status == "ok"


def main(names: list[str]) -> int:
    chosen = [PATTERNS_DIR / n for n in names] if names else patterns()
    build = ROOT / "build" / "record-patterns"
    build.mkdir(parents=True, exist_ok=True)
    ok = True
    with ChatServer(PatternScript()) as server:
        for flow in chosen:
            ok = record(flow, server, build) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
