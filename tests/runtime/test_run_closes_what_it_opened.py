"""`api.run` closes the MCP connections it holds on every way out (issue 28, item 13): a failure
injected at each step before the run starts leaves no MCP server process behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.chat_server import TEST_API_KEY
from support.early_failures import PLAN, Injected, boom, mcp_config
from support.processes import children_of, settled

import agentflow
from agentflow.errors import ConfigError
from agentflow.ir import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.tools.build import build_catalog


def config_text(chat_server, with_model: bool) -> str:
    return (chat_server.config_text() if with_model else "") + mcp_config()


async def test_no_model_configured_closes_the_connections_the_argument_check_opened(
    chat_server, tmp_path, monkeypatch
):
    from agentflow import api_run  # `run` calls the check through its own import of it

    (tmp_path / "flow.toml").write_text(config_text(chat_server, with_model=False))
    before = children_of()
    during: list[int] = []
    check = api_run.check_plan_arguments

    async def counted(*args, **kwargs):  # the check connects the MCP server: count it running
        out = await check(*args, **kwargs)
        during.append(len(children_of()))
        return out

    monkeypatch.setattr(api_run, "check_plan_arguments", counted)
    with pytest.raises(ConfigError):
        await agentflow.run(load_plan_text(PLAN), config=str(tmp_path / "flow.toml"))
    assert during and during[0] > len(before)  # a server was running …
    assert await settled(before) == before  # … and is gone


@pytest.mark.parametrize(
    ("module", "name", "options"),
    [  # a sink, the last step before the run (all 9 points: bench/early_failures_leak.py), each
        # patched where `api.run` uses it
        ("agentflow.api_run", "OtelSink", {"telemetry": "http://127.0.0.1:9"}),
        ("agentflow.api_run", "RunContext", {}),
    ],
)
async def test_a_failure_before_the_run_leaves_no_mcp_server_running(
    chat_server, tmp_path, monkeypatch, module, name, options
):
    import importlib

    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    monkeypatch.chdir(tmp_path)
    config = load_config(
        _write(tmp_path / "flow.toml", config_text(chat_server, with_model=True)),
        env={"SCRIPTED_API_KEY": TEST_API_KEY},
    )
    before = children_of()
    catalog = build_catalog(config, entry_points=False)
    await catalog.prepare(["tracker__*"])  # connected: a server process runs
    assert len(children_of()) > len(before)
    monkeypatch.setattr(importlib.import_module(module), name, boom)
    with pytest.raises(Injected):
        await agentflow.run(load_plan_text(PLAN), config=config, catalog=catalog, **options)
    assert await settled(before) == before


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
