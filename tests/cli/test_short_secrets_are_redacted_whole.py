"""A secret of 4 to 7 characters (``abc12``) is kept out of every output where it stands whole
— the console, ``--json``, the trace file, the durable records — not only out of the HTTP and
OpenTelemetry layers; text that merely contains its characters (``abc123``) and short secrets
that are words (``admin``) are left alone (docs/decisions.md "Short secrets")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.core.redaction import SECRETS
from agentflow.runtime.durable.records import JsonRecords

SHORT = "abc12"

FLOW = """\
flow leak "Leak"
extern tool user__echo(kind: text) -> text
stage s -> text { return "heard ${user__echo(kind: "x")}" }
"""

TOOLS = '''\
import os


def echo(kind: str) -> str:
    """The service's short token, and words near it."""
    return "token " + os.environ["SHORT_TOKEN"] + " and abc123 and admin"
'''


def test_a_short_secret_never_reaches_the_console_json_or_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "leak.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SHORT_TOKEN", SHORT)  # registered at the CLI's start (named *_TOKEN)
    monkeypatch.setenv("ADMIN_PASSWORD", "admin")  # a word: not a secret anyone can redact
    done = CliRunner().invoke(main, ["run", "leak.flow", "--json", "--trace", "t.jsonl"])
    assert done.exit_code == 0, done.output
    out = json.loads(done.stdout)
    assert out["output"] == "heard token *** and abc123 and admin"
    trace = (tmp_path / "t.jsonl").read_text()
    everything = done.stdout + done.stderr + trace
    assert f" {SHORT} " not in everything and f'{SHORT}"' not in everything
    assert "token *** and abc123 and admin" in trace
    plain = CliRunner().invoke(main, ["run", "leak.flow"])
    assert plain.exit_code == 0, plain.output
    assert "heard token *** and abc123 and admin" in plain.stderr + plain.stdout
    assert f" {SHORT} " not in plain.stdout + plain.stderr


def test_a_record_holding_a_short_secret_is_written_without_it() -> None:
    SECRETS.add(SHORT)
    text = JsonRecords().serialize({"v": [SHORT, f"x={SHORT};", "abc123"], SHORT: 1})
    assert json.loads(text) == {"v": ["***", "x=***;", "abc123"], "***": 1}
