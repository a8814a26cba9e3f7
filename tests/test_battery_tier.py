"""The battery tier (README.md "The battery tier"): the long twins of shorter tests carry the
marker ``battery``, which pyproject.toml registers and its ``addopts`` leave out of the default
run; the README names the command that runs them."""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_battery_marker_is_registered_and_left_out_of_the_default_run():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "pytest"
    ]["ini_options"]
    args = shlex.split(options["addopts"])
    assert args[args.index("-m") + 1] == "not battery"
    assert any(m.startswith("battery:") for m in options["markers"])


def test_the_readme_names_the_command_that_runs_the_battery_tier():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "**The battery tier.**" in readme
    assert "bash scripts/test.sh -m battery" in readme


def test_every_battery_test_is_marked_where_it_is_defined():
    marked = [
        p.relative_to(ROOT).as_posix()
        for p in sorted((ROOT / "tests").rglob("test_*.py"))
        if "mark.battery" in p.read_text(encoding="utf-8") and p.name != "test_battery_tier.py"
    ]
    # the README's count of the tier's tests is kept with the marks (eleven: two are params)
    assert len(marked) == 11, marked
