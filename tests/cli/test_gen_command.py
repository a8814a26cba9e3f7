"""`flowc gen python FLOW -o module.py` and `flowc gen python DIR -o OUTDIR`, and the
`stale-generated-module` warning of `flowc check` when flow.toml lists a module under
`[gen] python` (docs/reference/python-clients.md)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from support.paths import REPO

from agentflow.cli import main

FLOW = (REPO / "examples" / "bug-triage.flow").read_text(encoding="utf-8")


def test_gen_python_writes_a_module_per_flow_of_a_directory(tmp_path, monkeypatch):
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "bug-triage.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "flows" / "first.flow").write_text(
        (REPO / "examples" / "first.flow").read_text(encoding="utf-8"), encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["gen", "python", "flows", "-o", "clients"])
    assert out.exit_code == 0, out.output
    written = sorted(p.name for p in (tmp_path / "clients").iterdir())
    assert written == ["bug_triage.py", "first.py"]
    text = (tmp_path / "clients" / "bug_triage.py").read_text()
    assert "# flowc-gen: source=../flows/bug-triage.flow digest=sha256:" in text
    assert "async def run_bug_triage(" in text and "def run_bug_triage_sync(" in text


def test_check_warns_when_a_listed_module_is_older_than_its_flow(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bug-triage.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[gen]\npython = ["clients/bug_triage.py"]\n')
    runner = CliRunner()
    made = runner.invoke(main, ["gen", "python", "bug-triage.flow", "-o", "clients/bug_triage.py"])
    assert made.exit_code == 0, made.output
    fresh = runner.invoke(main, ["check", "bug-triage.flow"])
    assert fresh.exit_code == 0 and "stale-generated-module" not in fresh.output
    # a setting, a comment, CRLF line endings: the module encodes none of them
    edited = "// triage\n" + FLOW.replace("deadline 20m", "deadline 30m")
    (tmp_path / "bug-triage.flow").write_bytes(edited.replace("\n", "\r\n").encode())
    same = runner.invoke(main, ["check", "bug-triage.flow"])
    assert same.exit_code == 0 and "stale-generated-module" not in same.output, same.output
    # a field of the input type: the module's model of it is out of date
    (tmp_path / "bug-triage.flow").write_text(
        FLOW.replace("type BugReport {", "type BugReport {\n  seen: int?")
    )
    stale = runner.invoke(main, ["check", "bug-triage.flow"])
    assert stale.exit_code == 0, stale.output  # a warning
    assert (
        "bug-triage.flow:3:1: warning[stale-generated-module]: clients/bug_triage.py was "
        "generated from an earlier version of this flow" in stale.output
    )
    assert "run `flowc gen python bug-triage.flow -o clients/bug_triage.py` again" in stale.output
    strict = runner.invoke(main, ["check", "--warnings-as-errors", "bug-triage.flow"])
    assert strict.exit_code == 1


def test_gen_python_refuses_a_program_with_errors(tmp_path):
    bad = tmp_path / "bad.flow"
    bad.write_text("stage s -> int { return nope }\n")
    out = CliRunner().invoke(main, ["gen", "python", str(bad), "-o", str(tmp_path / "m.py")])
    assert out.exit_code == 1
    assert "unknown-name" in out.output
    assert not (tmp_path / "m.py").exists()


def test_gen_python_refuses_an_output_with_no_json_form(tmp_path):
    flow = tmp_path / "opaque.flow"
    flow.write_text(
        "extern type Handle\nextern tool open_it() -> Handle\n"
        "stage s -> Handle {\n  return open_it()\n}\n"
    )
    out = CliRunner().invoke(main, ["gen", "python", str(flow), "-o", str(tmp_path / "m.py")])
    assert out.exit_code == 1
    assert f"error: {flow}: `Handle` is an extern type and has no JSON form" in out.output


ROUTE = """flow route "Route a ticket"
input { ticket: text }

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


def _generated_route_client(tmp_path, monkeypatch):
    """route.flow and route_client.py written by `flowc gen python`, imported; then the flow's
    output field renamed (`Reply.answer` → `text`), as a user edits a flow and forgets the module."""
    import importlib.util

    monkeypatch.chdir(tmp_path)
    (tmp_path / "route.flow").write_text(ROUTE, encoding="utf-8")
    made = CliRunner().invoke(main, ["gen", "python", "route.flow", "-o", "route_client.py"])
    assert made.exit_code == 0, made.output
    spec = importlib.util.spec_from_file_location("route_client", tmp_path / "route_client.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (tmp_path / "route.flow").write_text(ROUTE.replace("answer: text", "text: text"))
    return module


def test_a_stale_client_refuses_to_run_and_names_the_command_that_writes_it_again(
    tmp_path, monkeypatch
):
    from agentflow.errors import ClientError
    from agentflow.runtime.events import CallbackSink

    module = _generated_route_client(tmp_path, monkeypatch)
    seen: list[object] = []
    with pytest.raises(ClientError) as caught:
        module.run_route_sync(
            module.RouteInput(ticket="x"), model="test", sinks=[CallbackSink(seen.append)]
        )
    assert caught.value.code == "validation"
    assert str(caught.value) == (
        "route_client.py was generated from an earlier version of route.flow (its types may have "
        "changed): nothing was run; write it again with "
        "`flowc gen python route.flow -o route_client.py`"
    )
    assert seen == []  # refused before the run started: no event, no model call


def test_an_output_the_client_model_refuses_is_an_agentflow_error_keeping_the_result(
    tmp_path, monkeypatch
):
    from agentflow import client
    from agentflow.errors import ClientError
    from agentflow.runtime.result import RunResult

    module = _generated_route_client(tmp_path, monkeypatch)
    finished: RunResult[object] = RunResult("ok", output={"text": "delta", "team": "tech"})
    with pytest.raises(ClientError) as caught:
        client.typed_result(finished, module.OUTPUT, module.FLOW_FILE, module.__file__)
    assert caught.value.code == "output_validation"
    assert "answer: field required; text: extra inputs are not permitted" in str(caught.value)
    assert "`flowc gen python route.flow -o route_client.py`" in str(caught.value)
    assert caught.value.result is finished


def test_the_flows_own_type_names_win_over_generated_class_names(tmp_path, monkeypatch):
    # `MmInput`, `MmOutput` and `MmStages` are what the generator names the input, the output
    # and the stages model: the flow's types keep them, the generated classes give way
    import importlib.util
    import sys

    flow = (
        'flow mm "m"\n\ntype MmInput { z: int }\ntype MmStages { s: text }\n'
        "type MmOutput { q: bool }\ntype INPUT { w: int }\ntype run_mm { v: int }\n\n"
        "input { a: MmInput, b: MmStages?, c: INPUT?, d: run_mm? }\n\n"
        "stage main -> { n: int, m: MmOutput? } {\n  return { n: input.a.z }\n}\n"
    )
    (tmp_path / "mm.flow").write_text(flow, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["gen", "python", "mm.flow", "-o", "mm_client.py"])
    assert out.exit_code == 0, out.output
    spec = importlib.util.spec_from_file_location("mm_client", tmp_path / "mm_client.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mm_client"] = mod
    try:
        spec.loader.exec_module(mod)
        assert list(mod.MmInput.model_fields) == ["z"]
        assert list(mod.MmStages.model_fields) == ["s"]
        assert list(mod.MmOutput.model_fields) == ["q"]
        assert list(mod.MmInput2.model_fields) == ["a", "b", "c", "d"]  # the input gave way
        # the module's own API names stay theirs: those types take a trailing `_`
        assert list(mod.INPUT_.model_fields) == ["w"] and list(mod.run_mm_.model_fields) == ["v"]
        assert callable(mod.run_mm) and hasattr(mod.INPUT, "validate_python")
        assert mod.INPUT.validate_python({"a": {"z": 1}}).a == mod.MmInput(z=1)
        assert list(mod.MmOutput2.model_fields) == ["n", "m"]  # the output (stage main's)
        assert list(mod.MmStages2.model_fields) == ["main"]  # the stages model
    finally:
        sys.modules.pop("mm_client", None)
