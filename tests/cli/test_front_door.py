"""One front door (docs/ARCHITECTURE.md "The front door", issue 34): every import of every
module of ``agentflow.cli`` — module-level, function-local and ``TYPE_CHECKING`` ones — names
``agentflow.api``, ``agentflow.errors``, ``agentflow.core``, ``agentflow.cli`` itself, or the
language server ``agentflow.lsp``; anything else the CLI does goes through an api function."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_layers import PACKAGE, imports_of

#: what a module of cli/ may import (a module or a package and everything under it)
ALLOWED = ("agentflow.api", "agentflow.errors", "agentflow.core", "agentflow.cli", "agentflow.lsp")


def _allowed(target: str) -> bool:
    return any(target == a or target.startswith(a + ".") for a in ALLOWED)


def _past_the_front_door(files: list[Path]) -> list[str]:
    return [imp.where() for f in files for imp in imports_of(f) if not _allowed(imp.target)]


def test_the_cli_reaches_the_package_only_through_the_api():
    files = sorted((PACKAGE / "cli").glob("*.py"))
    assert len(files) >= 8  # the walk saw cli/
    assert sum(len(imports_of(f)) for f in files) > 20
    past = _past_the_front_door(files)
    assert not past, "cli/ imports past agentflow.api:\n" + "\n".join(past)


@pytest.mark.parametrize(
    "source",
    [
        "def f():\n    from agentflow.runtime.durable.runs import work\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agentflow.ir.models import Plan\n",
        "from agentflow import flowexplore\n",
        "import agentflow.compiler.render\n",
        # `agentflow.api_commands` is api's own helper: the CLI names `agentflow.api` only
        "from agentflow.api_commands import console_sink\n",
    ],
)
def test_an_import_past_the_api_is_caught(tmp_path, monkeypatch, source):
    import test_layers

    pkg = tmp_path / "agentflow"
    for name in ("cli/__init__", "cli/x", "runtime/durable/runs", "ir/models", "flowexplore"):
        (pkg / f"{name}.py").parent.mkdir(parents=True, exist_ok=True)
        (pkg / f"{name}.py").touch()
    for name in ("compiler/render", "api_commands"):
        (pkg / f"{name}.py").parent.mkdir(parents=True, exist_ok=True)
        (pkg / f"{name}.py").touch()
    (pkg / "cli" / "x.py").write_text(source)
    monkeypatch.setattr(test_layers, "SRC", tmp_path)
    past = _past_the_front_door([pkg / "cli" / "x.py"])
    assert len(past) == 1 and "cli/x.py:" in past[0], past


def test_the_api_and_its_commands_module_agree():
    """Every public name of ``api_commands`` is one of ``agentflow.api``'s (the CLI sees it)."""
    from agentflow import api, api_commands

    for name in api_commands.__all__:
        assert name in api.__all__ and getattr(api, name) is getattr(api_commands, name), name
