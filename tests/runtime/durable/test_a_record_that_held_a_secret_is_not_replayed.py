"""A recorded result that held a secret is stored redacted (no secret at rest) and marked so;
a resumed run never feeds its ``***`` forward: an idempotent operation runs again, a
non-idempotent one (or any on an engine that cannot run outside its history) is refused with
``durable_replay_mismatch``, and ``--reuse`` takes it from nobody (docs/decisions.md "A record
that held a secret is not replayed").  DBOS: a real ``flowc run --durable`` killed with SIGKILL
in the step after the one that returned the secret, then ``flowc resume`` and ``flowc run
--reuse`` (in this process); Temporal: the first run's later steps see the value the tool
returned, not the payload's ``***``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.durable_questions import recorded_operations, start_flowc

import agentflow
from agentflow.cli import main
from agentflow.core.redaction import SECRETS
from agentflow.core.vocabulary import Code
from agentflow.errors import RunError
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.runtime.durable.engine import DurableEffects
from agentflow.runtime.durable.records import REDACTED, JsonRecords

SECRET = "tok-REPLAYED-7Hq2Wm9Zr4Lx1Pv8-end"

FLOW = """\
extern tool user__token() -> text
extern tool user__gate(said: text) -> bool
stage s -> bool {
  let said = user__token()
  return user__gate(said: said)
}
"""

TOOLS = """\
import os, time
from pathlib import Path


def _log(line: str) -> None:
    with open(os.environ["CALL_LOG"], "a") as f:
        f.write(line + "\\n")


def token() -> str:
    \"\"\"The service's key, as a tool that prints configuration might return it.\"\"\"
    _log("token")
    return "key=" + os.environ["SVC_TOKEN"]


def gate(said: str) -> bool:
    \"\"\"Whether the step before gave the real key; hangs the first time (killed there).\"\"\"
    _log("gate")
    marker = Path(os.environ["CALL_LOG"]).with_name("hung")
    if not marker.exists():
        marker.write_text("")
        time.sleep(60)
    return said == "key=" + os.environ["SVC_TOKEN"]
"""


def _calls(project: Path) -> list[str]:
    return (project / "calls.log").read_text().split()


def test_a_resumed_run_runs_the_step_whose_record_held_a_secret_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "k.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SVC_TOKEN", SECRET)  # a credential's name: registered by flowc
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("NO_COLOR", "1")
    proc = start_flowc(tmp_path, "run", "--durable", "--run-id", "k1", "k.flow", env=None)
    try:  # the token's record committed and the gate running: kill
        deadline = time.monotonic() + 120
        while not (
            any("tool:user__token" in n for n in recorded_operations(tmp_path))
            and (tmp_path / "hung").exists()
        ):
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "the run never reached its gate"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    with sqlite3.connect(tmp_path / ".flowc" / "durable.sqlite") as conn:
        stored = [r[0] for r in conn.execute("select output from agentflow_items") if r[0]]
    token = [json.loads(s) for s in stored if "key=" in s]
    assert token and token[0]["v"] == "key=***" and token[0][REDACTED] is True  # not at rest
    assert all(SECRET[4:20] not in s for s in stored)

    resumed = CliRunner().invoke(main, ["resume", "k1"])
    shutdown()
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout) is True  # the gate saw the key, not `***`
    assert _calls(tmp_path) == ["token", "gate", "token", "gate"]  # the token ran again

    reused = CliRunner().invoke(main, ["run", "--durable", "--reuse", "k1", "k.flow"])
    shutdown()
    assert reused.exit_code == 0, reused.output
    assert json.loads(reused.stdout) is True
    assert _calls(tmp_path) == ["token", "gate", "token", "gate", "token"]  # not reused


class _Engine:
    def __init__(self, reruns: bool) -> None:
        self.reruns_unrecorded = reruns

    def workflow_id(self) -> str:
        return "r9/unit"


@pytest.mark.parametrize(
    "idempotent, reruns, why",
    [(False, True, "`user__pay` is not idempotent"), (True, False, "replays its history")],
)
def test_a_record_that_lost_a_secret_is_refused_where_it_cannot_run_again(
    idempotent: bool, reruns: bool, why: str
) -> None:
    effects = DurableEffects.__new__(DurableEffects)
    effects.engine = _Engine(reruns)  # type: ignore[assignment]

    async def never() -> str:
        raise AssertionError("run again")

    record = {"d": "x", "v": "paid ***", REDACTED: True}
    with pytest.raises(RunError) as caught:
        asyncio.run(effects._again("E0/tool:user__pay#1", never, record, idempotent=idempotent))
    assert caught.value.code == Code.DURABLE_REPLAY_MISMATCH
    message = caught.value.message
    assert "run r9 cannot be resumed: the recorded result of `user__pay` held a secret" in message
    assert why in message and "`flowc redrive` the run" in message


def test_only_an_operation_record_that_lost_a_secret_is_marked() -> None:
    SECRETS.add(SECRET)
    records = JsonRecords()
    assert json.loads(records.serialize({"d": "x", "v": "k " + SECRET})) == {
        "d": "x", "v": "k ***", REDACTED: True,
    }  # fmt: skip
    assert json.loads(records.serialize({"v": {"d": "x", "v": [SECRET]}})) == {
        "v": {"d": "x", "v": ["***"], REDACTED: True}
    }  # Temporal's payload of one
    assert json.loads(records.serialize({"d": "x", "v": "plain"})) == {"d": "x", "v": "plain"}
    assert json.loads(records.serialize({"input": SECRET})) == {"input": "***"}  # not a record


CONFIG_TEMPORAL = """\
[tools]
modules = ["tools.py"]

[models]
default = "nm"

[models.named.nm]
provider = "local"
model = "m"

[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "SVC_TOKEN"

[durable]
engine = "temporal"
address = "{address}"
task_queue = "{queue}"
"""


def test_on_temporal_the_first_runs_later_steps_see_the_value_not_the_payloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temporal_server
) -> None:
    (tmp_path / "k.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "hung").write_text("")  # the gate does not hang
    (tmp_path / "flow.toml").write_text(
        CONFIG_TEMPORAL.format(address=temporal_server.address, queue=f"sec-{tmp_path.name}")
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SVC_TOKEN", SECRET)  # the provider's key: registered by the config
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "calls.log"))
    result = asyncio.run(
        agentflow.run(
            tmp_path / "k.flow", None, config=tmp_path / "flow.toml", durable=True, run_id="kt"
        )
    )
    assert result.status == "ok", result.error
    assert result.output is True  # the gate got the key (it got `key=***` from the payload)
    assert _calls(tmp_path) == ["token", "gate"]
    assert os.environ["SVC_TOKEN"] == SECRET
