"""Tutorial page 3, "Run it with a model" (issue 36 item 1): ``OPENAI_BASE_URL`` and
``OPENAI_MODEL`` reach the tutorial's runs, and a model server that cannot be reached is named
by its URL and the setting the URL came from (docs/decisions.md "Where a provider's URL comes
from"). The installed ``flowc`` in a copy of ``docs/tutorial``, against a real loopback server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from support.chat_server import TEST_API_KEY, ChatServer
from support.markdown import ROOT
from support.tutorial_script import TutorialScript

FLOWC = Path(sys.executable).parent / "flowc"
TRIAGE = ["run", "triage.flow", "--input", '{"dir": "project"}']


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.pop("PYTHONPATH", None)
    return {**env, **extra}


def _tutorial(tmp_path: Path) -> Path:
    work = tmp_path / "tutorial"
    shutil.copytree(ROOT / "docs" / "tutorial", work)
    return work


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _flowc(work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FLOWC), *TRIAGE], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )


def test_tutorial_triage_runs_against_the_server_OPENAI_BASE_URL_names(tmp_path):
    work = _tutorial(tmp_path)
    with ChatServer(TutorialScript()) as server:
        env = _env(
            OPENAI_BASE_URL=server.url, OPENAI_MODEL="tutorial-model", OPENAI_API_KEY=TEST_API_KEY
        )
        done = _flowc(work, env)
        assert done.returncode == 0, done.stderr
        assert len(server.requests) == 1
        assert server.requests[0]["model"] == "tutorial-model"
    assert '"first"' in done.stdout


def _flowc_here(work: Path, monkeypatch, **env: str) -> str:
    """``flowc run`` of the tutorial's triage in-process (no interpreter to start), in ``work``,
    with no OPENAI_*/ANTHROPIC_* variables but ``env``; its stderr, on one line."""
    from click.testing import CliRunner

    from agentflow.cli import main

    monkeypatch.chdir(work)
    for name in [k for k in os.environ if k.startswith(("OPENAI_", "ANTHROPIC_"))]:
        monkeypatch.delenv(name)
    done = CliRunner().invoke(main, TRIAGE, env=env)
    assert done.exit_code == 1, done.output
    return " ".join(done.stderr.split())


def test_connection_error_names_the_url_and_the_environment_variable(tmp_path, monkeypatch):
    work = _tutorial(tmp_path)
    # a declared provider without base_url takes OPENAI_BASE_URL too; no retries keeps it quick
    (work / "flow.toml").write_text(
        '[providers.openai]\nkind = "openai"\nmax_retries = 0\n', encoding="utf-8"
    )
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    stderr = _flowc_here(work, monkeypatch, OPENAI_BASE_URL=url, OPENAI_API_KEY=TEST_API_KEY)
    assert (
        f"[POST {url}/chat/completions; the URL is from environment variable OPENAI_BASE_URL]"
        in stderr
    ), stderr


def test_connection_error_names_the_url_and_the_flow_toml_line_that_wins(tmp_path, monkeypatch):
    work = _tutorial(tmp_path)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    (work / "flow.toml").write_text(
        f'[models]\ndefault = "local:m"\n\n[providers.local]\nkind = "openai"\n'
        f'base_url = "{url}"\nmax_retries = 0\n',
        encoding="utf-8",
    )
    stderr = _flowc_here(work, monkeypatch, OPENAI_BASE_URL="http://127.0.0.1:1/v1")
    where = (work / "flow.toml").resolve()
    assert (
        f"[POST {url}/chat/completions; the URL is from base_url at {where}:6:1 (it takes "
        "precedence over the environment variable OPENAI_BASE_URL, also set)]"
    ) in stderr, stderr
