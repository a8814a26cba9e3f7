"""An `ask` answer holding the value of a configured secret is refused where it is given —
`flowc answer` (exit 1, the question keeps waiting), the terminal (asked again), the run
itself for an answerer that did not know the secret — never taken and later read back as
`***` (docs/reference/control.md "ask", docs/decisions.md "A secret in an answer")."""

from __future__ import annotations

import asyncio
import io
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.durable_questions import start_flowc, wait_asked

from agentflow import api
from agentflow.cli import main
from agentflow.core.redaction import SECRETS
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.runtime.hooks import AskRequest, Hooks, terminal_interlocutor

KEY = "vault-9f3c2a7e5b1d4086"
FLOW = """\
stage login -> text {
  let token = ask "Which token?" expect text
  return "got ${token}"
}
"""
CONFIG = '[providers.vault]\nkind = "openai"\napi_key_env = "VAULT_KEY"\n'


@pytest.fixture(autouse=True)
def _forget_secrets():
    yield
    SECRETS.clear()


def _cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    shutdown()
    return result


def test_flowc_answer_refuses_a_secret_and_the_resumed_run_takes_the_next_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "login.flow").write_text(FLOW)
    (tmp_path / "flow.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VAULT_KEY", KEY)
    monkeypatch.setenv("NO_COLOR", "1")
    proc = start_flowc(tmp_path, "run", "--durable", "--run-id", "s1", "login.flow")
    try:
        wait_asked(tmp_path / ".flowc" / "durable.sqlite", "s1", proc)
    finally:
        proc.send_signal(signal.SIGKILL)  # killed as it waits: the run is stopped
        proc.communicate()

    refused = _cli("answer", "s1", "token", f"use {KEY[:12]} please")  # 8+ characters of it
    assert refused.exit_code == 1, refused.output
    assert "answer to `Which token?` refused: it holds the value of a configured secret" in (
        refused.stderr
    )
    assert KEY[:8] not in refused.output
    waiting = _cli("runs", "show", "s1")
    assert "waiting: ? [login › token = ask · E0] Which token?" in waiting.stdout  # still asked

    assert _cli("answer", "s1", "token", "from-the-vault").exit_code == 0
    resumed = _cli("resume", "s1")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout == '"got from-the-vault"\n'
    database = (tmp_path / ".flowc" / "durable.sqlite").read_bytes()
    assert KEY[:8].encode() not in database


def test_a_run_refuses_an_answer_with_a_secret_its_answerer_did_not_know(tmp_path: Path) -> None:
    SECRETS.add(KEY)
    (tmp_path / "login.flow").write_text(FLOW)
    hooks = Hooks(interlocutor=lambda request: f"token {KEY}")
    result = api.run_sync(tmp_path / "login.flow", {}, hooks=hooks, shape_cache=False)
    assert result.status == "error" and result.error["code"] == "output_validation"
    assert "holds the value of a configured secret" in result.error["message"]
    assert KEY[:8] not in str(result.to_dict())


def test_the_terminal_asks_again_after_an_answer_with_a_secret() -> None:
    SECRETS.add(KEY)
    out = io.StringIO()
    ask = terminal_interlocutor(io.StringIO(f"{KEY}\nfine\n"), out)
    request = AskRequest("Which token?", {"type": "string"}, None, "E0", [], None)
    assert asyncio.run(ask(request)) == "fine"
    assert "not accepted: it holds the value of a configured secret" in out.getvalue()
    assert KEY[:8] not in out.getvalue()
