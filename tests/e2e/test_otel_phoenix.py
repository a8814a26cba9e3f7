"""Acceptance (issue 22): the spans of the bug-triage example arrive in a real OTLP backend with
the documented tree — run → stages → steps → agent rounds → model calls (with token usage) and
tool calls — checked through the backend's own API.

The backend is Arize Phoenix (open source), installed by scripts/setup-phoenix.sh into
.venv-phoenix/ and started here on free loopback ports with its data in a temporary directory.
If it cannot be started the test fails (it never skips): run scripts/setup-phoenix.sh.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from support.timing import Deadline, scaled

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PHOENIX = ROOT / ".venv-phoenix" / "bin" / "phoenix"
#: Phoenix's start-up bound on an idle machine, stretched by the measured contention
#: (support.timing.Deadline): at load 10 a start-up takes several times as long
START_TIMEOUT_S = 180


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    """A running Phoenix server: ``http://127.0.0.1:PORT`` (its UI, REST API and OTLP/HTTP
    receiver share the port); stopped after the module."""
    if not PHOENIX.exists():
        pytest.fail(f"{PHOENIX} is missing: run scripts/setup-phoenix.sh (scripts/test.sh does)")
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))},
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (work / "phoenix.log").open("w")
    proc = subprocess.Popen(
        [str(PHOENIX), "serve"], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = Deadline(START_TIMEOUT_S)
        while True:
            if proc.poll() is not None:
                pytest.fail(f"phoenix exited with {proc.returncode}:\n{_tail(work)}")
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if deadline.expired():
                pytest.fail(f"{deadline.explain('phoenix did not answer')}:\n{_tail(work)}")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def _tail(work: Path) -> str:
    return "\n".join((work / "phoenix.log").read_text(errors="replace").splitlines()[-20:])


def _spans(base: str, project: str, expected: int) -> list[dict]:
    """The project's spans from Phoenix's REST API, once ``expected`` of them arrived."""
    deadline = Deadline(30)
    spans: list[dict] = []
    while not deadline.expired():
        reply = httpx.get(f"{base}/v1/projects/{project}/spans", params={"limit": 500}, timeout=10)
        if reply.status_code == 200:
            spans = reply.json()["data"]
            if len(spans) >= expected:
                return spans
        time.sleep(0.5)
    raise AssertionError(f"{len(spans)} of {expected} spans arrived: {[s['name'] for s in spans]}")


def test_bug_triage_spans_arrive_in_phoenix_with_the_documented_tree(phoenix, tmp_path):
    project = f"agentflow-{uuid.uuid4().hex[:8]}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))},
        # Phoenix files spans under the project named by this resource attribute
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
    }
    proc = subprocess.run(
        [
            sys.executable, "-m", "agentflow", "run", str(EXAMPLES / "bug-triage.flow"),
            "--input", f"@{EXAMPLES / 'bug-report.json'}",
            "--workspace", str(EXAMPLES / "workspace"),
            "--replay", str(EXAMPLES / "bug-triage.cassette.jsonl"),
            "--config", str(EXAMPLES / "flow.toml"),
            "--otel", phoenix,
        ],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=scaled(120),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "telemetry export" not in proc.stderr, proc.stderr

    # run 1 + stages 3 + steps 6 + agent rounds 7 + model calls 7 + tool calls 3
    spans = _spans(phoenix, project, 27)
    assert len(spans) == 27, sorted(s["name"] for s in spans)
    by_id = {s["context"]["span_id"]: s for s in spans}
    assert len({s["context"]["trace_id"] for s in spans}) == 1

    def children(span: dict) -> list[dict]:
        kids = [s for s in spans if s["parent_id"] == span["context"]["span_id"]]
        return sorted(kids, key=lambda s: (s["start_time"], s["name"]))

    def names(span: dict) -> list[str]:
        return [s["name"] for s in children(span)]

    (run,) = [s for s in spans if s["parent_id"] is None]
    assert run["name"] == "run bug_triage" and run["status_code"] != "ERROR"
    assert run["attributes"]["agentflow.run.status"] == "ok"
    assert run["attributes"]["agentflow.usage.inferences"] == 7
    assert names(run) == ["stage reproduce", "stage plan", "stage implement"]
    reproduce, plan, implement = children(run)

    assert names(reproduce) == ["invoke_agent repo-investigator", "exit"]  # path: an attribute
    agent = children(reproduce)[0]
    assert agent["attributes"]["gen_ai.agent.name"] == "repo-investigator"
    assert agent["attributes"]["agentflow.step.path"] == "E0"
    assert agent["attributes"]["code.file.path"] == "bug-triage.flow"
    assert agent["attributes"]["code.line.number"] == 42
    assert names(agent) == ["agent turn 1", "agent turn 2", "agent turn 3", "agent turn 4"]
    tools = []
    for round_span in children(agent):
        kids = children(round_span)
        chats = [k for k in kids if k["name"] == "chat test-model"]
        assert len(chats) == 1, names(round_span)
        model = chats[0]["attributes"]
        assert model["gen_ai.operation.name"] == "chat"
        assert model["gen_ai.provider.name"] == "openai"
        assert model["gen_ai.request.model"] == "test-model"
        assert model["gen_ai.usage.input_tokens"] == 10
        assert model["gen_ai.usage.output_tokens"] == 5
        tools += [k["attributes"]["gen_ai.tool.name"] for k in kids if k is not chats[0]]
    assert tools == ["list_dir", "grep", "read_file"]
    for span in spans:
        if span["name"].startswith("execute_tool "):
            assert span["attributes"]["gen_ai.operation.name"] == "execute_tool"
            assert span["status_code"] != "ERROR"

    assert names(plan) == ["invoke_agent dev-team.lead"]
    (map_span,) = children(implement)
    assert map_span["name"] == "map" and map_span["attributes"]["agentflow.step.path"] == "E3"
    items = children(map_span)
    assert sorted(i["attributes"]["agentflow.map.index"] for i in items) == [0, 1]
    assert sorted(i["attributes"]["agentflow.step.path"] for i in items) == ["E3/do.0", "E3/do.1"]
    for item in items:
        (item_round,) = children(item)
        (chat,) = children(item_round)
        assert chat["attributes"]["gen_ai.usage.input_tokens"] == 10
    # nothing of the content is exported without capture_content
    dumped = json.dumps([s["attributes"] for s in spans])
    assert "gen_ai.input.messages" not in dumped and "Locate the suspect code" not in dumped
    assert all(by_id.get(s["parent_id"]) or s is run for s in spans)


def _graphql(base: str, query: str) -> dict:
    reply = httpx.post(f"{base}/graphql", json={"query": query}, timeout=30)
    body = reply.json()
    assert reply.status_code == 200 and not body.get("errors"), body
    return body["data"]


def test_phoenix_shows_the_runs_input_and_output_and_the_llm_input_messages(phoenix, tmp_path):
    # issue 31 item 5: with capture_content, Phoenix's trace list shows the run's input and
    # output (input.value / output.value on the root span), every span has a kind (none
    # "unknown"), and its LLM span view has the input messages (llm.input_messages)
    project = f"agentflow-{uuid.uuid4().hex[:8]}"
    config = tmp_path / "flow.toml"
    config.write_text(
        (EXAMPLES / "flow.toml").read_text() + "\n[telemetry]\ncapture_content = true\n"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))},
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
    }
    proc = subprocess.run(
        [
            sys.executable, "-m", "agentflow", "run", str(EXAMPLES / "bug-triage.flow"),
            "--input", f"@{EXAMPLES / 'bug-report.json'}",
            "--workspace", str(EXAMPLES / "workspace"),
            "--replay", str(EXAMPLES / "bug-triage.cassette.jsonl"),
            "--config", str(config),
            "--otel", phoenix,
        ],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=scaled(120),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _spans(phoenix, project, 27)  # all arrived
    projects = _graphql(phoenix, "{ projects { edges { node { id name } } } }")
    (pid,) = [
        e["node"]["id"] for e in projects["projects"]["edges"] if e["node"]["name"] == project
    ]
    fields = "name spanKind parentId input { value } output { value } attributes"
    query = '{ node(id: "PID") { ... on Project { spans(first: 100) { edges { node { F } } } } } }'
    data = _graphql(phoenix, query.replace("PID", pid).replace("F", fields))
    spans = [e["node"] for e in data["node"]["spans"]["edges"]]
    assert len(spans) == 27
    kinds = {s["name"]: s["spanKind"] for s in spans}
    assert "unknown" not in kinds.values(), kinds
    (run,) = [s for s in spans if s["parentId"] is None]
    assert run["spanKind"] == "chain"
    assert json.loads(run["input"]["value"])["title"].startswith("run_plan never stops")
    assert json.loads(run["output"]["value"])[0]["owner"] == "backend"
    assert kinds["invoke_agent repo-investigator"] == "agent"
    assert kinds["execute_tool read_file"] == "tool"
    llm = [s for s in spans if s["spanKind"] == "llm"]
    assert len(llm) == 7
    for span in llm:
        messages = json.loads(span["attributes"])["llm"]["input_messages"]
        roles = [m["message"]["role"] for m in messages]
        assert "user" in roles, roles
    longest = max(llm, key=lambda s: len(json.loads(s["attributes"])["llm"]["input_messages"]))
    roles = [
        m["message"]["role"] for m in json.loads(longest["attributes"])["llm"]["input_messages"]
    ]
    assert roles[:2] == ["system", "user"] and "tool" in roles  # round 4 sees rounds 1-3
