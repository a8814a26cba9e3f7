"""A generated client is stale when the interface it was generated from changed — the flow's
types, fields, stages, names — never for a comment, a doc, blank lines, CRLF line endings or a
prompt (docs/reference/python-clients.md "Keeping the module current").

Before: the module recorded the digest of the flow's bytes and `require_current` compared it,
so any edit of the `.flow` — a comment too, or the same text saved with CRLF — made every run
function raise `ClientError` ("… was generated from an earlier version …")."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from click.testing import CliRunner

from agentflow import client
from agentflow.cli import main
from agentflow.errors import ClientError

ROUTE = """flow route "Route a ticket"
input { ticket: text }

/// What the router says
type Reply {
  answer: text
  team: "billing" | "tech"
}

use agent "router" as router

stage reply -> Reply {
  return agent(router) {
    task "Route ${input.ticket}."
    tools none
    expect Reply
  }
}
"""

#: edits the module encodes nothing of
SAME = {
    "comments": "// routing\n" + ROUTE.replace("stage reply", "// the one stage\nstage reply"),
    "crlf": ROUTE.replace("\n", "\r\n"),
    "blank lines and indentation": ROUTE.replace("\n\n", "\n\n\n").replace(
        "  answer", "    answer"
    ),
    "a doc and the description": ROUTE.replace(
        "/// What the router says", "/// Who answers"
    ).replace('"Route a ticket"', '"Route one ticket"'),
    "a prompt": ROUTE.replace("Route ${input.ticket}.", "Send ${input.ticket} on."),
}
#: edits that change what the module reads and checks
CHANGED = {
    "a field's type": ROUTE.replace('"billing" | "tech"', '"billing" | "tech" | "sales"'),
    "a field's name": ROUTE.replace("answer: text", "text: text"),
    "the input": ROUTE.replace("input { ticket: text }", "input { ticket: text, urgent: bool }"),
    "the flow's name": ROUTE.replace("flow route", "flow router"),
}


@pytest.fixture
def route_client(tmp_path, monkeypatch):
    """route.flow and route_client.py written by `flowc gen python`, imported."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "route.flow").write_text(ROUTE, encoding="utf-8")
    made = CliRunner().invoke(main, ["gen", "python", "route.flow", "-o", "route_client.py"])
    assert made.exit_code == 0, made.output
    spec = importlib.util.spec_from_file_location("route_client", tmp_path / "route_client.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("route_client", None)


def test_a_comment_crlf_a_doc_or_a_prompt_leaves_the_client_current_and_it_runs(
    route_client, tmp_path
):
    for what, text in SAME.items():
        (tmp_path / "route.flow").write_bytes(text.encode("utf-8"))
        client.require_current(
            route_client.FLOW_FILE, route_client.FLOW_DIGEST, route_client.__file__,
            route_client.FLOW_INTERFACE,
        )  # fmt: skip
        check = CliRunner().invoke(main, ["check", "route.flow"])
        assert check.exit_code == 0, (what, check.output)
    # the last edit (a prompt) runs through the typed function, its output read by the model
    result = route_client.run_route_sync(route_client.RouteInput(ticket="x"), model="test")
    assert result.status == "ok", result.error
    assert isinstance(result.output, route_client.Reply)


def test_a_changed_type_field_input_or_name_makes_the_client_stale(route_client, tmp_path):
    for what, text in CHANGED.items():
        (tmp_path / "route.flow").write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
        with pytest.raises(ClientError) as caught:
            route_client.run_route_sync(route_client.RouteInput(ticket="x"), model="test")
        assert caught.value.code == "validation", what
        assert "route_client.py was generated from an earlier version of route.flow" in str(
            caught.value
        ), what


def test_a_module_written_before_interfaces_were_recorded_is_current_for_its_text_only(
    route_client, tmp_path
):
    """A module generated before FLOW_INTERFACE existed calls require_current with three
    arguments: the very text is current, any other is not (it cannot tell what changed)."""
    args = (route_client.FLOW_FILE, route_client.FLOW_DIGEST, route_client.__file__)
    client.require_current(*args)
    (tmp_path / "route.flow").write_text("// a comment\n" + ROUTE, encoding="utf-8")
    with pytest.raises(ClientError):
        client.require_current(*args)


def test_a_changed_type_in_an_imported_file_makes_the_client_stale(tmp_path, monkeypatch):
    """The flow's own text is unchanged, but a type it imports gained a field: its interface
    changed, so `flowc check` warns and the run function refuses (before: the same source
    digest skipped the interface comparison)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "types.flow").write_text(
        'type Reply { answer: text, team: "billing" | "tech" }\n', encoding="utf-8"
    )
    flow = 'import { Reply } from "./types.flow"\n' + ROUTE.replace(
        '/// What the router says\ntype Reply {\n  answer: text\n  team: "billing" | "tech"\n}\n',
        "",
    )
    assert "type Reply" not in flow
    (tmp_path / "route.flow").write_text(flow, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[gen]\npython = ["imp_client.py"]\n', encoding="utf-8")
    made = CliRunner().invoke(main, ["gen", "python", "route.flow", "-o", "imp_client.py"])
    assert made.exit_code == 0, made.output
    spec = importlib.util.spec_from_file_location("imp_client", tmp_path / "imp_client.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = (module.FLOW_FILE, module.FLOW_DIGEST, module.__file__, module.FLOW_INTERFACE)
    client.require_current(*args)
    assert CliRunner().invoke(main, ["check", "route.flow"]).output.endswith("no problems\n")
    (tmp_path / "types.flow").write_text(
        'type Reply { answer: text, team: "billing" | "tech", urgent: bool }\n', encoding="utf-8"
    )
    check = CliRunner().invoke(main, ["check", "route.flow"])
    assert "warning[stale-generated-module]: imp_client.py was generated from an earlier" in (
        check.output
    )
    with pytest.raises(ClientError, match="imp_client.py was generated from an earlier version"):
        client.require_current(*args)
    # a comment in the imported file changes no interface: current again after a re-generation
    made = CliRunner().invoke(main, ["gen", "python", "route.flow", "-o", "imp_client.py"])
    assert made.exit_code == 0, made.output
    (tmp_path / "types.flow").write_text(
        "// shared\n" + (tmp_path / "types.flow").read_text(encoding="utf-8"), encoding="utf-8"
    )
    assert CliRunner().invoke(main, ["check", "route.flow"]).output.endswith("no problems\n")
