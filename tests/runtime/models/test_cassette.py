"""Record/replay cassettes (docs/spec/RUNTIME.md §5) and the shipped demo cassette."""

from __future__ import annotations

import json

from support.chat_server import TEST_API_KEY
from support.paths import EXAMPLES
from support.triage_script import TriageScript

import agentflow
from agentflow.runtime.config import load_config

REPORT = json.loads((EXAMPLES / "bug-report.json").read_text())


def config_for(server, tmp_path):
    text = (EXAMPLES / "flow.toml").read_text()
    rest = text.partition("[agents.")[2]
    path = tmp_path / "flow.toml"
    path.write_text(server.config_text() + "\n[agents." + rest)
    return load_config(path, env={"SCRIPTED_API_KEY": TEST_API_KEY})


def test_record_then_replay_without_any_model(chat_server, tmp_path):
    chat_server.script(TriageScript(member_delay=0.05))
    cassette = tmp_path / "run.cassette.jsonl"
    recorded = agentflow.run_sync(
        EXAMPLES / "bug-triage.flow",
        REPORT,
        config=config_for(chat_server, tmp_path),
        workspace=EXAMPLES / "workspace",
        record=cassette,
    )
    assert recorded.status == "ok", recorded.error
    text = cassette.read_text()
    assert TEST_API_KEY not in text and "Authorization" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == len(chat_server.requests) == recorded.usage["inferences"]
    assert all({"key", "request", "response"} <= set(line) for line in lines)
    chat_server.stop()  # replay needs no server, no key, no model configuration
    replayed = agentflow.run_sync(
        EXAMPLES / "bug-triage.flow",
        REPORT,
        config=EXAMPLES / "flow.toml",
        workspace=EXAMPLES / "workspace",
        replay=cassette,
    )
    assert replayed.status == "ok", replayed.error
    assert replayed.output == recorded.output
    assert replayed.results["E0"] == recorded.results["E0"]


def test_replay_miss_names_the_step_and_the_nearest_request(tmp_path):
    other = dict(REPORT, title="a different bug")
    result = agentflow.run_sync(
        EXAMPLES / "bug-triage.flow",
        other,
        config=EXAMPLES / "flow.toml",
        workspace=EXAMPLES / "workspace",
        replay=EXAMPLES / "bug-triage.cassette.jsonl",
    )
    assert result.status == "error"
    assert result.error["code"] == "replay_miss"
    assert result.error["step_path"] == "E0"
    assert "nearest recorded request" in result.error["message"]
    assert "a different bug" in result.error["message"]


def test_shipped_cassette_replays_the_demo():
    result = agentflow.run_sync(
        EXAMPLES / "bug-triage.flow",
        REPORT,
        config=EXAMPLES / "flow.toml",
        workspace=EXAMPLES / "workspace",
        replay=EXAMPLES / "bug-triage.cassette.jsonl",
    )
    assert result.status == "ok", result.error
    assert result.results["E0"]["suspect_files"] == ["jobs/runner.py"]
    assert {o["owner"] for o in result.output} == {"backend", "frontend"}
    assert result.usage["inferences"] == 7
