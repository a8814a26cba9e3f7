"""Text from a tool, a model, an answer, an exception or a file reaches the console with its
control characters escaped (round 41; docs/decisions.md "console text is escaped everywhere").

Before: only the progress lines escaped them (``events._visible``); a durable question's text
(``flowc run --durable``, ``flowc runs``, ``flowc runs show``, ``flowc answer``) and the final
``error[code] …`` line of ``flowc run`` (a tool's exception, a provider's stream error event)
were printed raw, so a tool or a model could retitle the terminal (OSC ``ESC ] 0 ; … BEL``),
clear it (``ESC [ 2 J``) or rewrite lines (``\\r``, ``\\b``). Now every human-readable line goes
through one sanitizer (core/text.py ``visible``) in the CLI's ``_err``/``_out``; JSON output
keeps the exact data (its escapes are JSON's own).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import click
from click.testing import CliRunner
from support.chat_server import TEST_API_KEY, sse
from support.terminal import Terminal

from agentflow import NO_ANSWER
from agentflow.cli import main
from agentflow.cli.common import Styled, _console, _err, _json_out, _out, _write_or_echo
from agentflow.compiler.render import render_text
from agentflow.core.diagnostics import Diagnostic
from agentflow.core.spans import Span
from agentflow.core.text import visible
from agentflow.runtime.durable.runs import Question
from agentflow.runtime.executor import AskRequest, terminal_interlocutor
from agentflow.ui.pages import question_form

FLOWC = str(Path(sys.executable).with_name("flowc"))

#: what a hostile tool returns: colour, a new window title, a cleared screen, a rewritten line
HOSTILE = (
    "\x1b[31mRED\x1b[0m \x1b]0;pwned-title\x07 \x1b[2J\x1b[H cleared \r over \x08\x08 bs \x9b2J"
)

TOOLS = f'''
def weird(kind: str) -> str:
    """Text with terminal escapes, or an exception holding them."""
    if kind == "ansi":
        return {HOSTILE!r}
    raise RuntimeError("boom \\x1b]0;TITLE\\x07 \\x1b[2J")
'''

ASK_FLOW = textwrap.dedent(
    """
    flow ask2 "ask"
    extern tool user__weird(kind: text) -> text
    stage s -> text {
      let w = user__weird(kind: "ansi")
      let ok = ask "Approve ${w}?" expect bool default false
      return user__weird(kind: "${ok}")
    }
    """
)

RAISE_FLOW = textwrap.dedent(
    """
    flow b "b"
    extern tool user__weird(kind: text) -> text
    stage c -> text { return user__weird(kind: "raise") }
    """
)

AGENT_FLOW = textwrap.dedent(
    """
    flow a "a"
    type N { note: text }
    use agent "w" as w
    stage s -> N { return agent(w) { task "go" tools none expect N } }
    """
)

#: bytes of a terminal escape from the tool that must never reach a console
RAW = (b"\x1b]", b"\x07", b"\x1b[2J", b"\x1b[31m", b"\x08", "\x9b".encode())


def _no_raw(out: bytes, where: str) -> None:
    for raw in RAW:
        assert raw not in out, (where, raw, out[-3000:])


def _no_escapes_at_all(out: bytes, where: str) -> None:
    """No ESC, BEL, BS and no carriage return but the terminal's own (``\\r\\n``)."""
    _no_raw(out, where)
    assert b"\x1b" not in out and b"\r" not in out.replace(b"\r\n", b""), (where, out)


def _setup(tmp_path: Path) -> None:
    (tmp_path / "tools_w.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text(
        '[tools]\nmodules = ["tools_w.py"]\nentry_points = false\n', encoding="utf-8"
    )


def _flowc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([FLOWC, *args], cwd=cwd, capture_output=True, timeout=120)


def test_visible_escapes_every_control_and_keeps_lines_only_when_asked():
    assert visible(HOSTILE) == (
        "\\x1b[31mRED\\x1b[0m \\x1b]0;pwned-title\\x07 \\x1b[2J\\x1b[H cleared \\r over "
        "\\x08\\x08 bs \\x9b2J"
    )
    assert visible("a\nb\tc\u2028\ud800") == "a\\nb\\tc\\u2028\\ud800"  # one line
    assert visible("a\nb\tc\u2028\x1b\r", lines=True) == "a\nb\tc\u2028\\x1b\\r"
    assert visible(visible(HOSTILE)) == visible(HOSTILE)  # idempotent: nothing left to escape
    assert visible("plain → text") == "plain → text"


def test_err_and_out_escape_but_pass_our_own_styling(capsys):
    _err(f"error[tool_error]: {HOSTILE}\n  second line")
    _out(f"? [E1] {HOSTILE}")
    captured = capsys.readouterr()
    assert captured.err == f"error[tool_error]: {visible(HOSTILE)}\n  second line\n"
    assert captured.out == f"? [E1] {visible(HOSTILE)}\n"
    assert _console(Styled("\x1b[32mPASSED\x1b[0m")) == "\x1b[32mPASSED\x1b[0m"  # ours
    assert isinstance(Styled("x") + HOSTILE, str) and not isinstance(Styled("x") + "y", Styled)


def test_json_output_keeps_the_exact_text_with_every_control_escaped():
    text = _json_out({"said": HOSTILE + "\u2028\x7f"})
    assert json.loads(text) == {"said": HOSTILE + "\u2028\x7f"}  # the same data
    assert "\\u001b]0;pwned-title\\u0007" in text and "\\u009b2J" in text and "\\u2028" in text
    assert not any(c in text for c in "\x1b\x07\x08\r\x9b\x7f\u2028")


def test_the_diagnostics_renderer_escapes_the_files_text_and_keeps_its_colours():
    line = 'let x = "\x1b]0;T\x07\x1b[2J" + 1'
    d = Diagnostic(
        code="type-mismatch",
        severity="error",
        message="expected `int`, found `text` (\x1b[2J)",
        span=Span("e\x1b[2J.flow", 1, 22, 1, 23),
        hint="hint \x07",
    )
    out = render_text([d], {"e\x1b[2J.flow": line}, color=True)
    assert "\x1b]" not in out and "\x07" not in out and "\x1b[2J" not in out
    assert "\x1b[1;31m" in out  # the renderer's own colour
    plain = render_text([d], {"e\x1b[2J.flow": line})
    shown = 'let x = "\\x1b]0;T\\x07\\x1b[2J" + 1'
    assert f"1 | {shown}" in plain
    # the caret stays under `+` (its column moved with the escapes before it)
    caret = next(row for row in plain.splitlines() if row.strip().startswith("| ") and "^" in row)
    assert caret.index("^") == plain.splitlines()[2].index(shown) + shown.index("+ 1")


def test_a_question_and_an_error_from_a_tool_are_escaped_by_run_runs_show_and_answer(tmp_path):
    _setup(tmp_path)
    (tmp_path / "ask2.flow").write_text(ASK_FLOW, encoding="utf-8")
    argv = [FLOWC, "run", "ask2.flow", "--durable", "--run-id", "q2"]
    with Terminal(argv, cwd=tmp_path, cols=400) as run:  # wide: the question on one line
        run.expect(r"answer with: flowc answer q2 ok VALUE", timeout=60)  # by its `let`
        for command in (["runs"], ["runs", "show", "q2"]):  # in a terminal: all of what they say
            with Terminal([FLOWC, *command], cwd=tmp_path) as term:
                assert term.wait(timeout=60) == 0, term.raw
                shown = term.raw.encode("utf-8")
            _no_escapes_at_all(shown, command)
            assert "? [s › ok = ask · E1] ".encode() in shown, shown
            assert f"] Approve {visible(HOSTILE)}?".encode() in shown, shown
            if command[0:2] == ["runs", "show"]:  # the hint names the ask by its `let` too
                assert b"answer with: flowc answer q2 ok VALUE" in shown, shown
        answered = _flowc("answer", "q2", "ok", "yes", cwd=tmp_path)  # a pipe
        assert answered.returncode == 0, answered.stderr
        _no_escapes_at_all(answered.stderr, "answer")
        assert (
            f"answered [s › ok = ask · E1] Approve {visible(HOSTILE)}?".encode() in answered.stderr
        )
        assert run.wait(timeout=120) == 1, run.raw  # the tool raised after the answer
        shown = run.raw.encode("utf-8")
    _no_raw(shown, "run")  # the live view's own escapes aside, none of the tool's
    assert f"? [s › ok = ask] Approve {visible(HOSTILE)}?".encode() in shown, shown
    assert b"RuntimeError: boom \\x1b]0;TITLE\\x07 \\x1b[2J" in shown, shown


def test_the_error_line_of_a_failed_run_escapes_a_providers_stream_error(chat_server, tmp_path):
    chat_server.stream_only = True
    chat_server.script([sse([{"error": {"message": "boom \x1b[2J\x1b]0;PWNED\x07"}}])])
    chat_server.write_config(tmp_path, retries=0)
    (tmp_path / "a.flow").write_text(AGENT_FLOW, encoding="utf-8")
    env = {**os.environ, "SCRIPTED_API_KEY": TEST_API_KEY}
    run = subprocess.run(
        [FLOWC, "run", "a.flow"], cwd=tmp_path, capture_output=True, timeout=120, env=env
    )
    assert run.returncode == 1, run.stderr
    _no_escapes_at_all(run.stderr, "run")
    (line,) = [row for row in run.stderr.splitlines() if row.startswith(b"error[")]
    assert b"(boom \\x1b[2J\\x1b]0;PWNED\\x07)" in line, line


def test_the_ui_escapes_a_questions_text_as_html():
    q = Question(run_id="r", workflow_id="r", path="E1", question=f"<script>x</script> {HOSTILE}")
    form = question_form(q, "t")
    assert "<script>" not in form and "&lt;script&gt;x&lt;/script&gt;" in form


def test_a_document_on_stdout_is_data_in_a_pipe_and_escaped_on_a_terminal(capsys, monkeypatch):
    _write_or_echo(f"graph\n  {HOSTILE}\n", None)  # `flowc graph`, `flowc report -o -`
    # a pipe: the data as click writes it (it strips CSI colour codes, nothing else)
    assert capsys.readouterr().out == click.unstyle(f"graph\n  {HOSTILE}\n")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    _write_or_echo(f"graph\n  {HOSTILE}\n", None)
    assert capsys.readouterr().out == f"graph\n  {visible(HOSTILE)}\n"


async def test_the_terminal_prompt_of_a_question_escapes_its_text():
    out = io.StringIO()
    ask = terminal_interlocutor(io.StringIO("nope\n\n"), out)
    req = AskRequest(f"Approve {HOSTILE}?", {"type": "boolean"}, [True, False], "E1", ["t"])
    assert await ask(req) is NO_ANSWER
    shown = out.getvalue()
    assert f"? [E1] Approve {visible(HOSTILE)}?\n" in shown and "not accepted" in shown
    assert not any(c in shown for c in "\x1b\x07\x08\r\x9b")


def test_flowc_test_escapes_a_tests_name_and_values(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `flowc test` keeps its cache in the current directory
    (tmp_path / "t.flow").write_text(
        textwrap.dedent(
            """\
            extern tool user__say() -> text
            stage s -> text { return user__say() }
            test "hostile \\u{1b}]0;pwned\\u{7}\\u{1b}[2J" {
              stub tool user__say returns "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J"
              expect s == "calm"
            }
            """
        ),
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["test", "t.flow", "--no-cache"])
    assert result.exit_code == 1, result.output
    # the test's name (a string from the file) is shown with its escapes escaped; the values
    # are JSON (`"\\u001b…"`)
    assert "hostile \\x1b]0;pwned\\x07\\x1b[2J FAILED" in result.output, result.output
    assert not any(c in result.output for c in "\x1b\x07")


def test_a_junit_file_holds_a_name_with_control_characters_and_still_parses():
    """XML 1.0 cannot hold ESC or BEL even as a reference: `flowc test --junit` and `flowc eval
    --junit` write a test named with them as its visible escapes (the file parses)."""
    import xml.etree.ElementTree as ET

    from agentflow.core.text import xml_attribute, xml_text

    name = 't \x1b]0;TITLE\x07 <&> "q" \ud800'
    doc = f"<testcase name={xml_attribute(name)}>{xml_text(name)}</testcase>"
    case = ET.fromstring(doc)
    assert case.get("name") == case.text == 't \\x1b]0;TITLE\\x07 <&> "q" \\ud800'


#: the text-direction controls ("Trojan Source": a terminal shows the text reordered)
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def test_text_direction_controls_are_escaped_like_every_control(tmp_path, monkeypatch):
    assert visible(f"ok{BIDI}") == "ok" + "".join(ascii(c)[1:-1] for c in BIDI)
    assert visible("a\n\u202eb", lines=True) == "a\n\\u202eb"
    # a run's `fail` message with one, from the input: escaped on the console
    (tmp_path / "f.flow").write_text(
        'input { why: text }\nstage s -> text {\n  fail "no: ${input.why}"\n}\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(
        main, ["run", "f.flow", "--input", json.dumps({"why": "txt.exe\u202egpj.txt"})]
    )
    assert done.exit_code == 1, done.output
    assert "\u202e" not in done.stderr and "txt.exe\\u202egpj.txt" in done.stderr, done.stderr
