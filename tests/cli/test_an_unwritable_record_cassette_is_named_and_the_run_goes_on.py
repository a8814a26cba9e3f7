"""`flowc run --record FILE` whose FILE cannot be written mid-run (`/dev/full`: no space left
on device) says so naming the cassette, as a failing `--trace` file is said, and the run goes
on: its result prints and the exit status is the run's. It used to end with the CLI's generic
"cannot write the output: No space left on device", as if stdout had failed, and no result.

Root cause: the cassette writer's ``OSError`` (runtime/models/cassette.py) rose from inside the
model call through the whole run to the CLI's last-resort handler for the output's own
errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.chat_server import answer
from support.local_provider import run_against

FLOW = """use agent "helper" as helper
type R { s: text }
stage one -> R {
  return agent(helper) {
    task "Answer"
    tools none
    expect R
  }
}
"""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_full_cassette_is_named_and_the_result_still_prints(tmp_path, as_json):
    (tmp_path / "a.flow").write_text(FLOW, encoding="utf-8")
    res = run_against(
        tmp_path,
        lambda request: answer({"s": "fine"}),
        *("run", "a.flow", "--record", "/dev/full", *(["--json"] * as_json)),
    )
    assert res.returncode == 0, res.stderr
    assert "cannot write the output" not in res.stderr, res.stderr
    assert "the --record cassette '/dev/full' cannot be written" in res.stderr, res.stderr
    assert "records no more model exchanges" in res.stderr, res.stderr
    shown = json.loads(res.stdout)
    assert (shown["output"] if as_json else shown) == {"s": "fine"}, res.stdout
