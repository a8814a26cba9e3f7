"""`.flow` files in the plans directory (docs/spec/RUNTIME.md §4): the runtime never calls the
compiler, so ``agentflow.build_catalog`` (the api) compiles them and hands the runtime a loader; the
runtime's own catalog builder loads YAML/JSON plans and refuses a `.flow` one with a ConfigError
that says how to load it.  ``flowc tools``, ``flowc plan validate`` and ``flowc ask`` go through the
api."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from support.chat_server import TEST_API_KEY, text, tool_calls

import agentflow
from agentflow.cli import main
from agentflow.errors import ConfigError
from agentflow.runtime.config import load_config
from agentflow.runtime.tools.build import build_catalog as runtime_build_catalog

SHOUT_FLOW = """\
flow shout "Shout a word"
input { word: text }

stage loud -> text {
  return "${input.word}!"
}
"""

NOTES_PLAN = """\
version: 1
name: notes
description: Read the notes
steps:
  - {id: E0, tool_name: builtin__read_file, input: {path: notes.txt}}
"""


def _project(tmp_path, toml: str = ""):
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "shout.flow").write_text(SHOUT_FLOW)
    (plans / "notes.yaml").write_text(NOTES_PLAN)
    config = tmp_path / "flow.toml"
    config.write_text(toml + "[tools]\nentry_points = false\n")
    return config


def test_the_api_catalog_compiles_flow_files_of_the_plans_directory(tmp_path):
    catalog = agentflow.build_catalog(load_config(_project(tmp_path), env={}))
    shout = catalog.get("plan__shout")
    assert shout is not None and shout.source == "plan"
    assert shout.description == "Shout a word"
    assert shout.input_schema["required"] == ["word"]
    assert catalog.get("plan__notes") is not None
    assert catalog.plans["shout"].source_file.endswith("shout.flow")


def test_the_runtime_catalog_refuses_a_flow_plan_without_a_loader(tmp_path):
    config = load_config(_project(tmp_path), env={})
    with pytest.raises(ConfigError) as info:
        runtime_build_catalog(config)
    message = str(info.value)
    assert "shout.flow" in message and "agentflow.build_catalog" in message
    # YAML and JSON plans need no compiler: with the flow file gone the runtime loads them alone
    (tmp_path / "plans" / "shout.flow").unlink()
    assert runtime_build_catalog(config).get("plan__notes") is not None


def test_flowc_tools_and_plan_validate_list_a_flow_plan(tmp_path):
    config = _project(tmp_path)
    res = CliRunner().invoke(main, ["tools", "--config", str(config), "--no-connect"])
    assert res.exit_code == 0, res.output
    assert any(ln.startswith("plan__shout ") for ln in res.output.splitlines())
    main_plan = tmp_path / "main.yaml"
    main_plan.write_text(
        "version: 1\nname: main\nsteps:\n  - {id: E0, tool_name: plan__shout, input: {word: hi}}\n"
    )
    res = CliRunner().invoke(main, ["plan", "validate", str(main_plan), "--config", str(config)])
    assert res.exit_code == 0, res.output
    assert res.output.strip().endswith(": ok")


def test_flowc_ask_calls_a_flow_plan_of_the_plans_directory(chat_server, tmp_path, monkeypatch):
    config = _project(tmp_path, chat_server.config_text())
    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    chat_server.script([tool_calls(("plan__shout", {"word": "hi"})), text("It says hi!")])
    res = CliRunner().invoke(
        main, ["ask", "Shout hi", "--config", str(config), "--workspace", str(tmp_path)]
    )
    assert res.exit_code == 0, res.stderr
    assert res.stdout == "It says hi!\n"
    tool_msg = [m for m in chat_server.requests[1]["messages"] if m["role"] == "tool"][0]
    assert "hi!" in tool_msg["content"]
