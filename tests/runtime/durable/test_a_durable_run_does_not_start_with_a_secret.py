"""A durable run never goes on with ``***`` in place of a secret (outside battery, break-it 9):
the plan text and input a durable run records are what ``flowc resume``, ``--reuse`` and
``redrive`` run again, and a secret is never at rest, so a run whose input or ``.flow`` holds
the value of a credential variable is refused before anything is recorded — naming the input
field or the ``.flow`` lines and the variable, never the value — and so is a ``--run-id`` or an
MCP idempotency key holding one (the id is stored in every table and would show as ``***``).
Real durable runs on SQLite in ``tmp_path`` (in-process through click; a real ``flowc serve``
for the MCP key) (docs/durable.md "No secret is stored", docs/decisions.md "A durable run does
not start with a secret in its plan or input")."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from support.npm_tools import free_port, wait_for_port

from agentflow.cli import main
from agentflow.core.redaction import SECRETS
from agentflow.runtime.durable.dbos_engine import shutdown

SECRET = "sk-secretkey-ABCDEFGH123456"
TOOLS = '''\
from pathlib import Path


def send(msg: str) -> int:
    """Not idempotent: each call is a message sent."""
    with Path("side.log").open("a") as f:
        f.write("send " + msg + "\\n")
    return len(msg)
'''
CONFIG = '[tools]\nmodules = ["tools.py"]\n[durable]\ndatabase = ".flowc/durable.sqlite"\n'
Q = """\
input { msg: text }
extern tool user__send(msg: text) -> int
stage a -> int { return user__send(msg: "before ${input.msg}") }
"""
P = f"""\
extern tool user__send(msg: text) -> int
stage a -> int {{ return user__send(msg: "before {SECRET}") }}
stage b -> int {{ return user__send(msg: "plain") }}
stage c -> int {{ return user__send(msg: "after {SECRET}") }}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text(CONFIG)
    (tmp_path / "q.flow").write_text(Q)
    (tmp_path / "p.flow").write_text(P)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PKEY_API_KEY", SECRET)
    monkeypatch.setenv("NO_COLOR", "1")
    yield tmp_path
    SECRETS.clear()


def _cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    shutdown()
    return result


def _stored_runs(root: Path) -> list[str]:
    db = root / ".flowc" / "durable.sqlite"
    if not db.exists():
        return []
    with sqlite3.connect(db) as c:
        return [r[0] for r in c.execute("select workflow_uuid from workflow_status")]


def _sent(root: Path) -> str:
    log = root / "side.log"
    return log.read_text() if log.exists() else ""


def test_a_secret_in_the_input_refuses_the_run_before_anything_is_recorded(project: Path):
    out = _cli("run", "q.flow", "--run-id", "q1", "--input", f'{{"msg": "{SECRET}"}}')
    assert out.exit_code == 1, out.output
    assert "cannot start with a secret in input field `msg`" in out.stderr, out.stderr
    assert "the value of PKEY_API_KEY" in out.stderr and "flowc resume" in out.stderr
    assert SECRET[:8] not in out.output
    assert "q1" not in _stored_runs(project) and _sent(project) == ""  # nothing ran


def test_a_secret_in_the_flow_names_its_lines(project: Path):
    out = _cli("run", "p.flow", "--run-id", "p1")
    assert out.exit_code == 1, out.output
    assert "cannot start with a secret in p.flow lines 2, 4: it holds the value of " in out.stderr
    assert "PKEY_API_KEY" in out.stderr and SECRET[:8] not in out.output
    assert _stored_runs(project) == [] and _sent(project) == ""


def test_reuse_with_a_secret_input_is_refused_and_a_plain_run_still_runs(project: Path):
    plain = _cli("run", "q.flow", "--run-id", "q0", "--input", '{"msg": "hello"}')
    assert plain.exit_code == 0, plain.output
    assert _sent(project) == "send before hello\n"
    out = _cli("run", "q.flow", "--reuse", "q0", "--run-id", "q2", "--input", f'{{"msg": "x{SECRET}"}}')  # fmt: skip
    assert out.exit_code == 1 and "input field `msg`" in out.stderr, out.output
    assert _stored_runs(project) == ["q0"] and _sent(project) == "send before hello\n"


def test_a_run_id_holding_a_secret_is_refused(project: Path):
    out = _cli("run", "--run-id", SECRET, "q.flow", "--input", '{"msg": "m"}')
    assert out.exit_code == 2, out.output
    assert "the run id holds the value of PKEY_API_KEY" in out.stderr, out.stderr
    assert SECRET[:8] not in out.output and _stored_runs(project) == []


async def test_an_mcp_idempotency_key_or_input_holding_a_secret_is_refused(project: Path):
    served = project / "served"
    served.mkdir()
    for name in ("tools.py", "flow.toml", "q.flow"):
        (served / name).write_text((project / name).read_text())
    port = free_port()
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "flowc"), "serve", "--mcp", str(served)]
        + ["--durable", "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, proc, timeout=90)  # a loaded machine: flowc compiles, DBOS starts
        async with (
            streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (r, w),
            ClientSession(r, w) as session,
        ):
            await session.initialize()
            (name,) = [t.name for t in (await session.list_tools()).tools]
            keyed = await session.call_tool(
                name, {"msg": "m"}, meta={"io.agentflow/idempotency-key": SECRET}
            )
            given = await session.call_tool(name, {"msg": SECRET})
    finally:
        proc.terminate()
        proc.wait(10)
    assert (
        keyed.is_error
        and "idempotency key holds the value of PKEY_API_KEY" in keyed.content[0].text
    )
    assert given.is_error and "input field `msg`" in given.content[0].text, given
    assert SECRET[:8] not in str(keyed) + str(given)
    assert _stored_runs(served) == [] and _sent(served) == ""


NAP = """\
input { msg: text }
extern tool user__send(msg: text) -> int
extern tool user__nap(s: int) -> int
stage a -> int { return user__send(msg: "before ${input.msg}") }
stage b -> int { return user__nap(s: 120) }
stage c -> int { return user__send(msg: "after ${input.msg}") }
"""
NAP_PY = """

def nap(s: int) -> int:
    import time

    with Path("side.log").open("a") as f:
        f.write("nap\\n")
    time.sleep(s)
    return s
"""
#: An agentflow without the start's refusal: its record of the run's start loses the secret.
EARLIER = (
    "import sys; import agentflow.runtime.durable.spec as s; s.refuse_secret = lambda spec: None; "
    "from agentflow.cli import main; sys.argv[0] = 'flowc'; main()"
)


def test_a_start_recorded_with_the_secret_blanked_is_never_resumed_reused_or_redriven(
    project: Path,
):
    (project / "tools.py").write_text(TOOLS + NAP_PY)
    (project / "nap.flow").write_text(NAP)
    given = f'{{"msg": "{SECRET}"}}'
    proc = subprocess.Popen(
        [sys.executable, "-c", EARLIER, "run", "nap.flow", "--run-id", "n1", "--input", given],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(1200):  # its first step is recorded: it naps
            if "nap" in _sent(project) or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert "nap" in _sent(project), proc.stderr.read() if proc.poll() is not None else ""
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    resumed = _cli("resume", "n1")
    assert resumed.exit_code == 1, resumed.output
    assert "cannot be resumed: its recorded plan or input held a secret" in resumed.stderr
    redriven = _cli("redrive", "n1")
    assert "run n1 cannot be redriven: its recorded plan or input held a secret" in redriven.stderr
    reused = _cli("run", "nap.flow", "--reuse", "n1", "--run-id", "n2")
    assert "run n1 cannot be reused without --input" in reused.stderr, reused.output
    assert "***" not in _sent(project) and _sent(project).count("send") == 1
    assert sorted(_stored_runs(project)) == ["n1"]


@pytest.mark.parametrize("engine", ["dbos", "temporal"])
def test_both_engines_mark_a_recorded_start_that_lost_a_secret(engine: str):
    from agentflow.runtime.durable.records import JsonRecords, start_lost_secret

    SECRETS.add(SECRET)
    try:
        spec = {"plan_text": "msg: " + SECRET, "input": {}, "workspace": "/w"}
        if engine == "dbos":  # DBOS's workflow input
            codec = JsonRecords()
            back = codec.deserialize(codec.serialize({"args": (spec,), "kwargs": {}}))["args"][0]
            plain = codec.deserialize(codec.serialize({"args": ({**spec, "plan_text": "m"},)}))
            assert not start_lost_secret(plain["args"][0])
        else:  # Temporal's payload of it
            pytest.importorskip("temporalio")
            from agentflow.runtime.durable.temporal_client import _converter_class

            converter = _converter_class()()
            (back,) = converter.from_payloads(converter.to_payloads([spec]))
        assert back["plan_text"] == "msg: ***" and start_lost_secret(back)
    finally:
        SECRETS.clear()


def test_a_credentials_variable_naming_a_file_is_not_a_secret(
    project: Path, monkeypatch: pytest.MonkeyPatch
):
    # GOOGLE_APPLICATION_CREDENTIALS names the file a credential is kept in: its path (the
    # user's home and project directories, which the workspace and inputs share) is no secret,
    # so a durable run under it starts, and its input is recorded as given (regression battery)
    (project / "sa.json").write_text("{}")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(project / "sa.json"))
    where = str(project / "src" / "app")
    out = _cli("run", "q.flow", "--run-id", "g1", "--input", f'{{"msg": "{where}"}}')
    assert out.exit_code == 0, out.output
    assert _sent(project) == f"send before {where}\n"
    assert "g1" in _stored_runs(project)


def test_part_of_a_secret_is_named_as_part_of_it(project: Path):
    out = _cli("run", "q.flow", "--run-id", "q3", "--input", f'{{"msg": "{SECRET[:12]}"}}')
    assert out.exit_code == 1, out.output
    assert "it holds part of the value of PKEY_API_KEY" in out.stderr, out.stderr
    assert SECRET[:8] not in out.output and _stored_runs(project) == []


def test_the_places_of_a_secret_are_said_in_the_users_terms(project: Path):
    from agentflow.core.redaction import register_secret
    from agentflow.runtime.durable.spec import _secret_places

    register_secret(SECRET)
    path = f"projects/{SECRET}/q.flow"
    assert _secret_places("plan_file", path, {}) == ["the .flow file's path"]
    assert _secret_places("workspace", path, {}) == ["the workspace path"]


def test_only_a_credential_value_that_names_an_existing_path_is_left_out(tmp_path: Path):
    from agentflow.core.redaction import register_environment

    (tmp_path / "sa.json").write_text("{}")
    try:
        register_environment(
            {
                "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "sa.json"),  # a file: kept
                "OTHER_CREDENTIALS": str(tmp_path / "gone.json"),  # no such file: a secret
                "PKEY_API_KEY": SECRET,
            }
        )
        assert str(tmp_path / "sa.json") not in SECRETS
        assert str(tmp_path / "gone.json") in SECRETS and SECRET in SECRETS
    finally:
        SECRETS.clear()
