"""The tutorial (``docs/tutorial/``) works as written.

- Every page's ```` ```console ```` commands run, in order, in a fresh copy of the tutorial
  directory (with the installed ``flowc``, no model configured), and print what the page shows:
  stdout for a command that succeeds; stdout then stderr for one marked ``# exits N``; a line
  ``...`` stands for any number of lines.
- Every ```` ```flow file=NAME ```` / ```` ```toml flow.toml file=NAME ```` block is the file it
  names (a flow block's ``// error[code]`` marks aside), and every ``.flow`` of the tutorial is
  shown on some page.
- The shipped cassettes are what ``scripts/record_tutorial_cassettes.py`` records now against
  the scripted model (``support/tutorial_script.py``); when this fails, re-run that script.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.chat_server import TEST_API_KEY, ChatServer
from support.markdown import ROOT, commands, doc_files, fences, output_matches
from support.tutorial_script import TutorialScript

import agentflow
from agentflow.runtime.config import load_config

TUTORIAL = ROOT / "docs" / "tutorial"
PAGES = sorted(TUTORIAL.glob("*.md"))
FLOWC = Path(sys.executable).parent / "flowc"
_MARK = re.compile(r"\s*//\s*(?:error|warning)\[[a-z0-9-]+\].*$")


def _recorder():
    spec = importlib.util.spec_from_file_location(
        "record_tutorial_cassettes", ROOT / "scripts" / "record_tutorial_cassettes.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_")) and k != "PYTHONPATH"
    }


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_tutorial_page_commands_print_what_the_page_shows(page, tmp_path):
    work = tmp_path / "tutorial"
    shutil.copytree(TUTORIAL, work)
    for fence in fences(page):
        if fence.lang != "console":
            continue
        for command in commands(fence):
            assert command.argv[0] == "flowc", f"{command}: the tutorial only runs flowc"
            proc = subprocess.run(
                [str(FLOWC), *command.argv[1:]],
                cwd=work,
                env=_env(),
                capture_output=True,
                text=True,
                timeout=120,
            )
            shown = proc.stdout.splitlines()
            if command.exit:
                shown += proc.stderr.splitlines()
            assert proc.returncode == command.exit, f"{command}\n{proc.stdout}\n{proc.stderr}"
            assert output_matches(command.expected, shown), (
                f"{command}: the page shows\n"
                + "\n".join(command.expected)
                + "\nbut it prints\n"
                + "\n".join(shown)
            )


def test_file_blocks_are_the_files_they_name():
    shown = set()
    for page in doc_files():
        for fence in fences(page):
            names = [w.removeprefix("file=") for w in fence.info[1:] if w.startswith("file=")]
            for name in names:
                path = page.parent / name
                text = fence.text
                if fence.lang == "flow":
                    text = "\n".join(_MARK.sub("", line) for line in text.split("\n"))
                assert path.is_file(), f"{fence}: no file {name}"
                assert text == path.read_text(encoding="utf-8"), f"{fence} differs from {name}"
                shown.add(path.resolve())
    unshown = [p.name for p in TUTORIAL.glob("*.flow") if p.resolve() not in shown]
    assert unshown == [], f"tutorial flows no page shows: {unshown}"


def test_shipped_tutorial_cassettes_are_not_stale(tmp_path):
    """Re-recording gives the shipped cassettes (line order aside: parallel map items record in
    the order they finish); else run .venv/bin/python scripts/record_tutorial_cassettes.py."""
    recorder = _recorder()
    runs = recorder.replayed_runs()
    assert set(runs) == {f"cassettes/{p.name}" for p in (TUTORIAL / "cassettes").glob("*.jsonl")}, (
        "a cassette no page replays, or a page replaying a cassette that is not shipped"
    )
    with ChatServer(TutorialScript()) as server:
        config = load_config(
            recorder.recording_config(server, tmp_path), env={"SCRIPTED_API_KEY": TEST_API_KEY}
        )
        for cassette, argvs in runs.items():
            recorded: list[str] = []
            for n, args in enumerate(argvs):
                part = tmp_path / f"{Path(cassette).stem}.{n}.jsonl"
                given = args[args.index("--input") + 1] if "--input" in args else None
                result = agentflow.run_sync(
                    TUTORIAL / args[0],
                    json.loads(given) if given else None,
                    config=config,
                    workspace=TUTORIAL,
                    record=part,
                    shape_cache=False,
                )
                assert result.status == "ok", (cassette, args, result.error)
                recorded += part.read_text(encoding="utf-8").splitlines()
            shipped = (TUTORIAL / cassette).read_text(encoding="utf-8").splitlines()
            assert sorted(recorded) == sorted(shipped), (
                f"docs/tutorial/{cassette} is stale: "
                "run .venv/bin/python scripts/record_tutorial_cassettes.py"
            )
