"""The shipped example ``examples/issue-review.flow`` (and its twin ``issue-review.plan.yaml``)
runs offline: the ``linear`` MCP server is the real stdio stub ``examples/mcp/linear_stub.py``
(configured by ``examples/issue-review.toml``) and the model answers come from
``examples/issue-review.cassette.jsonl``.

The cassette was recorded by ``scripts/record_issue_review_cassette.py`` against the scripted
loopback model ``tests/support/review_script.py``; ``test_shipped_cassette_is_not_stale``
re-records it and fails when the shipped one no longer matches (stub, fixture, program, prompt
rendering or script changed): re-run that script then.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from support.chat_server import TEST_API_KEY, ChatServer
from support.paths import EXAMPLES
from support.paths import REPO as ROOT
from support.review_script import ReviewScript

import agentflow
from agentflow.errors import RunError
from agentflow.runtime.config import load_config
from agentflow.runtime.tools.build import build_catalog
from agentflow.runtime.tools.catalog import ToolContext

CONFIG = EXAMPLES / "issue-review.toml"
CASSETTE = EXAMPLES / "issue-review.cassette.jsonl"
FIXTURE = json.loads((EXAMPLES / "mcp" / "linear_issues.json").read_text(encoding="utf-8"))

EXPECTED = {
    "blocked": [
        {
            "id": "ENG-412",
            "reason": "blocked by ENG-398 (Approve a production maintenance window for "
            "December), which is still Todo",
        },
        {
            "id": "ENG-415",
            "reason": "labelled blocked: Waiting on the payment provider to enable v2 events "
            "for our account (support case #88213, no reply yet).",
        },
    ]
}


def _recorder():
    spec = importlib.util.spec_from_file_location(
        "record_issue_review_cassette", ROOT / "scripts" / "record_issue_review_cassette.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_decision_rule_on_the_fixture_gives_the_expected_review():
    """The expected output follows from the fixture (ENG-420's blocker ENG-401 is Done)."""
    known = {i["id"]: i for i in FIXTURE["issues"]}
    open_ = [i for i in FIXTURE["issues"] if i["state"] not in ("Done", "Canceled")]
    assert ReviewScript.blocked(open_, known) == EXPECTED["blocked"]


@pytest.mark.parametrize(
    "target, input_",
    [("issue-review.flow", ["--input", '{"limit": 50}']), ("issue-review.plan.yaml", [])],
)
def test_flowc_run_replays_the_example_through_the_stub(tmp_path, target, input_):
    """`flowc run` with the shipped config (stub over stdio) and cassette, from another cwd."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    trace = tmp_path / "trace.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "agentflow", "run", str(EXAMPLES / target), *input_]
        + ["--config", str(CONFIG), "--replay", str(CASSETTE), "--json", "--trace", str(trace)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "ok"
    assert result["output"] == EXPECTED
    assert [i["id"] for i in result["results"]["E0"]["issues"]] == [
        "ENG-412",
        "ENG-415",
        "ENG-417",
        "ENG-420",
        "ENG-423",
        "ENG-398",
    ]
    assert result["usage"]["inferences"] == 3
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    finished = [e["data"] for e in events if e["kind"] == "tool_finished"]
    looked_up = [d["result"]["id"] for d in finished if d["tool_name"] == "linear__get_issue"]
    # every listed issue, then the one blocker that was not listed (and turns out Done)
    assert looked_up[-1] == "ENG-401" and sorted(looked_up[:-1]) == sorted(
        i["id"] for i in result["results"]["E0"]["issues"]
    )
    assert {p.name for p in tmp_path.iterdir()} == {"trace.jsonl"}  # nothing else written


def test_shipped_cassette_is_not_stale(tmp_path):
    """Re-recording gives the shipped cassette byte for byte (else: re-run the recorder)."""
    recorder = _recorder()
    parts = []
    with ChatServer(ReviewScript()) as server:
        config = load_config(
            recorder.recording_config(server, tmp_path),
            env={"SCRIPTED_API_KEY": TEST_API_KEY},
        )
        for n, (target, input_) in enumerate(recorder.RUNS):
            part = tmp_path / f"part{n}.jsonl"
            result = agentflow.run_sync(
                ROOT / target,
                json.loads(input_) if input_ else None,
                config=config,
                record=part,
            )
            assert result.status == "ok", result.error
            assert result.output == EXPECTED
            parts.append(part.read_text(encoding="utf-8"))
    assert "".join(parts) == CASSETTE.read_text(encoding="utf-8"), (
        "examples/issue-review.cassette.jsonl is stale: "
        "run .venv/bin/python scripts/record_issue_review_cassette.py"
    )


async def test_stub_tools_read_the_fixture_and_write_nothing(tmp_path):
    """The stub's other tools: state filter, unknown ids, and add_comment only logging."""
    before = (EXAMPLES / "mcp" / "linear_issues.json").read_bytes()
    catalog = build_catalog(load_config(CONFIG, env={}), entry_points=False)
    try:
        await catalog.prepare(["linear__*"])
        assert catalog.match("linear__*") == [
            "linear__add_comment",
            "linear__get_issue",
            "linear__list_issues",
        ]
        ctx = ToolContext(workspace=tmp_path)

        async def call(name, args):
            return await catalog.get(name).func(args, ctx)

        done = await call("linear__list_issues", {"state": "done"})
        assert [i["id"] for i in done["issues"]] == ["ENG-401"]
        assert len((await call("linear__list_issues", {"limit": 2}))["issues"]) == 2
        issue = await call("linear__get_issue", {"id": "eng-412"})
        assert issue["blocked_by"] == ["ENG-398"] and issue["assignee"] == "Priya Raman"
        with pytest.raises(RunError) as info:
            await call("linear__get_issue", {"id": "ENG-999"})
        assert info.value.code == "tool_error" and "ENG-999" in info.value.message
        posted = await call("linear__add_comment", {"issue_id": "ENG-415", "body": "ping"})
        assert posted == {
            "issue_id": "ENG-415",
            "posted": False,
            "note": "offline stub: comment logged only",
        }
    finally:
        await catalog.aclose()
    assert (EXAMPLES / "mcp" / "linear_issues.json").read_bytes() == before
    assert list(tmp_path.iterdir()) == []
