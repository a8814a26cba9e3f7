"""The editors' syntax files come from the language's one vocabulary, and the VS Code extension
builds into an installable .vsix (docs/editors.md).

- `editors/generate.py` regenerates the TextMate grammar and the Vim syntax: the committed files
  must be exactly what it writes (a keyword added to `core/vocabulary.py` fails here until they
  are written again);
- `vscode-tmgrammar-test` (the real TextMate engine VS Code uses) passes on the annotated
  samples, which pin the scope of every keyword in keyword position, of keywords used as names,
  and of the other constructs;
- `scripts/build-vsix.sh` packages the extension with `@vscode/vsce`: the manifest, grammar,
  client entry point, its client library, the licence and the icon are in it, and `code
  --install-extension` installs it when a VS Code binary is on PATH.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.paths import REPO

from agentflow.core import vocabulary as V

EDITORS = REPO / "editors"
VSCODE = EDITORS / "vscode"
SAMPLES = sorted((VSCODE / "tests").glob("*.flow"))
sys.path.insert(0, str(EDITORS))
import generate  # noqa: E402  (editors/generate.py)


def _tool(name: str) -> Path:
    path = VSCODE / "node_modules" / ".bin" / name
    if not path.exists():
        pytest.fail(f"{path.relative_to(REPO)} is missing: run `bash scripts/vscode-tools.sh`")
    return path


def test_syntax_files_are_what_the_vocabulary_generates():
    for path, text in generate.rendered().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(REPO)} differs from the vocabulary: run python editors/generate.py"
        )


def test_every_keyword_has_one_scope_and_a_new_one_would_get_one():
    groups = generate.keyword_groups()
    placed = [w for words in groups.values() for w in words]
    assert sorted(placed) == sorted(V.KEYWORDS)  # each once
    assert {"agent", "parallel", "map", "require", "else", "fail"} <= set(placed)


def test_the_samples_pin_every_keyword_in_keyword_position():
    pinned: set[str] = set()
    for sample in SAMPLES:
        lines = sample.read_text(encoding="utf-8").splitlines()
        source = ""
        for line in lines[1:]:
            m = re.match(r"//( *)(\^+) (\S+)$|// <(-+) (\S+)$", line)
            if not m:
                source = line
                continue
            col, width, scope = (
                (len(m.group(1)) + 2, len(m.group(2)), m.group(3))
                if m.group(2)
                else (0, len(m.group(4)), m.group(5))
            )
            if scope in groups_scopes():
                pinned.add(source[col : col + width])
    assert sorted(V.KEYWORDS - pinned) == []


def groups_scopes() -> set[str]:
    return set(generate.keyword_groups())


def test_tmgrammar_test_passes_on_the_annotated_samples():
    done = subprocess.run(
        [str(_tool("vscode-tmgrammar-test")), *[str(s.relative_to(VSCODE)) for s in SAMPLES]],
        cwd=VSCODE, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("run successfuly") == len(SAMPLES) >= 2


def test_tmgrammar_test_catches_a_wrong_scope(tmp_path):
    """The check is real: a sample expecting another scope for `agent` fails."""
    broken = tmp_path / "broken.flow"
    text = (VSCODE / "tests" / "every-keyword.flow").read_text(encoding="utf-8")
    broken.write_text(text.replace("keyword.other.agent.flow", "keyword.other.agentX.flow"))
    done = subprocess.run(
        [str(_tool("vscode-tmgrammar-test")), "-g", "syntaxes/flow.tmLanguage.json", str(broken)],
        cwd=VSCODE, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "missing required scopes: keyword.other.agentX.flow" in done.stdout


def test_the_vsix_holds_manifest_grammar_client_licence_and_icon(tmp_path):
    _tool("vsce")
    out = tmp_path / "agentflow-flow.vsix"
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-vsix.sh"), str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(out) as vsix:
        names = set(vsix.namelist())
        manifest = json.loads(vsix.read("extension/package.json"))
        grammar = vsix.read("extension/syntaxes/flow.tmLanguage.json").decode()
    assert {
        "extension.vsixmanifest",
        "extension/src/extension.js",
        "extension/language-configuration.json",
        "extension/LICENSE.txt",
        "extension/images/icon.png",
        "extension/node_modules/vscode-languageclient/node.js",
    } <= names
    assert not any(n.startswith("extension/tests/") for n in names)
    assert manifest["main"] == "./src/extension.js"
    assert manifest["repository"]["url"] and manifest["icon"] == "images/icon.png"
    assert manifest["contributes"]["grammars"][0]["scopeName"] == "source.flow"
    assert grammar == (VSCODE / "syntaxes" / "flow.tmLanguage.json").read_text(encoding="utf-8")
    code = shutil.which("code")
    if code is not None:  # a VS Code binary: install it for real
        done = subprocess.run(
            [code, "--install-extension", str(out), "--force"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
