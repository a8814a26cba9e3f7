"""The api split by what it loads (docs/decisions.md "The api split by what it loads"):
``agentflow.api`` is the front door, each of its names defined in one ``agentflow.api_*`` module
and loaded on first use; the modules import at module level."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

from agentflow import api

SRC = Path(__file__).resolve().parent.parent / "src" / "agentflow"
MODULES = sorted(p.stem for p in SRC.glob("api*.py"))


def test_every_api_name_is_the_defining_modules_own_object():
    assert set(api.__all__) <= set(api._EXPORTS)
    for name, module in api._EXPORTS.items():
        assert getattr(api, name) is getattr(importlib.import_module(module), name), name
    assert api.run is importlib.import_module("agentflow.api_run").run
    assert sorted(dir(api)) == sorted(set(dir(api)))  # __dir__ lists the lazy names once
    assert "run" in dir(api)


def test_every_public_name_of_an_api_module_is_the_apis():
    for stem in MODULES:
        if stem == "api":
            continue
        module = importlib.import_module(f"agentflow.{stem}")
        for name in module.__all__:
            assert api._EXPORTS.get(name) in (module.__name__, "agentflow.errors"), (stem, name)


def test_type_checkers_see_every_lazy_name():
    """The ``if TYPE_CHECKING:`` block imports each name of the table from its module, so mypy
    and editors see the exact types of what loads lazily."""
    tree = ast.parse((SRC / "api.py").read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If))
    seen = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert seen == api._EXPORTS


def test_no_api_module_imports_inside_a_function():
    """Imports of agentflow in the api modules are at module level (issue 34 item 2)."""
    found = []
    for stem in MODULES:
        tree = ast.parse((SRC / f"{stem}.py").read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Import | ast.ImportFrom):
                        found.append(f"{stem}.py:{node.lineno}")
    assert not found


def test_importing_the_api_loads_none_of_it():
    code = (
        "import sys, agentflow.api\n"
        "print(sorted(m for m in sys.modules if m.startswith('agentflow')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert eval(out) == [
        "agentflow",
        "agentflow._lazy",
        "agentflow.api",
        "agentflow.core",
        "agentflow.core.version",
    ]
