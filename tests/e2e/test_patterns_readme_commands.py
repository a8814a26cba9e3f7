"""examples/patterns/README.md has a `flowc run` line for every pattern (the main README says
so), and each runs as written from that directory: parsed as the shell parses it and run through
`flowc`'s own entry point, it ends ok. The re-record command names the directory it runs from."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from click.testing import CliRunner
from support.patterns import PATTERNS_DIR, patterns

from agentflow.cli import main

README = PATTERNS_DIR / "README.md"


def _commands() -> list[list[str]]:
    """Every `flowc …` command of the page's ```sh blocks, continuation lines joined."""
    text = README.read_text(encoding="utf-8")
    out: list[list[str]] = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for command in block.replace("\\\n", " ").splitlines():
            words = shlex.split(command, comments=True)
            if words and words[0] == "flowc":
                out.append(words[1:])
    return out


def test_every_pattern_has_its_replayed_run_line():
    replayed = {c[1] for c in _commands() if c[0] == "run" and "--replay" in c}
    assert replayed == {p.name for p in patterns()}


@pytest.mark.parametrize("command", [c for c in _commands() if c[0] == "run"], ids=shlex.join)
def test_each_run_line_runs_as_written_from_the_patterns_directory(command, monkeypatch):
    monkeypatch.chdir(PATTERNS_DIR)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    res = CliRunner().invoke(main, [*command, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["status"] == "ok"


def test_the_rerecord_command_says_where_it_runs_from():
    text = README.read_text(encoding="utf-8")
    section = text.split("## How the recorded answers were made", 1)[1]
    assert "from the\nrepository root" in section
    assert ".venv/bin/python scripts/record_pattern_cassettes.py" in section
