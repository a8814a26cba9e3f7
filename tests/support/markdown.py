"""Fenced code blocks of the repository's Markdown documentation, for the tests that check them.

``fences(path)`` lists every fenced block (```` ```info ```` … ```` ``` ````) of a Markdown file
with its info string and the line of its first content line.  ``marks(text)`` reads the
expected-diagnostic marks of a ``flow`` example: a comment at the end of the offending line,

    let a = { x: 1 ]          // error[syntax-error]
    let unused = 1            // warning[unused-variable]: `unused` is never used

(several marks may follow each other on one line; the message after ``:`` is optional and, when
given, must be the diagnostic's message exactly).  The same spelling as the checker goldens'
``// error[code]: message``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from support.paths import DOCS
from support.paths import REPO as ROOT

_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_MARK = re.compile(r"//\s*(error|warning)\[([a-z0-9-]+)\](?::\s*((?:(?!//).)*?))?\s*(?=//|$)")
_FIRST_MARK = re.compile(r"//\s*(?:error|warning)\[[a-z0-9-]+\]")


@dataclass(frozen=True)
class Fence:
    """One fenced block: ``file`` (relative to the repository), ``line`` (1-based line of the
    first content line), ``info`` (the words after the opening fence) and ``text``."""

    file: str
    line: int
    info: tuple[str, ...]
    text: str

    @property
    def lang(self) -> str:
        return self.info[0] if self.info else ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


def fences(path: Path) -> list[Fence]:
    """Every fenced code block of the Markdown file ``path``, in order."""
    rel = path.resolve().relative_to(ROOT).as_posix()
    out: list[Fence] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        close = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            body.append(lines[j])
            j += 1
        text = "\n".join(body) + ("\n" if body else "")
        out.append(Fence(rel, i + 2, tuple(m.group("info").split()), text))
        i = j + 1
    return out


#: the implementers' specification, kept as written: its blocks are fragments, not programs
SPEC = DOCS / "spec"


def doc_files() -> list[Path]:
    """The user documentation: every Markdown file under ``docs/`` (but the specification,
    :data:`SPEC`) and the README."""
    return [p for p in sorted(DOCS.rglob("*.md")) if SPEC not in p.parents] + [ROOT / "README.md"]


def all_fences(lang: str) -> list[Fence]:
    """Every block of :func:`doc_files` whose info string starts with ``lang``."""
    return [f for path in doc_files() for f in fences(path) if f.lang == lang]


_IMPORTS = re.compile(r"^import\s*\{", re.M)


def source_name(example: Fence, directory: Path) -> str:
    """The file name to check a ```` ```flow ```` example under. On a page where an example
    imports, each example is checked as a file of ``directory`` (its ``as=NAME``, else a name
    of its own), where every ``as=NAME`` block of the page is written first (so ``import { T }
    from "./NAME"`` reads the block shown beside it); elsewhere under a name of its own.
    (``file=NAME`` is another thing: a block that is the file ``NAME`` beside the page.)"""
    named = [w.split("=", 1)[1] for w in example.info[1:] if w.startswith("as=")]
    others = [f for f in fences(ROOT / example.file) if f.lang == "flow"]
    if not any(_IMPORTS.search(f.text) for f in others):  # a page without imports
        return f"{example.file.replace('/', '_')}_{example.line}.flow"
    for fence in others:
        for word in fence.info[1:]:
            if word.startswith("as="):
                path = directory / word.split("=", 1)[1]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(fence.text, encoding="utf-8")
    return str(directory / (named[0] if named else f"example_{example.line}.flow"))


def marks(text: str) -> set[tuple[int, str, str, str | None]]:
    """The expected diagnostics of an example: ``{(line, severity, code, message or None)}``."""
    found = set()
    for number, line in enumerate(text.split("\n"), 1):
        first = _FIRST_MARK.search(line)
        if first is None:
            continue
        for sev, code, message in _MARK.findall(line[first.start() :]):
            found.add((number, sev, code, message or None))
    return found


@dataclass(frozen=True)
class Command:
    """One ``$ command`` of a ```` ```console ```` block: ``argv`` (split like a shell would),
    the ``expected`` output lines that follow it, and the ``exit`` status it must end with
    (``# exits N`` at the end of the command line; default 0)."""

    fence: Fence
    line: int
    argv: tuple[str, ...]
    expected: tuple[str, ...]
    exit: int

    def __str__(self) -> str:
        return f"{self.fence.file}:{self.line}: {' '.join(self.argv)}"


_EXITS = re.compile(r"\s+#\s*exits\s+(\d+)\s*$")


def commands(fence: Fence) -> list[Command]:
    """The commands of a ```` ```console ```` block, in order."""
    out: list[Command] = []
    current: tuple[int, str, int] | None = None
    expected: list[str] = []
    for offset, line in enumerate(fence.text.rstrip("\n").split("\n")):
        if line.startswith("$ "):
            if current is not None:
                out.append(_command(fence, current, expected))
            text = line[2:]
            m = _EXITS.search(text)
            status = int(m.group(1)) if m else 0
            current = (fence.line + offset, text[: m.start()] if m else text, status)
            expected = []
        elif current is not None:
            expected.append(line)
    if current is not None:
        out.append(_command(fence, current, expected))
    return out


def _command(fence: Fence, current: tuple[int, str, int], expected: list[str]) -> Command:
    import shlex

    line, text, status = current
    return Command(fence, line, tuple(shlex.split(text)), tuple(expected), status)


def output_matches(expected: tuple[str, ...], actual: list[str]) -> bool:
    """True when ``actual`` lines equal ``expected``, where a line ``...`` stands for any number
    of lines (trailing blanks ignored)."""
    expected_lines = [e.rstrip() for e in expected]
    actual_lines = [a.rstrip() for a in actual]
    while expected_lines and not expected_lines[-1]:
        expected_lines.pop()
    while actual_lines and not actual_lines[-1]:
        actual_lines.pop()

    def match(i: int, j: int) -> bool:
        if i == len(expected_lines):
            return j == len(actual_lines)
        if expected_lines[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(actual_lines) + 1))
        return (
            j < len(actual_lines) and expected_lines[i] == actual_lines[j] and match(i + 1, j + 1)
        )

    return match(0, 0)
