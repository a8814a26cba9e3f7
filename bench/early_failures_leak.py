"""Battery: a failure injected at each step of ``agentflow.run`` before the run starts (and in
the run itself) leaves no MCP server process behind (issue 28, item 13).

For each injection point: connect a real MCP server (``tests/support/mcp_server.py``) through
the run's catalog, make that step raise, call ``agentflow.run`` and count this process's live
child processes once it has raised. Prints one line per point and the total leaked; 0 is the
only right figure. The suite runs a few of these points
(``tests/runtime/test_run_closes_what_it_opened.py``).

    .venv/bin/python bench/early_failures_leak.py [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
import tempfile
from pathlib import Path
from unittest import mock

import agentflow
from agentflow.ir import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.tools.build import build_catalog

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.early_failures import PLAN, Injected, boom, mcp_config  # noqa: E402
from support.processes import children_of, settled  # noqa: E402

#: (module, attribute, options of agentflow.run): every step of api.run before the run, then it
POINTS = [
    ("agentflow.api_run", "check_plan_tools", {}),
    ("agentflow.api_run", "check_plan_arguments", {}),
    ("agentflow.api_run", "ModelRouter", {}),
    ("agentflow.api_run", "recording_router", {"record": "c.jsonl"}),
    ("agentflow.api_run", "OtelSink", {"telemetry": "http://127.0.0.1:9"}),
    ("agentflow.api_run", "ShapeCache", {}),
    ("agentflow.api_run", "JsonlSink", {"trace": "t.jsonl"}),
    ("agentflow.api_run", "RunContext", {}),
    ("agentflow.api_run", "run_plan", {}),
]


async def one(config: object, module: str, name: str, options: dict) -> int:
    before = children_of()
    catalog = build_catalog(config, entry_points=False)
    await catalog.prepare(["tracker__*"])
    with mock.patch.object(importlib.import_module(module), name, boom):
        try:
            await agentflow.run(load_plan_text(PLAN), config=config, catalog=catalog, **options)
        except Injected:
            pass
    return len(set(await settled(before)) - set(before))


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        toml = Path(tmp) / "flow.toml"
        toml.write_text(
            '[models]\ndefault = "p:m"\n[providers.p]\nkind = "openai"\n'
            'base_url = "http://127.0.0.1:9/v1"\napi_key_env = "K"\n' + mcp_config()
        )
        config = load_config(toml, env={"K": "k"})
        total = 0
        for _ in range(args.rounds):
            for module, name, options in POINTS:
                leaked = await one(config, module, name, options)
                total += leaked
                print(f"{module + '.' + name:<52} leaked {leaked}")
        print(f"total leaked: {total} (of {args.rounds * len(POINTS)} injected failures)")


if __name__ == "__main__":
    asyncio.run(main())
