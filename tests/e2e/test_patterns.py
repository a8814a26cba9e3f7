"""Acceptance (issue 27, part 5): the canonical agent-workflow patterns of examples/patterns/ —
every ``*.flow`` there, picked up by name — run three ways: their ``test`` blocks (``flowc
test``), the built-in test model (``flowc run --model test``) and their recorded cassette
(``flowc run --replay NAME.cassette.jsonl``, recorded by scripts/record_pattern_cassettes.py
against the scripted loopback server of tests/support/pattern_script.py). Each mode runs
in-process through ``agentflow.api`` for every pattern, and once through the ``flowc`` command
as a smoke test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.patterns import CONFIG, PATTERNS_DIR, cassette, pattern_input, patterns

from agentflow import api
from agentflow.compiler.api import check_source
from agentflow.runtime.config import load_config

PATTERNS = patterns()
IDS = [p.stem for p in PATTERNS]

#: what the recorded run of a pattern gives (the scripted server's answers, replayed)
REPLAYED = {
    "prompt-chaining": lambda out: (
        out["title"] == "[French] flowc 1.0 for developers"
        and out["body"].count("in one paragraph") == 3
    ),
    "routing": lambda out: out["answer"].startswith("The duplicate charge is refunded"),
    "parallel-sectioning": lambda out: (
        out["blockers"] == 1
        and [s["aspect"] for s in out["sections"]] == ["security", "performance", "readability"]
    ),
    "parallel-voting": lambda out: out["vulnerable"] and out["yes"] == 3,
    "orchestrator-workers": lambda out: out["done"] == 2 and out["summary"].startswith("2 parts"),
}


def _env() -> dict[str, str]:
    """The environment of a `flowc` subprocess: no provider key, no network needed."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}


def _flowc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentflow", *args],
        cwd=PATTERNS_DIR,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_five_canonical_patterns_are_there():
    names = set(IDS)
    for pattern in (
        "prompt-chaining",
        "routing",
        "parallel-sectioning",
        "parallel-voting",
        "orchestrator-workers",
    ):
        assert pattern in names


@pytest.mark.parametrize("flow", PATTERNS, ids=IDS)
def test_a_pattern_checks_clean(flow: Path):
    text = flow.read_text(encoding="utf-8")
    assert check_source(text, flow.name).diagnostics == []


def test_every_pattern_has_passing_test_blocks():
    report = api.run_tests(PATTERNS_DIR)
    assert report.failed == 0, [(o.file, o.name, o.failures) for o in report.outcomes]
    tested = {Path(o.file).stem for o in report.outcomes if o.passed}
    assert tested == set(IDS), f"patterns without a passing test: {set(IDS) - tested}"


@pytest.mark.parametrize("flow", PATTERNS, ids=IDS)
async def test_a_pattern_runs_with_the_test_model(flow: Path):
    result = await api.run(
        flow,
        pattern_input(flow),
        config=load_config(CONFIG, env={}),
        workspace=PATTERNS_DIR,
        model="test",
        shape_cache=False,
    )
    assert result.status == "ok", result.error
    assert result.usage["inferences"] >= 1


@pytest.mark.parametrize("flow", PATTERNS, ids=IDS)
async def test_a_pattern_replays_its_recorded_cassette(flow: Path):
    tape = cassette(flow)
    assert tape.is_file(), (
        f"{tape.name} is missing: record it with "
        f".venv/bin/python scripts/record_pattern_cassettes.py {flow.name}"
    )
    result = await api.run(
        flow,
        pattern_input(flow),
        config=load_config(CONFIG, env={}),
        workspace=PATTERNS_DIR,
        replay=tape,
        shape_cache=False,
    )
    assert result.status == "ok", result.error
    # every recorded exchange is used: the run is the recorded one
    recorded = len(tape.read_text(encoding="utf-8").splitlines())
    assert result.usage["inferences"] == recorded
    check = REPLAYED.get(flow.stem)
    if check is not None:
        assert check(result.output), result.output


def test_flowc_runs_the_patterns_in_each_mode():
    """One subprocess per mode: `flowc test`, `flowc run --model test`, `flowc run --replay`."""
    flow = PATTERNS_DIR / "routing.flow"
    tested = _flowc("test", "--no-cache", flow.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert tested.stdout.strip().splitlines()[-1] == "3 passed, 0 failed"

    data = json.dumps(pattern_input(flow))
    model = _flowc("run", flow.name, "--input", data, "--model", "test", "--json")
    assert model.returncode == 0, model.stderr
    assert json.loads(model.stdout)["status"] == "ok"

    replayed = _flowc("run", flow.name, "--input", data, "--replay", cassette(flow).name, "--json")
    assert replayed.returncode == 0, replayed.stderr
    out = json.loads(replayed.stdout)
    assert out["status"] == "ok" and REPLAYED["routing"](out["output"])
