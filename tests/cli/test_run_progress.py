"""`flowc run` reports in the `.flow`'s terms: the plain progress log of a shipped example is
its golden file (``tests/cli/golden/``; ``pytest --update-golden`` rewrites it), a failed run
names the stage, item and step it failed in, and ``--json`` results carry those names."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from support.paths import EXAMPLES

GOLDEN = Path(__file__).parent / "golden"


def flowc(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    """``flowc`` with stderr a pipe (so the plain log, not the live view), no model keys from
    the environment and the shape cache under ``cache``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["AGENTFLOW_CACHE_DIR"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "agentflow", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def _timeless(log: str) -> str:
    """The log with every duration (``0.12s``) written ``N.NNs``."""
    return re.sub(r"\b\d+\.\d\ds\b", "N.NNs", log)


def _items_in_order(log: str) -> str:
    """The log with each run of map-item lines (``› item N ›``) stably sorted by item: a
    `parallel map` runs its items at once, so their lines interleave in any order."""
    out: list[str] = []
    block: list[tuple[int, str]] = []
    for line in log.splitlines(keepends=True):
        found = re.search(r"› item (\d+) ›", line)
        if found:
            block.append((int(found.group(1)), line))
            continue
        out.extend(text for _, text in sorted(block, key=lambda entry: entry[0]))
        block = []
        out.append(line)
    out.extend(text for _, text in sorted(block, key=lambda entry: entry[0]))
    return "".join(out)


def test_plain_progress_of_the_bug_triage_example_matches_its_golden_log(golden, tmp_path):
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work)
    proc = flowc(
        "run", "bug-triage.flow", "--input", "@bug-report.json", "--workspace", "workspace",
        "--replay", "bug-triage.cassette.jsonl", cwd=work, cache=tmp_path / "cache",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    golden.check(GOLDEN / "bug-triage.progress.log", _items_in_order(_timeless(proc.stderr)))


BROKEN = """\
input { files: path[] }

stage load -> text[] {
  map input.files as f { read_file(path: f) }
}
"""


def test_a_failed_run_names_stage_item_and_step_on_stderr_and_in_json(tmp_path):
    (tmp_path / "load.flow").write_text(BROKEN)
    (tmp_path / "a.txt").write_text("a")
    proc = flowc(
        "run", "load.flow", "--input", '{"files": ["a.txt", "gone.txt"]}', "--json",
        cwd=tmp_path, cache=tmp_path / "cache",
    )  # fmt: skip
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "tool_error" and error["step_path"] == "E0/do.1"
    assert {k: error[k] for k in ("stage", "item", "label", "source")} == {
        "stage": "load", "item": 1, "label": "load › item 1 › read_file", "source": "load.flow:4:26",
    }  # fmt: skip
    lines = proc.stderr.splitlines()
    assert "✗ load › item 1 › read_file  load.flow:4:26" in _timeless(proc.stderr)
    shown = next(line for line in lines if line.startswith("error["))
    assert shown.startswith("error[tool_error] in load › item 1 › read_file (step E0/do.1): ")
    assert "  --> load.flow:4:26" in lines
