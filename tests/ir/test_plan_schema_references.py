"""Schemas in plans never make the runtime fetch anything (issue 16): a non-local ``$ref`` is
refused at load with file:line:col, unresolvable and endlessly looping references give clear
errors at load and at run time, in every validation path (fastjsonschema, jsonschema, OpenAI
strict rewriting), and a loopback listener sees 0 requests throughout."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.errors import PlanLoadError
from agentflow.ir import load_plan_text
from agentflow.ir.schemas import ref_problems, validation_errors
from agentflow.runtime.extract import validate


class Listener:
    """A loopback HTTP server that counts every request it receives."""

    def __init__(self) -> None:
        self.count = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                outer.count += 1
                body = json.dumps({"type": "string"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # shutdown() waits for the loop's next poll: 0.5 s a test at the default interval
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/schema.json"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener():
    server = Listener()
    try:
        yield server
    finally:
        server.close()


AGENT = """version: 1
name: refs
steps:
  - id: E1
    tool_name: agent
    input:
      prompt: Answer
      output_schema:
        type: object
        properties:
          a:
            $ref: "%s"
"""


def test_a_remote_ref_is_refused_at_load_with_its_position(listener):
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(AGENT % listener.url, "refs.yaml")
    (problem,) = info.value.errors
    assert str(problem.span) == "refs.yaml:12:19"
    assert "refers outside the schema" in problem.message and listener.url in problem.message
    assert listener.count == 0


def test_plan_validate_refuses_it_and_fetches_nothing(tmp_path, listener):
    plan = tmp_path / "refs.yaml"
    plan.write_text(AGENT % listener.url)
    result = CliRunner().invoke(main, ["plan", "validate", str(plan)])
    assert result.exit_code == 1
    shown = result.stdout + result.stderr  # the diagnostics, then the count
    assert f"{plan}:12:19" in shown and "only local references" in shown
    assert "Traceback" not in shown
    assert listener.count == 0


@pytest.mark.parametrize(
    "ref, expected",
    [
        ("file:///etc/passwd", "refers outside the schema"),
        ("other.json#/x", "refers outside the schema"),
        ("#/$defs/Missing", "does not resolve"),
        ("#nowhere", "does not resolve"),
        ("{{ input.url }}", "is not a 'uri-reference'"),
    ],
)
def test_other_unusable_refs_are_refused_at_load(ref, expected):
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(AGENT % ref, "refs.yaml")
    assert expected in str(info.value) and "refs.yaml:12:19" in str(info.value)


LOOPS = {
    "self": {"type": "object", "$ref": "#"},
    "two refs": {
        "type": "object",
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "properties": {"x": {"$ref": "#/$defs/a"}},
    },
    "through allOf": {
        "type": "object",
        "$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}},
        "properties": {"x": {"$ref": "#/$defs/a"}},
    },
}


@pytest.mark.parametrize("name", list(LOOPS))
def test_an_endless_reference_loop_is_refused_everywhere(name, listener):
    schema = LOOPS[name]
    plan = {
        "version": 1,
        "name": "loop",
        "steps": [
            {"id": "E1", "tool_name": "agent", "input": {"prompt": "p", "output_schema": schema}}
        ],
    }
    with pytest.raises(PlanLoadError, match="refers to itself without descending"):
        load_plan_text(json.dumps(plan), "loop.json")
    # at run time too (a schema that only exists then): a clear error, no RecursionError
    assert "refers to itself without descending" in validate(schema, {"x": 1})[0]
    with pytest.raises(ValueError, match="refers to itself"):
        validation_errors(schema, {"x": 1})


TREE = {
    "type": "object",
    "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["name"],
        }
    },
}


def test_a_recursive_schema_that_descends_is_fine_in_every_mode():
    from agentflow.runtime.models.openai import strict_schema

    assert ref_problems(TREE) == []
    good = {"kids": [{"name": "a", "kids": [{"name": "b"}]}]}
    assert validate(TREE, good) == []
    assert validate(TREE, {"kids": [{"kids": []}]}) == ["$.kids[0]: 'name' is a required property"]
    strict = strict_schema(TREE)
    assert strict is not None and "$defs" in strict


def test_strict_rewriting_of_a_very_deep_schema_gives_up_instead_of_crashing():
    from agentflow.runtime.models.openai import strict_schema

    deep: dict = {"type": "string"}
    for _ in range(5000):
        deep = {"type": "object", "properties": {"a": deep}}
    assert strict_schema(deep) is None
    assert validate(deep, {"a": 1})  # an answer, not an exception


def test_runtime_validation_never_fetches(listener):
    schema = {"type": "object", "properties": {"a": {"$ref": listener.url}}}
    errors = validate(schema, {"a": "x"})
    assert errors and "refers outside the schema" in errors[0]
    with pytest.raises(ValueError, match="refers outside"):
        validation_errors(schema, {"a": "x"})
    assert listener.count == 0


def test_a_plan_input_schema_with_a_remote_ref_is_refused_at_load(listener):
    text = (
        "version: 1\nname: inp\ninput_schema:\n  type: object\n  properties:\n"
        f"    a: {{$ref: '{listener.url}'}}\nsteps:\n  - id: E1\n    tool_name: ask\n"
        "    input: {question: q, when_unanswered: skip}\n"
    )
    with pytest.raises(PlanLoadError, match="only local references") as info:
        load_plan_text(text, "inp.yaml")
    assert "inp.yaml:6:" in str(info.value)
    assert listener.count == 0
