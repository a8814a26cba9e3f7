"""Replay table: every vendored real provider reply (tests/runtime/recorded/<provider>/, from
pydantic-ai's cassettes, MIT; scripts/vendor_recorded_replies.py) served through the loopback
server into flowc's client of that provider, counted per provider and class (text, tool calls,
structured output, stream, reasoning, cache usage, errors) — passed / replayed. An exchange
counts in each class it belongs to. The suite runs the same exchanges one by one
(tests/runtime/models/test_recorded_*.py); this prints the figures.

    .venv/bin/python bench/recorded_replies.py
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.recorded import CLASSES, PROVIDERS, classes, exchanges, replay  # noqa: E402

from agentflow.testing.chat_server import ChatServer  # noqa: E402


async def main() -> int:
    passed: Counter = Counter()
    total: Counter = Counter()
    failures: list[str] = []
    with ChatServer() as server:
        for provider in PROVIDERS:
            for name, index, exchange in exchanges(provider):
                problems = await replay(server, provider, exchange)
                for kind in classes(provider, exchange):
                    total[provider, kind] += 1
                    passed[provider, kind] += not problems
                total[provider, "all"] += 1
                passed[provider, "all"] += not problems
                if problems:
                    failures.append(f"{provider} {name}#{index}: {problems[0]}")
    columns = [*CLASSES, "all"]
    print(f"{'provider':<18}" + "".join(f"{c:>13}" for c in columns))
    for provider in PROVIDERS:
        cells = [
            f"{passed[provider, c]}/{total[provider, c]}" if total[provider, c] else "-"
            for c in columns
        ]
        print(f"{provider:<18}" + "".join(f"{cell:>13}" for cell in cells))
    for line in failures:
        print("  FAILED", line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
