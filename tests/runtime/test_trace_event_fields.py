"""The trace events carry what telemetry and reports need (docs/spec/RUNTIME.md §8): the plan file
on ``run_started``, the `.flow` stage on ``step_started``, and on ``model_call`` the provider, its
wire API, the finish reason and the model's reply (text and tool calls)."""

from __future__ import annotations

import json
from pathlib import Path

from agentflow import CallbackSink, api

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_bug_triage_events_carry_file_stage_provider_finish_reason_and_reply():
    events = []
    result = api.run_sync(
        EXAMPLES / "bug-triage.flow",
        json.loads((EXAMPLES / "bug-report.json").read_text()),
        config=EXAMPLES / "flow.toml",
        workspace=EXAMPLES / "workspace",
        replay=EXAMPLES / "bug-triage.cassette.jsonl",
        sinks=[CallbackSink(events.append)],
        shape_cache=False,
    )
    assert result.ok
    started = next(e for e in events if e.kind == "run_started")
    assert started.data["file"] == str(EXAMPLES / "bug-triage.flow")
    stages = {e.path: e.data.get("stage") for e in events if e.kind == "step_started"}
    assert stages == {
        "E0": "reproduce", "E1": "reproduce", "E2": "plan",
        "E3": "implement", "E3/do.0": "implement", "E3/do.1": "implement",
    }  # fmt: skip
    calls = [e.data for e in events if e.kind == "model_call" and e.path == "E0"]
    assert [c["round"] for c in calls] == [1, 2, 3, 4]
    assert [c["finish_reason"] for c in calls] == ["tool_calls"] * 3 + ["stop"]
    assert {(c["provider"], c["api"]) for c in calls} == {("replay", "openai")}
    assert [[t["name"] for t in c["reply"]["tool_calls"]] for c in calls] == [
        ["builtin__list_dir"], ["builtin__grep"], ["builtin__read_file"], [],
    ]  # fmt: skip
    assert json.loads(calls[-1]["reply"]["text"])["suspect_files"] == ["jobs/runner.py"]
    # still one line of JSON each
    from agentflow.runtime.events import event_json

    assert all("\n" not in event_json(e) for e in events)
