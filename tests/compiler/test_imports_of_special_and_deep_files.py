"""An import never blocks or exhausts memory and never overflows the stack: a FIFO or a link to
a device (`/dev/zero`) is refused before a byte is read, a file over the source size limit is
refused, and imports nested past MAX_IMPORT_DEPTH files are an `import-error` at the import that
goes past it — an outside battery hung `flowc check`, the language server and `flowc serve` on
the first two and got a RecursionError from a 300-file chain (compiler/imports.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentflow.compiler import imports
from agentflow.compiler.api import check_file

USES = 'import {{ T }} from "./{name}"\ninput T\nstage s -> int {{ return input.a }}\n'


def _codes(path: Path) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in check_file(path).diagnostics]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_a_link_to_a_device_is_refused_without_reading_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.flow")
    (tmp_path / "zero.flow").symlink_to("/dev/zero")
    for name in ("fifo.flow", "zero.flow"):
        user = tmp_path / f"use_{name}"
        user.write_text(USES.format(name=name))
        assert _codes(user) == [
            (
                "import-not-found",
                f"cannot import `./{name}`: not a regular file (a program is a `.flow` file)",
            )
        ]
        diag = check_file(user).diagnostics[0]
        assert diag.hint is not None and name not in diag.hint  # no "did you mean" itself
    with pytest.raises(OSError, match="not a regular file"):
        imports.read_source(tmp_path / "zero.flow")


def test_a_file_over_the_source_limit_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(imports, "MAX_SOURCE_BYTES", 1000)
    (tmp_path / "big.flow").write_text("type T { a: int }\n" + "// padding\n" * 200)
    user = tmp_path / "use.flow"
    user.write_text(USES.format(name="big.flow"))
    ((code, message),) = _codes(user)
    assert code == "import-not-found" and "more than a program may have" in message


def test_imports_nested_past_the_limit_are_an_error_not_a_recursion_error(tmp_path: Path) -> None:
    depth = imports.MAX_IMPORT_DEPTH + 10
    (tmp_path / "f0.flow").write_text("type T0 { a: int }\n")
    for i in range(1, depth + 1):
        (tmp_path / f"f{i}.flow").write_text(
            f'import {{ T{i - 1} }} from "./f{i - 1}.flow"\ntype T{i} {{ a: int }}\n'
        )
    main = tmp_path / "main.flow"
    main.write_text(
        f'import {{ T{depth} }} from "./f{depth}.flow"\ninput T{depth}\n'
        "stage s -> int { return 1 }\n"
    )
    ((code, message),) = _codes(main)
    assert code == "import-error"
    # the chain's own error is said once, at the import that goes past the limit
    from agentflow.grammar.parser import parse_module

    importer = imports.Importer()
    module, diags = parse_module(main.read_text(), str(main))
    imports.check_parsed(module, diags, importer)
    deep = [
        (Path(display).name, d.message)
        for display, checked, _text in importer.cache.values()
        if not isinstance(checked, OSError)
        for d in checked.diagnostics
        if "imports deep" in d.message
    ]
    assert deep == [
        (
            f"f{depth - imports.MAX_IMPORT_DEPTH + 2}.flow",
            f"`./f{depth - imports.MAX_IMPORT_DEPTH + 1}.flow` is more than "
            f"{imports.MAX_IMPORT_DEPTH} imports deep (a file that imports a file that imports …)",
        )
    ]
    # a chain within the limit checks clean
    shallow = tmp_path / "shallow.flow"
    shallow.write_text('import { T20 } from "./f20.flow"\ninput T20\nstage s -> int { return 1 }\n')
    assert check_file(shallow).ok
