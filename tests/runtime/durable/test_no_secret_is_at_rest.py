"""No secret is at rest (round 41): a Python tool whose result, or whose exception's message,
holds the configured provider's API key (``api_key_env``) leaves no run of 8 characters of the
key in any file of ``.flowc/`` — the records are redacted before they are written
(records.py ``JsonRecords.serialize``, which both engines use) — and ``flowc runs show`` (text and
``--json``) prints none, whether the reader's environment has the key's variable or not.  A key
the writing process did not know (an older database, another process's secret) is still kept
out of what ``runs show`` prints when the reading process knows it (the second guard).  A real
durable run on SQLite in ``tmp_path``, in this process; ``flowc runs show`` through click."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import agentflow
from agentflow.cli import main
from agentflow.core.redaction import MIN_RUN, SECRETS
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.runtime.durable.records import JsonRecords

KEY = "sk-test-ATREST-9fQ2Lm7Vx3Rt8Wp1-end"
#: A credential-named variable the writer never loads (no configuration names it).
OTHER = "tok-READER-ONLY-4hJ8kP2sN6qW0zX5"


def leaks(text: str, secret: str = KEY) -> list[str]:
    """The runs of MIN_RUN characters of ``secret`` found in ``text``."""
    runs = {secret[i : i + MIN_RUN] for i in range(len(secret) - MIN_RUN + 1)}
    return sorted(r for r in runs if r in text)


FLOW = """\
flow sec "Secrets"
extern tool user__weird(kind: text) -> text

stage a -> text { return user__weird(kind: "secret") }
stage c -> text { return user__weird(kind: "raise") }
"""

TOOLS = '''\
import os


def weird(kind: str) -> str:
    """Echo the key, or fail with it."""
    if kind == "secret":
        return "key=" + os.environ["LOCAL_KEY"]
    raise RuntimeError(
        "boom key " + os.environ["LOCAL_KEY"] + " other " + os.environ["READER_TOKEN"]
    )
'''

CONFIG = """\
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
api_key_env = "LOCAL_KEY"
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("atrest")
    (root / "sec.flow").write_text(FLOW)
    (root / "tools.py").write_text(TOOLS)
    (root / "flow.toml").write_text(CONFIG)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.setenv("LOCAL_KEY", KEY)
        mp.setenv("READER_TOKEN", OTHER)
        try:
            result = asyncio.run(
                agentflow.run(
                    root / "sec.flow",
                    None,
                    config=root / "flow.toml",
                    durable=True,
                    run_id="sec1",
                )
            )
        finally:
            shutdown()
            SECRETS.clear()
    assert result.status == "error", result
    assert "boom key" in json.dumps(result.to_dict())
    return root


def _show(project: Path, *args: str) -> str:
    shown = CliRunner().invoke(main, ["runs", "show", "sec1", *args])
    assert shown.exit_code == 0, shown.output
    return shown.stdout + shown.stderr


def test_no_file_of_the_durable_database_holds_the_key(project: Path) -> None:
    files = [p for p in (project / ".flowc").rglob("*") if p.is_file()]
    assert any(p.name == "durable.sqlite" for p in files), files
    for path in files:
        data = path.read_bytes().decode("latin-1")
        assert leaks(data) == [], path
    # what was recorded is the redacted text, still readable
    assert any(b"boom key ***" in p.read_bytes() for p in files)  # the file or its WAL


@pytest.mark.parametrize("with_variable", [True, False], ids=["reader-has-key", "reader-has-not"])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_runs_show_prints_no_key(
    project: Path, monkeypatch: pytest.MonkeyPatch, with_variable: bool, as_json: bool
) -> None:
    monkeypatch.chdir(project)
    monkeypatch.setenv("NO_COLOR", "1")
    if with_variable:
        monkeypatch.setenv("LOCAL_KEY", KEY)
    else:
        monkeypatch.delenv("LOCAL_KEY", raising=False)
    monkeypatch.setenv("READER_TOKEN", OTHER)  # credential-named: the reader registers it
    out = _show(project, *(["--json"] if as_json else []))
    assert leaks(out) == [], out
    # the writer did not know READER_TOKEN (not in the configuration): its value is in the
    # record, and the reader's own redaction keeps it out of what is printed
    assert leaks(out, OTHER) == [], out
    if as_json:
        info = json.loads(out[out.index("{") :])
        assert "boom key ***" in info["error"]["message"]
    else:
        assert "error[tool_error] at step c: " in out or "error[tool_error]" in out, out
        assert "boom key *** other ***" in out, out


def test_records_redact_every_string_before_they_are_written() -> None:
    SECRETS.add(KEY)
    records = JsonRecords()
    error = RuntimeError("failed with " + KEY, {"header": "Bearer " + KEY})
    value = {"out": ("key", KEY[:20]), "error": error, KEY: 1.5, "n": float("inf")}
    text = records.serialize(value)
    assert leaks(text) == [], text
    json.loads(text)  # still JSON
    back = records.deserialize(text)
    assert str(back["error"]) == str(("failed with ***", {"header": "Bearer ***"}))
    assert back["out"] == ("key", "***") and back["***"] == 1.5 and back["n"] == float("inf")
    # nothing to redact: the same text as before the redaction was added
    assert records.serialize({"a": "plain"}) == '{"a":"plain"}'


def test_temporal_payloads_are_the_redacted_records() -> None:
    pytest.importorskip("temporalio")
    from agentflow.runtime.durable.temporal_client import _converter_class

    SECRETS.add(KEY)
    converter = _converter_class()()
    (payload,) = converter.to_payloads([{"e": RuntimeError("key " + KEY)}])
    assert leaks(payload.data.decode("ascii")) == []
    (back,) = converter.from_payloads([payload])
    assert str(back["e"]) == "key ***"


def test_on_temporal_no_history_holds_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temporal_server
) -> None:
    from agentflow import api
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable.runs import database_for

    (tmp_path / "sec.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text(
        CONFIG + f'\n[durable]\nengine = "temporal"\naddress = "{temporal_server.address}"\n'
        f'task_queue = "sec-{tmp_path.name}"\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("LOCAL_KEY", KEY)
    monkeypatch.setenv("READER_TOKEN", OTHER)
    result = asyncio.run(
        agentflow.run(
            tmp_path / "sec.flow", None, config=tmp_path / "flow.toml",
            durable=True, run_id="sec-t",
        )
    )  # fmt: skip
    assert result.status == "error", result
    url = database_for(load_config(tmp_path / "flow.toml"))
    SECRETS.clear()  # read back what the histories hold, with nothing redacted on the way out
    info = asyncio.run(api.show_durable_run(url, "sec-t", values=True, internals=True))
    stored = json.dumps(info.to_dict(), default=str)
    assert "boom key ***" in stored, stored
    assert leaks(stored) == [], stored
    for args in ([], ["--json"]):
        shown = CliRunner().invoke(main, ["runs", "show", "sec-t", *args])
        assert shown.exit_code == 0, shown.output
        assert leaks(shown.stdout) == [] and leaks(shown.stdout, OTHER) == [], shown.stdout
