"""The front-end layers are type-checked strictly and import at module level (issue 34 item 1;
docs/decisions.md "Strict typing of the front end").

``mypy`` (scripts/test.sh, .ci/run) reads ``[tool.mypy]`` from pyproject.toml; these tests pin the
configuration that makes plain ``mypy`` hold ``agentflow.core``, ``grammar``, ``compiler`` and
``ir`` to the per-module flags of ``--strict``, and the rule that a function-local import of
agentflow inside those packages says why it is not at module level.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from mypy.options import PER_MODULE_OPTIONS

ROOT = Path(__file__).resolve().parent.parent
STRICT_PACKAGES = ("core", "grammar", "compiler", "ir")
#: the rest of the bottom layer (tests/test_layers.py)
STRICT_MODULES = ("agentflow.errors", "agentflow._lazy", "agentflow.stdlib")

#: what ``mypy --strict`` turns on that a per-module section can say (``--strict`` also sets
#: warn_unused_ignores, warn_redundant_casts, strict_equality and check_untyped_defs, which
#: [tool.mypy] sets for every module)
STRICT_PER_MODULE = {
    "disallow_any_generics": True,
    "disallow_subclassing_any": True,
    "disallow_untyped_calls": True,
    "disallow_untyped_defs": True,
    "disallow_incomplete_defs": True,
    "disallow_untyped_decorators": True,
    "warn_return_any": True,
    "implicit_reexport": False,
    "extra_checks": True,
}


def _mypy_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def test_the_front_end_packages_get_every_per_module_flag_of_strict():
    config = _mypy_config()
    assert config["files"] == ["src/agentflow"]
    wanted = {f"agentflow.{p}.*" for p in STRICT_PACKAGES} | set(STRICT_MODULES)
    sections = [o for o in config["overrides"] if wanted <= set(o["module"])]
    assert len(sections) == 1, "one override lists agentflow.core/grammar/compiler/ir"
    flags = {k: v for k, v in sections[0].items() if k != "module"}
    assert flags == STRICT_PER_MODULE
    # a misspelt key is only a warning on mypy's stderr: every key must be a per-module option
    assert set(flags) <= PER_MODULE_OPTIONS
    for flag in ("check_untyped_defs", "warn_unused_ignores", "warn_redundant_casts"):
        assert config[flag] is True


def test_no_override_says_strict_which_mypy_would_apply_to_every_module():
    # mypy's config parser calls set_strict_flags() for `strict = true` in any section, so in an
    # override it silently makes the whole package strict instead of the listed modules
    assert all("strict" not in o for o in _mypy_config()["overrides"])


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
