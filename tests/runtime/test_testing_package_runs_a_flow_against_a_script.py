"""agentflow.testing, as a user's test uses it: the packaged scripted server answers a flow's
agent over real HTTP, with the tool results of its first reply visible in the second request."""

from __future__ import annotations

import pytest

import agentflow
from agentflow.runtime.config import load_config
from agentflow.testing import TEST_API_KEY, ChatServer, answer, tool_calls

FLOW = """
flow hello "read one file"
input { name: text }
type Greeting { ok: bool, why: text }
use agent "reader" as reader
stage s -> Greeting {
  return agent(reader) {
    task "Read a.txt and say whether it greets ${input.name}."
    tools [read_file]
    expect Greeting
  }
}
"""


def test_a_flow_runs_against_the_packaged_scripted_server(tmp_path):
    (tmp_path / "a.txt").write_text("hello ada\n")
    (tmp_path / "hello.flow").write_text(FLOW)
    script = [
        tool_calls(("builtin__read_file", {"path": "a.txt"})),
        answer({"ok": True, "why": "it says hello ada"}),
    ]
    with ChatServer(script) as server:
        config = load_config(server.write_config(tmp_path), env={"SCRIPTED_API_KEY": TEST_API_KEY})
        result = agentflow.run_sync(
            str(tmp_path / "hello.flow"), {"name": "ada"}, config=config, workspace=tmp_path
        )
    assert result.status == "ok", result.error
    assert result.output == {"ok": True, "why": "it says hello ada"}
    tool_turn = server.requests[1]["messages"][-1]
    assert tool_turn["role"] == "tool" and "hello ada" in tool_turn["content"]


def test_the_packaged_fixture_serves_this_suite(chat_server):
    # the suite's chat_server fixture is agentflow.testing.pytest_plugin's
    assert type(chat_server) is ChatServer and chat_server.url.startswith("http://127.0.0.1:")


CLASSIFY = """
flow classify
input { ticket: text }
use agent "triager" as triager
stage s -> "tech" | "billing" {
  return agent(triager) { task "Classify ${input.ticket}." expect "tech" | "billing" }
}
"""


def test_env_and_write_config_agree_and_a_bare_answer_is_told_the_value_wrapper(tmp_path):
    # (a) `answer("tech")` for a non-object `expect` is repaired by a message naming the
    # `{"value": …}` wrapper (what a real model reads too); (b) `env()` sets the key the
    # flow.toml of `write_config()` reads: the first run works as documented
    (tmp_path / "classify.flow").write_text(CLASSIFY)
    with ChatServer([answer("tech"), answer({"value": "tech"})]) as server:
        assert server.env()["SCRIPTED_API_KEY"] == TEST_API_KEY
        config = load_config(server.write_config(tmp_path), env=server.env())
        result = agentflow.run_sync(
            str(tmp_path / "classify.flow"), {"ticket": "T-1"}, config=config, workspace=tmp_path
        )
    assert result.status == "ok", result.error
    assert result.output == "tech"
    repair = server.requests[1]["messages"][-1]["content"]
    assert (
        "$: the answer must be a JSON object, got str: put the value in the field `value`, as "
        '{"value": "tech"}' in repair
    )


def test_write_config_makes_a_directory_that_does_not_exist_and_refuses_a_file(tmp_path):
    """``write_config(dir)`` with ``dir`` not made yet (its docstring's example: ``tmp /
    "cfg"``) makes it, parents too, rather than failing with FileNotFoundError; a ``dir`` that
    is a file is refused by name."""
    (tmp_path / "f.flow").write_text(
        'flow f "f"\ntype R { ok: bool }\nuse agent "a" as a\n'
        'stage s -> R { return agent(a) { task "go" tools none expect R } }\n'
    )
    with ChatServer([answer({"ok": True})]) as server:
        written = server.write_config(tmp_path / "cfg" / "nested")
        assert written == tmp_path / "cfg" / "nested" / "flow.toml" and written.is_file()
        config = load_config(written, env=server.env())
        result = agentflow.run_sync(str(tmp_path / "f.flow"), config=config)
        (tmp_path / "a-file").write_text("")
        with pytest.raises(NotADirectoryError, match="a-file: is a file; write_config writes"):
            server.write_config(tmp_path / "a-file")
    assert result.output == {"ok": True}, result.error
