"""`flowc check` compares `extern tool user__*` with the functions of flow.toml's
`[tools] modules` (read with `ast`, never imported) and `extern tool plan__*` with the plans of
the plans directory (their input's fields): a typo'd tool name (`unknown-extern-tool`, with
did-you-mean) and a parameter the function or plan does not have, or a required one left out
(`extern-tool-signature`) are warnings at the declaration, before anything runs; the language
server reports the same (docs/reference/tools.md "What flowc check compares")."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agentflow import api
from agentflow.cli import main
from agentflow.compiler.project import project_diagnostics

TOOLS = """\
import agentflow
import sys

@agentflow.tool
def lookup_customer(email: str, limit: int = 5, ctx=None) -> dict:
    return {}

sys.exit("imported: the check must never run this file")
"""

CHAIN = """\
flow chain
input { topic: text, language: text }
stage s -> text { return "${input.topic} in ${input.language}" }
"""

GOOD = """\
extern tool user__lookup_customer(email: text, limit?: int) -> json
extern tool plan__chain(topic: text, language: text) -> text
stage s -> json { return user__lookup_customer(email: "a") }
"""

BAD = """\
extern tool user__lookup_custmer(email: text) -> json
extern tool plan__chain(topic: text, lang: text) -> text
stage s -> json { return user__lookup_custmer(email: "a") }
"""


def _project(tmp_path: Path, flow: str) -> Path:
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "chain.flow").write_text(CHAIN)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\nentry_points = false\n')
    (tmp_path / "main.flow").write_text(flow)
    return tmp_path / "main.flow"


def _codes(flow: Path) -> list[tuple[str, int, int, str, str | None]]:
    result = api.check_source(flow.read_text(), str(flow))
    found = api.extern_tool_warnings(flow, result)
    return [(d.code, d.span.line, d.span.column, d.message, d.hint) for d in found]


def test_a_matching_declaration_is_no_warning(tmp_path):
    assert _codes(_project(tmp_path, GOOD)) == []


def test_a_misspelt_python_tool_is_named_with_the_function_meant(tmp_path):
    found = _codes(_project(tmp_path, BAD))
    code, line, column, message, hint = found[0]
    assert (code, line, column) == ("unknown-extern-tool", 1, 13)
    assert "no tool 'user__lookup_custmer' in [tools] modules" in message
    assert hint == "did you mean `user__lookup_customer`?"


def test_a_plan_parameter_the_plans_input_lacks_is_reported(tmp_path):
    found = _codes(_project(tmp_path, BAD))
    plan = [f for f in found if f[0] == "extern-tool-signature"]
    assert [(f[1], f[2]) for f in plan] == [(2, 38), (2, 13)]
    assert "the input of chain.flow has no parameter 'lang'" in plan[0][3]
    assert "leaves out 'language', which the input of chain.flow requires" in plan[1][3]


def test_a_python_parameter_typo_gets_did_you_mean(tmp_path):
    flow = _project(tmp_path, "extern tool user__lookup_customer(emial: text) -> json\n")
    found = _codes(flow)
    assert ("extern-tool-signature", 1, 35) == found[0][:3]
    assert "lookup_customer() in tools.py has no parameter 'emial'" in found[0][3]
    assert found[0][4] == "did you mean `email`?"


def test_a_module_the_check_cannot_read_without_running_it_is_no_warning(tmp_path):
    flow = _project(tmp_path, BAD)
    (tmp_path / "tools.py").write_text(
        "import agentflow\nif True:\n    def lookup_customer(e): ...\n"
    )
    assert [f[0] for f in _codes(flow)] == ["extern-tool-signature", "extern-tool-signature"]


def test_flowc_check_and_the_editor_report_them(tmp_path, monkeypatch):
    flow = _project(tmp_path, BAD)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["check", "main.flow"])
    assert "warning[unknown-extern-tool]" in res.output, res.output
    assert "warning[extern-tool-signature]" in res.output
    result = api.check_source(BAD, str(flow))
    codes = [d.code for d in project_diagnostics(flow, BAD, result)]
    assert codes.count("unknown-extern-tool") == 1 and "extern-tool-signature" in codes
