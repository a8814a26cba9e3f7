"""No tracked file names a path outside the repository, so a clone into any directory, with
nothing beside it, runs the tests and the examples.

Flagged, in every tracked text file (``git ls-files``):

* absolute paths into a machine's own places: ``/work/…``, ``/home/…``, ``/Users/…``,
  ``/root/…``, ``/mnt/…``, ``/srv/…``, ``/tmp/…`` (also as ``file://`` URIs);
* a relative path beginning with ``../`` that, resolved from the directory of the file it is
  written in, leaves the repository (a virtual environment two levels up from ``examples/``) or
  names a top-level entry the repository does not have (a ``shared`` design folder beside the
  repository, written in ``docs/``).

Not flagged: system paths such as ``/dev/null`` or ``/usr/bin/env``, URL paths
(``https://host/home/x``), and ``../`` that stays inside the repository (a test's ``"../*"``
input for the workspace sandbox, say).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from support.paths import REPO

#: roots that are this machine's, never the repository's (``tmp`` needs a name after it)
_ROOTS = r"(?:work|home|Users|root|mnt|srv|tmp)/[\w.-]"
#: an absolute path starting a token (not a URL path: no host, scheme or word right before it)
_PATH_REST = r"[^\s\"'`()\[\]<>,;]*"
_ABSOLUTE = re.compile(r"(?<![\w.~:/\\-])/" + _ROOTS + _PATH_REST)
#: a file URI's path
_FILE_URI = re.compile(r"file://(/" + _ROOTS + _PATH_REST + ")")
#: a relative path starting a token with one or more `../`
_UP = re.compile(r"(?<![\w./\\-])((?:\.\./)+)([\w.*-][\w.*/-]*)?")


def outside_paths(text: str, directory: Path, root: Path, exists=os.path.exists) -> list[str]:
    """The paths in ``text`` (written in a file of ``directory``, inside ``root``) that lead
    outside ``root``, as they are written, in order. A ``../`` path must resolve inside ``root``,
    and its first part below ``root`` must exist there (``exists``) unless it is a pattern."""
    found = [m.group(0) for m in _ABSOLUTE.finditer(text)]
    found += [m.group(1) for m in _FILE_URI.finditer(text)]
    for m in _UP.finditer(text):
        target = os.path.normpath(os.path.join(directory, m.group(0)))
        rel = os.path.relpath(target, root)
        top = rel.split(os.sep)[0]
        if top == ".." or (top != "." and "*" not in top and not exists(os.path.join(root, top))):
            found.append(m.group(0))
    return found


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout
    files = []
    for name in listed.decode("utf-8").split("\0"):
        path = REPO / name
        if name and path.is_file():
            files.append(path)
    return files


def test_no_tracked_file_names_a_path_outside_the_repository():
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    files = _tracked_text_files()
    assert len(files) > 100
    problems = []
    for path in files:
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary
        text = data.decode("utf-8", errors="replace")
        if not (_ABSOLUTE.search(text) or _FILE_URI.search(text) or "../" in text):
            continue  # no match spans lines: nothing to find line by line either
        for number, line in enumerate(text.splitlines(), 1):
            for hit in outside_paths(line, path.parent, REPO):
                problems.append(f"{path.relative_to(REPO)}:{number}: {hit}")
    assert not problems, "paths outside the repository:\n" + "\n".join(problems)


# the cases below are assembled from pieces so that this file itself names no such path
UP, SLASH = "../", "/"


@pytest.mark.parametrize(
    ("text", "where", "hits"),
    [
        (f"see `{UP}shared/design/LANGUAGE.md`", "", [f"{UP}shared/design/LANGUAGE.md"]),
        (f"see `{UP}shared/design/*.md`", "docs", [f"{UP}shared/design/*.md"]),  # no such dir
        (f"source: `{UP}seeds/000.txt`", "docs/spec", []),
        (f'command = "{UP}{UP}.venv/bin/python"', "examples", [f"{UP}{UP}.venv/bin/python"]),
        (f'command = "{UP}{UP}.venv/bin/python"', "examples/mcp", []),  # stays inside
        (f'Path("{SLASH}work/elsewhere/flows")', "tests", [f"{SLASH}work/elsewhere/flows"]),
        (f"uri = 'file://{SLASH}tmp/x/main.flow'", "tests", [f"{SLASH}tmp/x/main.flow"]),
        (f"cd {SLASH}home/someone/src; ls", "", [f"{SLASH}home/someone/src"]),
        (f"{SLASH}dev/null, {SLASH}usr/bin/env, {SLASH}etc/passwd", "", []),
        (f"https://example.org{SLASH}home/index.html and http://h{SLASH}tmp/a", "", []),
        (f'for bad in ("{UP}*", "src/{UP}{UP}*")', "tests/runtime/tools", []),
        (f'"{UP}outside/victim.txt"', "tests/runtime/tools", []),  # a sandbox test's input
        (f"{SLASH}tmp is the temp dir", "", []),
    ],
)
def test_outside_paths_finds_exactly_the_escapes(text, where, hits):
    root = Path("/r")
    top = {"/r/docs", "/r/examples", "/r/tests", "/r/.venv"}
    found = outside_paths(text, root / where if where else root, root, exists=top.__contains__)
    assert found == hits
