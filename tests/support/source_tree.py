"""The package's own source, read and parsed once per test process.

Several tests read every ``.py`` under ``src/agentflow`` with :mod:`ast` (the layering, the
exception tree, the registered error and diagnostic codes, the keyword lists).  Parsing the
~45,000 lines costs a couple of seconds of CPU each time; these helpers cache the text and the
tree per file so each file is parsed once however many tests walk it.  The trees are shared:
callers only read them (``ast.walk``), never change them.
"""

from __future__ import annotations

import ast
import io
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

#: ``src/`` and the package under it, in this checkout
SRC = Path(__file__).resolve().parent.parent.parent / "src"
PACKAGE = SRC / "agentflow"


@dataclass(frozen=True)
class SourceFile:
    """One source file: its path, its text and its parsed module."""

    path: Path
    text: str
    tree: ast.Module
    #: the text's lines (with their ends), for :meth:`segment`
    lines: list[str] = field(repr=False, compare=False)

    def segment(self, node: ast.AST) -> str | None:
        """The source text of ``node``, as :func:`ast.get_source_segment` gives it, but without
        splitting the whole text again on each call (that made a walk of a big module quadratic
        in its imports)."""
        lineno, end_lineno = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if lineno is None or end_lineno is None or col is None or end_col is None:
            return None
        first, last = self.lines[lineno - 1], self.lines[end_lineno - 1]
        if lineno == end_lineno:
            return first.encode()[col:end_col].decode()
        middle = self.lines[lineno : end_lineno - 1]
        return "".join([first.encode()[col:].decode(), *middle, last.encode()[:end_col].decode()])


@cache
def parse(path: Path) -> SourceFile:
    """``path`` read (UTF-8) and parsed, once per process (keyed by the path)."""
    text = path.read_text(encoding="utf-8")
    # the lines as the parser counts them (\n, \r\n or \r ends one; a form feed does not)
    lines = io.StringIO(text, newline="").readlines()
    return SourceFile(path, text, ast.parse(text, str(path)), lines)


@cache
def files(package: Path = PACKAGE) -> tuple[Path, ...]:
    """Every ``.py`` under ``package``, sorted."""
    return tuple(sorted(package.rglob("*.py")))


def sources(package: Path = PACKAGE) -> list[SourceFile]:
    """Every ``.py`` under ``package``, sorted, each read and parsed once per process."""
    return [parse(path) for path in files(package)]
