"""`flowc serve --mcp DIR` serves the programs of DIR itself; when it finds none there but some a
level down, it says so (a new user served a project's root whose flows were in `flows/` and got
"0 tool(s) … none" alone)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_serving_a_directory_whose_flows_are_a_level_down_hints_at_that_directory(
    tmp_path: Path,
) -> None:
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "a.flow").write_text("flow a\nstage a -> int {\n  return 1\n}\n")
    done = subprocess.run(
        [sys.executable, "-m", "agentflow", "serve", "--mcp", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "flowc serve: 0 tool(s) on stdio: none"
    assert lines[1] == (
        f"flowc serve: hint: the files of {tmp_path} itself are served, not those of its "
        "sub-directories (flows/a.flow): give the directory that holds them"
    )


def test_serving_a_file_says_serve_takes_a_directory_and_which_one(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agentflow.cli import main

    flow = tmp_path / "extract.flow"
    flow.write_text("flow extract\nstage a -> int {\n  return 1\n}\n")
    for args in (["serve", str(flow)], ["serve", "--mcp", str(flow)]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        assert (
            f"{flow} is a file: `flowc serve --mcp DIR` serves every .flow and plan file of a "
            f"directory, each as a tool; `flowc serve --mcp {tmp_path}` serves this one"
        ) in " ".join(result.output.split()), result.output
