"""What a new user sees first (issue 36 item 6): `flowc --help` gives each command's whole first
sentence, progress says `map (1 item)`, a no-profile warning follows its step's ▶ line, a `try`
block's line points at its `try`, and the demo says on screen that its model answers are a
recorded script."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner
from support.paths import REPO

from agentflow.cli import main

FLOW = """\
input { items: text[] }
use agent "writer" as writer

stage s -> text[] {
  let a = try {
    read_file(path: "missing.txt")
  } catch {
    "fallback"
  }
  return map input.items as it { "${it} ${a}" }
}

stage w -> text {
  return agent(writer) { task "write" tools none expect text }
}
"""


def _progress(tmp_path: Path, monkeypatch) -> list[str]:
    """The plain progress log (stderr, not a terminal) of ``flowc run`` of FLOW, in-process."""
    (tmp_path / "f.flow").write_text(FLOW, encoding="utf-8")
    # a configured model (of kind test: no network), not --model test, under which no profile
    # matters and the no-profile warning is not given
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "fake:any"\n[providers.fake]\nkind = "test"\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTFLOW_CACHE_DIR", str(tmp_path / "cache"))
    done = CliRunner().invoke(main, ["run", "f.flow", "--input", '{"items": ["x"]}'])
    assert done.exit_code == 0, done.output
    return done.stderr.splitlines()


def test_help_gives_each_command_its_whole_first_sentence():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    commands = result.output.split("Commands:", 1)[1]
    assert "..." not in commands
    assert "(prints the new run id)." in " ".join(result.output.split())


def test_progress_says_1_item_and_a_try_block_points_at_its_try(tmp_path, monkeypatch):
    lines = _progress(tmp_path, monkeypatch)
    assert any(re.match(r"▶ s › map \(1 item\)  f\.flow:10:10$", line) for line in lines), lines
    assert "▶ s › a = try  f.flow:5:11" in lines, lines


def test_the_no_profile_warning_follows_its_steps_line(tmp_path, monkeypatch):
    lines = _progress(tmp_path, monkeypatch)
    started = lines.index("▶ w › agent(writer)  f.flow:14:10")
    warning = next(i for i, line in enumerate(lines) if "has no [agents.writer] profile" in line)
    assert warning == started + 1, lines


def test_the_demo_says_its_answers_are_a_recorded_script_before_each_run():
    script = (REPO / "scripts" / "demo.sh").read_text(encoding="utf-8")
    runs = re.findall(r"(?m)^(.*)\n\.venv/bin/flowc run (?:[^\n]*\\\n)*?\s*--replay (\S+)", script)
    replays = re.findall(r"--replay (\S+)", script)
    assert len(replays) == 2 and len(runs) == 2
    for before, cassette in runs:
        assert before == f"scripted {cassette}", (before, cassette)
    assert "not an LLM" in script
