"""Acceptance (issue 18): `… catch [on [codes]] [as err] { fallback }` compiled and run end to end
against the loopback chat server — an agent whose contract fails is caught and replaced by the
fallback, and the run's usage still counts the agent's inferences; a `fail` is caught; a code not
listed is not; a hook abort never is."""

from __future__ import annotations

from agentflow import api
from agentflow.runtime.config import load_config
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.hooks import Hooks, abort
from agentflow.testing.chat_server import TEST_API_KEY, answer

SUMMARY = """\
use agent "writer" as writer
type Summary { title: text, words: int }
stage summary -> Summary {
  agent(writer) { task "Summarise the notes" expect Summary }
    catch on [output_validation] as err { { title: "unavailable: ${err.code}", words: 0 } }
}
"""


async def _run(source: str, server, tmp_path, **kw):
    (tmp_path / "f.flow").write_text(source, encoding="utf-8")
    path = server.write_config(tmp_path, extra='[agents.writer]\nsystem_prompt = "You write."\n')
    config = load_config(path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
    events: list = []
    result = await api.run(
        tmp_path / "f.flow",
        {},
        config=config,
        workspace=tmp_path,
        sinks=[CallbackSink(events.append)],
        shape_cache=False,
        **kw,
    )
    return result, events


async def test_an_agent_whose_contract_fails_is_replaced_by_the_fallback(chat_server, tmp_path):
    chat_server.script(lambda request: answer({"title": 3}))  # never a Summary
    result, events = await _run(SUMMARY, chat_server, tmp_path)
    assert result.status == "ok", result.error
    assert result.output == {"title": "unavailable: output_validation", "words": 0}
    # the failed agent's inferences (its answer and the repair pass) still count
    assert len(chat_server.requests) >= 2
    assert result.usage["inferences"] == len(chat_server.requests)
    caught = [e for e in events if e.kind == "step_caught"]
    assert len(caught) == 1 and caught[0].path == "E0"
    assert caught[0].data["error"]["code"] == "output_validation"
    assert caught[0].data["error"]["step"] == "E0/do"
    assert caught[0].data["error"]["source"].endswith("f.flow:4:3")


async def test_a_valid_answer_is_kept_and_the_fallback_never_runs(chat_server, tmp_path):
    chat_server.script([answer({"title": "Notes", "words": 12})])
    result, events = await _run(SUMMARY, chat_server, tmp_path)
    assert result.status == "ok" and result.output == {"title": "Notes", "words": 12}
    assert not [e for e in events if e.kind == "step_caught"]


async def test_a_code_that_is_not_listed_is_not_caught(chat_server, tmp_path):
    chat_server.script(lambda request: answer({"title": 3}))
    source = SUMMARY.replace("[output_validation]", "[timeout]")
    result, _ = await _run(source, chat_server, tmp_path)
    assert result.status == "error" and result.error["code"] == "output_validation"


async def test_a_fail_in_the_guarded_expression_is_caught(chat_server, tmp_path):
    source = """\
stage checked -> text {
  let verdict = (ask "Go on?" expect bool else fail "nobody answered") catch as e { false }
  return "${verdict}"
}
"""
    result, events = await _run(source, chat_server, tmp_path)
    assert result.status == "ok", result.error
    assert result.output == "false"
    caught = [e for e in events if e.kind == "step_caught"]
    assert caught[0].data["error"]["code"] == "failed"


async def test_a_hook_abort_is_never_caught(chat_server, tmp_path):
    source = """\
stage listing -> text {
  let files = list_dir(path: ".") catch { [] }
  return "${files.count} files"
}
"""
    hooks = Hooks(gate=lambda call: abort("not today"))
    result, events = await _run(source, chat_server, tmp_path, hooks=hooks)
    assert result.status == "aborted", result.error
    assert not [e for e in events if e.kind == "step_caught"]


async def test_a_failed_tool_call_is_caught_with_its_error(chat_server, tmp_path):
    source = """\
stage notes -> text {
  read_file(path: "missing.txt") catch on [tool_error] as e { "no notes (${e.code} at ${e.step})" }
}
"""
    result, _ = await _run(source, chat_server, tmp_path)
    assert result.status == "ok", result.error
    assert result.output == "no notes (tool_error at E0/do)"


async def test_a_try_block_guards_several_statements_and_a_fail_inside_is_caught(
    chat_server, tmp_path
):
    source = """\
stage notes -> text {
  let first = try {
    let listing = list_dir(path: ".")
    require listing.count > 100 else fail "too few files"
    read_file(path: "missing.txt")
  } catch as e { "caught ${e.code}: ${e.message} in ${e.where.stage ?? "?"}" }
  let second = try {
    let body = read_file(path: "missing.txt")
    "read ${body}"
  } catch on [tool_error] as e { "no file (${e.code} at line ${e.where.line ?? 0})" }
  return "${first} / ${second}"
}
"""
    result, events = await _run(source, chat_server, tmp_path)
    assert result.status == "ok", result.error
    assert result.output == (
        "caught failed: too few files in notes / no file (tool_error at line 8)"
    )
    caught = [e for e in events if e.kind == "step_caught"]
    assert [c.data["error"]["code"] for c in caught] == ["failed", "tool_error"]


async def test_a_try_statement_runs_its_fallback_for_its_effects(chat_server, tmp_path):
    source = """\
stage saved -> text {
  try {
    let body = read_file(path: "missing.txt")
    write_file(path: "copy.txt", content: body)
  } catch as e {
    write_file(path: "error.txt", content: e.code)
  }
  return "done"
}
"""
    result, _ = await _run(source, chat_server, tmp_path)
    assert result.status == "ok", result.error
    assert (tmp_path / "error.txt").read_text(encoding="utf-8") == "tool_error"
    assert not (tmp_path / "copy.txt").exists()


async def test_a_hook_abort_inside_a_try_block_is_never_caught(chat_server, tmp_path):
    source = """\
stage listing -> text {
  try {
    let files = list_dir(path: ".")
    "${files.count} files"
  } catch { "none" }
}
"""
    hooks = Hooks(gate=lambda call: abort("not today"))
    result, events = await _run(source, chat_server, tmp_path, hooks=hooks)
    assert result.status == "aborted", result.error
    assert not [e for e in events if e.kind == "step_caught"]
