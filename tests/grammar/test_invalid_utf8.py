"""Bytes that are not UTF-8 in a `.flow` file are a `syntax-error` at their position (with the
bytes in hex and what they would read in Windows-1252), in strings, comments and code alike;
they used to be replaced by U+FFFD and reach the plan. Nothing that reads the file crashes on
them: check (text, JSON, SARIF), compile, fmt."""

from __future__ import annotations

import json
import subprocess
import sys

from agentflow.api import CompileError, compile_flow
from agentflow.compiler.api import check_file

SOURCE = b'stage s -> text {\n  return "caf\xe9 \xff\xfe"  // \xe9t\xe9\n}\n'


def test_each_run_of_invalid_bytes_is_reported_where_it_is(tmp_path):
    path = tmp_path / "s.flow"
    path.write_bytes(SOURCE)
    got = [
        (d.code, d.span.line, d.span.column, d.span.end_column, d.message, d.hint)
        for d in check_file(path).diagnostics
    ]
    msg = "invalid UTF-8: the byte 0xE9 is not part of a UTF-8 character"
    hint = "save the file as UTF-8 (in Windows-1252 these bytes read `é`)"
    assert got == [
        ("syntax-error", 2, 14, 15, msg, hint),
        (
            "syntax-error",
            2,
            16,
            18,
            "invalid UTF-8: the bytes 0xFF 0xFE are not part of a UTF-8 character",
            "save the file as UTF-8 (in Windows-1252 these bytes read `ÿþ`)",
        ),
        ("syntax-error", 2, 24, 25, msg, hint),
        ("syntax-error", 2, 26, 27, msg, hint),
    ]


def test_an_invalid_byte_in_code_is_reported_once(tmp_path):
    path = tmp_path / "s.flow"
    path.write_bytes(b"stage s\xe9 -> int { 1 }\n")
    (diag,) = check_file(path).diagnostics
    assert (diag.span.line, diag.span.column) == (1, 8)
    assert diag.message.startswith("invalid UTF-8: the byte 0xE9")


def test_compile_refuses_and_the_cli_prints_every_format(tmp_path):
    path = tmp_path / "s.flow"
    path.write_bytes(SOURCE)
    try:
        compile_flow(path)
    except CompileError as e:
        assert {d.code for d in e.diagnostics} == {"syntax-error"}
    else:
        raise AssertionError("a file that is not UTF-8 compiled")
    flowc = [sys.executable, "-m", "agentflow.cli"]
    for fmt in ("text", "json", "sarif"):
        out = subprocess.run(
            [*flowc, "check", str(path), "--format", fmt],
            capture_output=True,
            env={"PYTHONIOENCODING": "utf-8", "PATH": ""},
        )
        assert out.returncode == 1, out.stderr
        assert b"Traceback" not in out.stderr
        text = out.stdout.decode("utf-8")  # valid UTF-8: the bytes are shown as U+FFFD
        if fmt == "text":
            assert '2 |   return "caf\ufffd \ufffd\ufffd"' in text
        else:
            json.loads(text)
    out = subprocess.run([*flowc, "fmt", str(path)], capture_output=True)
    assert out.returncode == 1 and b"invalid UTF-8" in out.stderr
    assert path.read_bytes() == SOURCE  # left as it was
