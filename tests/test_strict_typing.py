"""The whole package is type-checked strictly (issue 34 item 1 for the front end; docs/decisions.md
"Strict typing of the front end" and "The whole package type-checked"), and the front-end layers
import at module level.

``mypy`` (scripts/test.sh, .ci/run) reads ``[tool.mypy]`` from pyproject.toml; these tests pin the
configuration that makes plain ``mypy`` hold every module of ``agentflow`` to every flag of
``--strict`` (as mypy itself resolves each module's options), and the rule that a function-local
import of agentflow inside the front-end packages says why it is not at module level.
"""

from __future__ import annotations

import ast
import io
import tomllib
from pathlib import Path

from mypy.config_parser import parse_config_file
from mypy.main import define_options
from mypy.options import Options

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "agentflow"
STRICT_PACKAGES = ("core", "grammar", "compiler", "ir")


def _mypy_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def _modules() -> list[str]:
    """Every module of the package, by its dotted name (a package by its ``__init__``)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def test_every_module_of_the_package_gets_every_flag_of_strict():
    config = _mypy_config()
    assert config["files"] == ["src/agentflow"]
    assert config["strict"] is True
    # what `--strict` sets, as mypy's own command line defines it (mypy==2.4.1 is pinned)
    _, _, strict_flags = define_options()
    assert ("disallow_untyped_defs", True) in strict_flags
    assert ("implicit_reexport", False) in strict_flags
    options = Options()

    def set_strict_flags() -> None:
        for dest, value in strict_flags:
            setattr(options, dest, value)

    stderr = io.StringIO()
    parse_config_file(
        options, set_strict_flags, str(ROOT / "pyproject.toml"), io.StringIO(), stderr
    )
    # a misspelt key or a bad value is only a warning on mypy's stderr
    assert stderr.getvalue() == ""
    modules = _modules()
    assert "agentflow.runtime.functions" in modules and "agentflow.cli" in modules
    lax = {}
    for module in modules:
        resolved = options.clone_for_module(module)
        off = [dest for dest, value in strict_flags if getattr(resolved, dest) != value]
        if off:
            lax[module] = off
    assert lax == {}


def test_no_override_relaxes_a_module_of_the_package():
    # an override is for a third-party library (its missing stubs), never for agentflow
    for override in _mypy_config().get("overrides", []):
        modules = override["module"]
        for module in [modules] if isinstance(modules, str) else modules:
            assert not module.startswith("agentflow"), module


def test_no_override_says_strict_which_mypy_would_apply_to_every_module():
    # mypy's config parser calls set_strict_flags() for `strict = true` in any section, so in an
    # override it silently makes the whole package strict instead of the listed modules
    assert all("strict" not in o for o in _mypy_config().get("overrides", []))


def test_function_local_imports_in_the_front_end_say_why():
    unexplained = []
    for package in STRICT_PACKAGES:
        for path in sorted((ROOT / "src" / "agentflow" / package).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            tree = ast.parse("\n".join(lines))
            for fn in ast.walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(fn):
                    if not isinstance(node, ast.ImportFrom) or not (
                        node.level or (node.module or "").startswith("agentflow")
                    ):
                        continue
                    # a comment on one of the lines just above the import gives the reason
                    above = lines[max(0, node.lineno - 4) : node.lineno - 1]
                    if not any(line.strip().startswith("#") for line in above):
                        rel = path.relative_to(ROOT)
                        unexplained.append(f"{rel}:{node.lineno}")
    assert unexplained == []
