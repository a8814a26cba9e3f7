"""A path the file system refuses to look at — a symlink loop (ELOOP, or pathlib's RuntimeError),
a name too long (ENAMETOOLONG) — is the module's own diagnostic or error, never a traceback
(docs/decisions.md "Break-it fixes, stop 44"): an import of one is `import-not-found` in `flowc
check`/`run`/`test`, the language server and `flowc serve` (which leaves that file out and serves
the rest); a file argument of the command line is a one-line usage error, exit 2; an eval's
dataset is its diagnostic. The `import-not-found` hint never suggests the importing file itself,
nor a file an import could not read (a FIFO, a directory, a file over the size limit)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.compiler import imports
from agentflow.compiler.api import check_file
from agentflow.lsp.client import LspClient

LONG = "a" * 300
STAGE = 'stage s -> int { return 1 }\ntest "one" {\n  expect s == 1\n}\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "loopdir").symlink_to("loopdir")
    (tmp_path / "iloop.flow").write_text('import { T } from "./loopdir/x.flow"\n' + STAGE)
    (tmp_path / "ilong.flow").write_text(f'import {{ T }} from "./{LONG}.flow"\n' + STAGE)
    (tmp_path / "nap.flow").write_text('flow nap "n"\n' + STAGE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _flowc(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return done.exit_code, done.output


def test_an_import_through_a_symlink_loop_or_of_too_long_a_name_is_import_not_found(project):
    for file, why in (
        ("iloop.flow", "`./loopdir/x.flow`: Too many levels of symbolic links"),
        ("ilong.flow", f"`./{LONG}.flow`: File name too long"),
    ):
        for command in ("check", "run", "test"):
            code, out = _flowc(command, file)
            assert code == 1, (command, out)
            assert f"error[import-not-found]: cannot import {why}" in out, (command, out)
            assert "Traceback" not in out and "internal error" not in out


def test_a_file_argument_the_file_system_refuses_is_a_one_line_usage_error(project):
    long_flow = f"{LONG}.flow"
    cases = [
        (["run", long_flow], long_flow),
        (["check", long_flow], long_flow),
        (["test", long_flow], long_flow),
        (["compile", long_flow], long_flow),
        (["run", "nap.flow", "--trace", LONG], LONG),
        (["run", "nap.flow", "--config", LONG], LONG),
    ]
    for args, name in cases:
        code, out = _flowc(*args)
        assert code == 2, (args, out)
        assert out.strip().splitlines()[-1].endswith(f"{name}: File name too long"), (args, out)
        assert "Traceback" not in out


def test_serve_leaves_out_a_file_whose_import_is_refused_and_serves_the_rest(project):
    (project / "bad.flow").symlink_to("b" * 300)  # a link to a name too long
    done = subprocess.run(
        [sys.executable, "-m", "agentflow", "serve", "--mcp", str(project)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "flowc serve: 1 tool(s) on stdio: nap" in lines
    assert any(
        line.startswith("flowc serve: iloop.flow: not served: ")
        and line.endswith(
            "iloop.flow:1:19: cannot import `./loopdir/x.flow`: Too many levels of symbolic links"
        )
        for line in lines
    ), lines
    assert any(line.startswith("flowc serve: ilong.flow: not served:") for line in lines)
    assert "flowc serve: bad.flow: not served: File name too long" in lines


def test_the_language_server_publishes_the_import_not_found_of_a_symlink_loop(project):
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0})
    try:
        uri = (project / "iloop.flow").as_uri()
        c.open(uri, (project / "iloop.flow").read_text())
        got = c.wait_notification(
            "textDocument/publishDiagnostics", lambda p: p["uri"] == uri, timeout=30
        )
        assert [d["code"] for d in got["diagnostics"]] == ["import-not-found"]
    finally:
        c.close()


def test_an_eval_dataset_of_too_long_a_name_is_its_diagnostic(project):
    (project / "ev.flow").write_text(
        'input { a: int }\nstage s -> int { return input.a }\neval "e" {\n'
        f'  dataset "{LONG}.jsonl"\n  score ok = output == expected\n}}\n'
    )
    code, out = _flowc("eval", "ev.flow", "--model", "test")
    assert code == 1 and "error[invalid-value]: no dataset file" in out, out
    assert "Traceback" not in out


def _hint(path: Path) -> str | None:
    (diag,) = [d for d in check_file(path).diagnostics if d.code == "import-not-found"]
    return diag.hint


def test_the_not_found_hint_never_suggests_the_importing_file(tmp_path: Path) -> None:
    main_flow = tmp_path / "main.flow"
    main_flow.write_text('import { T } from "./main2.flow"\n' + STAGE)
    assert _hint(main_flow) == "the path is relative to the importing file's directory"
    (tmp_path / "main3.flow").write_text("type T { a: int }\n")
    assert _hint(main_flow) == 'did you mean `"./main3.flow"`?'


def test_the_not_found_hint_suggests_only_a_file_an_import_can_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(imports, "MAX_SOURCE_BYTES", 1000)
    (tmp_path / "big.flow").write_text("type T { a: int }\n" + "// padding\n" * 200)
    (tmp_path / "d.flow").mkdir()
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.flow")
    user = tmp_path / "use.flow"
    for wrong in ("./bigg.flow", "./dd.flow", "./fifoo.flow"):
        user.write_text(f'import {{ T }} from "{wrong}"\n' + STAGE)
        assert _hint(user) == "the path is relative to the importing file's directory", wrong


def test_the_flow_toml_search_from_a_refused_path_finds_none_and_raises_nothing(project):
    from agentflow.core.config_file import find_config

    for near in (f"{LONG}.flow", "loopdir/x.flow", f"{LONG}/x.flow"):
        assert find_config(near) is None, near
    (project / "flow.toml").write_text("")
    assert find_config(f"{LONG}.flow") == Path("flow.toml")  # as the search spells it
