"""docs/ARCHITECTURE.md lists every module of ``src/agentflow`` and no module that is gone.

Each module is a list item of the "Modules" section naming its path relative to
``src/agentflow`` in backticks (``- `compiler/checker.py` — …``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "agentflow"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
#: the files that are modules of the package (Python, the grammar, the prelude)
SUFFIXES = (".py", ".lark", ".flow")


def _listed() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([^`]+)` — ", section, flags=re.M))


def _modules() -> set[str]:
    return {
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*")
        if p.suffix in SUFFIXES and "__pycache__" not in p.parts
    }


def test_every_module_is_listed_in_architecture_doc():
    missing = sorted(_modules() - _listed())
    assert not missing, f"docs/ARCHITECTURE.md 'Modules' lacks a line for: {missing}"


def test_architecture_doc_lists_no_module_that_does_not_exist():
    gone = sorted(_listed() - _modules())
    assert not gone, f"docs/ARCHITECTURE.md 'Modules' lists modules that do not exist: {gone}"
