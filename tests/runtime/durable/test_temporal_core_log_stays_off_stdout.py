"""The Temporal SDK core's own log (Rust warnings such as "Activity not found on completion")
goes through the ``temporalio.core`` logger to ``.flowc/temporal.log``, never to the terminal:
the SDK's default runtime printed it on stdout, inside ``flowc run --json``'s output, which then
was not JSON (CI; runtime/durable/temporal_client.quiet_runtime)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("temporalio")

from agentflow.runtime.durable import temporal_client as tc  # noqa: E402


def test_the_core_log_is_forwarded_to_a_file_not_the_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tc, "_RUNTIME", [])
    logger = logging.getLogger("temporalio.core")
    monkeypatch.setattr(logger, "handlers", [])
    runtime = tc.quiet_runtime()
    assert tc.quiet_runtime() is runtime  # one per process
    assert logger.propagate is False
    # what the core forwards arrives as records of that logger (named for its Rust target)
    logging.getLogger("temporalio.core.temporalio_sdk_core::worker").warning(
        "Activity not found on completion"
    )
    for handler in logger.handlers:
        handler.flush()
    assert "Activity not found on completion" in (tmp_path / ".flowc" / "temporal.log").read_text()
    out, err = capfd.readouterr()
    assert "Activity not found" not in out + err


async def test_every_client_connects_with_that_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    from temporalio.client import Client

    from agentflow.errors import ConfigError

    seen: dict = {}

    async def connect(*args, **kwargs):
        seen.update(kwargs)
        raise OSError("no server here")

    monkeypatch.setattr(Client, "connect", connect)
    with pytest.raises(ConfigError, match="cannot reach the Temporal server"):
        await tc.client_for("temporal://127.0.0.1:9/default")
    assert seen["runtime"] is tc.quiet_runtime()
