"""`flowc fmt --diff` splits lines at LF alone, as patch(1) reads a file: a comment holding
U+2028, U+2029 or a form feed was split in two by ``str.splitlines`` and the diff did not apply
(an outside battery; api_check.format_flow_diff)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from agentflow import api


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x0c", "\x85"], ids=["ls", "ps", "ff", "nel"])
def test_the_diff_of_a_file_with_a_unicode_line_separator_in_a_comment_applies(
    tmp_path: Path, sep: str
) -> None:
    flow = tmp_path / "ls.flow"
    flow.write_text(f"input {{ n: int }}\nstage s -> int {{\n  return input.n // x{sep}y\n}}\n")
    diff = api.format_flow_diff(flow)
    assert diff.startswith(f"--- {flow}\n+++ {flow}\n") and "No newline" not in diff
    patch = shutil.which("patch")
    if patch is None:  # the diff's own lines: each one of the file's, whole
        assert f"// x{sep}y\n" in diff
        return
    done = subprocess.run(
        [patch, "-p0", "--dry-run", str(flow)], input=diff, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
