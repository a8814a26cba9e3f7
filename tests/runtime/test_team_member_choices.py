"""A `member` field of an agent's contract is shown to the model as one of the team's members
(docs/reference/agents.md "Targets: agents and teams"): the schema in the request lists exactly
the members of the team, with their flow.toml descriptions; answers are still checked against
the compiled contract, so a model that ignores the list still fails the step that routes to the
member with `invalid_member`, which suggests the closest member."""

from __future__ import annotations

import json

import agentflow
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.agent_step import with_member_choices
from agentflow.runtime.config import TeamMember, load_config
from agentflow.testing import TEST_API_KEY, ChatServer, answer

FLOW = """
flow route "route work to an owner"
input { bug: text }
use team "dev-team" as dev
type Pick { owner: member, why: text }
type Done { notes: text }
stage pick -> Pick {
  agent(dev.main) {
    task "Who should fix ${input.bug}?"
    tools none
    expect Pick
  }
}
stage fix -> Done {
  agent(dev.member(pick.owner)) {
    task "Fix ${input.bug}"
    tools none
    expect Done
  }
}
"""

TEAM = """
[teams.dev-team]
main = "lead"

[teams.dev-team.members.lead]

[teams.dev-team.members.backend]
description = "owns the API and the database"

[teams.dev-team.members.frontend]
description = "owns the web UI"

[teams.ops]
main = "sre"
members = { sre = {} }
"""


def _run(tmp_path, script):
    (tmp_path / "route.flow").write_text(FLOW, encoding="utf-8")
    with ChatServer(script) as server:
        path = server.write_config(tmp_path)
        path.write_text(path.read_text(encoding="utf-8") + TEAM, encoding="utf-8")
        config = load_config(path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
        result = agentflow.run_sync(
            str(tmp_path / "route.flow"), {"bug": "a 500"}, config=config, workspace=tmp_path
        )
    return result, server.requests


def _shown_schema(request):
    """The contract as the request carries it: the strict `response_format`, else the schema
    in the system text."""
    fmt = request.get("response_format")
    if fmt:
        return fmt["json_schema"]["schema"]
    system = next(m["content"] for m in request["messages"] if m["role"] == "system")
    return json.loads(system.split("JSON Schema: ", 1)[1])


def test_the_model_is_shown_exactly_the_members_of_the_team_it_routes_to(tmp_path):
    script = [answer({"owner": "backend", "why": "API"}), answer({"notes": "fixed"})]
    result, requests = _run(tmp_path, script)
    assert result.status == "ok", result.error
    owner = _shown_schema(requests[0])["properties"]["owner"]
    # the team the plan routes to, not `ops`, which flow.toml also configures
    assert owner["enum"] == ["backend", "frontend", "lead"]
    assert owner["description"] == (
        "a member of team dev-team: backend (owns the API and the database), "
        "frontend (owns the web UI), lead"
    )
    # a contract without a member field is sent as compiled
    assert "enum" not in json.dumps(_shown_schema(requests[1]))


def test_a_model_that_ignores_the_members_fails_with_invalid_member_and_a_suggestion(tmp_path):
    result, requests = _run(tmp_path, [answer({"owner": "backnd", "why": "API"})])
    assert result.status == "error"
    assert result.error.code == "invalid_member"
    assert result.error.message == (
        "team 'dev-team' has no member backnd (did you mean `backend`?); "
        "members: backend, frontend, lead"
    )
    assert len(requests) == 1  # the answer conformed to the compiled contract: no repair pass


def test_a_hand_written_plan_without_the_member_annotation_is_sent_as_written(tmp_path):
    schema = {
        "type": "object",
        "properties": {"owner": {"type": "string"}},
        "required": ["owner"],
        "additionalProperties": False,
    }
    plan = load_plan_data(
        {
            "name": "hand",
            "steps": [
                {
                    "id": "pick",
                    "tool_name": "agent",
                    "input": {
                        "prompt": "who?",
                        "tools": "none",
                        "output_schema": schema,
                        "agent": {"kind": "team.main", "team": "dev-team"},
                    },
                }
            ],
        },
        "hand.yaml",
    )
    with ChatServer([answer({"owner": "anyone"})]) as server:
        path = server.write_config(tmp_path)
        path.write_text(path.read_text(encoding="utf-8") + TEAM, encoding="utf-8")
        config = load_config(path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
        result = agentflow.run_sync(plan, {}, config=config, workspace=tmp_path)
    assert result.status == "ok", result.error
    assert _shown_schema(server.requests[0])["properties"]["owner"] == {"type": "string"}


def test_members_of_several_teams_are_listed_once_and_a_field_keeps_its_own_description():
    member = {"type": "string", "x-flow-type": "member"}
    schema = {
        "type": "object",
        "properties": {
            "owner": {**member, "description": "who fixes it"},
            "reviewer": {"anyOf": [member, {"type": "null"}]},
            "path": {"type": "string", "x-flow-type": "path"},
        },
    }
    teams = {
        "dev": {"lead": TeamMember(), "sre": TeamMember(description="on call")},
        "ops": {"sre": TeamMember()},
    }
    shown = with_member_choices(schema, teams)
    assert shown is not None
    owner = shown["properties"]["owner"]
    assert owner["enum"] == ["lead", "sre"]
    assert owner["description"] == (
        "who fixes it (a member of team dev: lead, sre (on call); or a member of team ops: sre)"
    )
    assert shown["properties"]["reviewer"]["anyOf"][0]["enum"] == ["lead", "sre"]
    assert "enum" not in shown["properties"]["path"]
    assert "enum" not in schema["properties"]["owner"]  # the compiled contract is left as it is
    assert with_member_choices(schema, {}) is None
    assert with_member_choices({"type": "object"}, teams) is None
