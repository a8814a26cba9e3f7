"""``flowc runs show RUN`` lists the run's own steps in the `.flow`'s terms (stage, ``let`` name,
map item, tool), each with its status, start and duration; the durable engine's bookkeeping
(``DBOS.setEvent``, ``DBOS.recv``, ``DBOS.sleep`` of a question's wait) is left out and counted,
and listed with ``--all``.  A question nobody answered shows as a step of its own.  (A real
durable run on SQLite in ``tmp_path``, in this process; ``flowc runs show`` through click.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import agentflow
from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.runtime.durable.runs import show_run

FLOW = """\
flow tally "Tally"
input { xs: int[] }

stage prep -> int[] {
  let first = user__note(n: 1)
  let go = ask "Go on?" expect bool default true
  return parallel map input.xs as x limit 2 {
    return user__note(n: x)
  }
}

stage after -> int[] {
  let last = user__note(n: 5)
  return prep
}
"""

TOOLS = '''\
def note(n: int) -> int:
    """Ten times n."""
    return 10 * n
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "tally.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text(
        '[tools]\nmodules = ["tools.py"]\n\n[durable]\nask_timeout = "300ms"\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    result = asyncio.run(
        agentflow.run(
            tmp_path / "tally.flow",
            {"xs": [1, 2]},
            config=tmp_path / "flow.toml",
            durable=True,
            run_id="tally-1",
        )
    )
    assert result.status == "ok", result.error
    assert result.output == [10, 20]
    yield tmp_path
    shutdown()


def _show(*args: str) -> str:
    shown = CliRunner().invoke(main, ["runs", "show", "tally-1", *args])
    assert shown.exit_code == 0, shown.output
    return shown.stdout


def test_runs_show_names_each_step_as_the_flow_does_with_its_time(project: Path) -> None:
    text = _show()
    lines = text.splitlines()
    steps = lines[lines.index(next(ln for ln in lines if ln.startswith("steps:"))) + 1 :]
    whats = [ln.split(None, 3)[3] for ln in steps]
    assert whats == [
        "prep › first = user__note",
        "prep › go = ask",
        "prep › item 0 › user__note",
        "prep › item 1 › user__note",
        "after › last = user__note",  # in time order: after the map's items, run in their units
    ], text
    assert [ln.split()[0] for ln in steps] == ["done", "unanswered", "done", "done", "done"]
    assert all(ln.split()[2].endswith("s") for ln in steps if ln.split()[0] == "done"), text
    # the engine's own operations of the question's wait are counted, not listed
    assert "DBOS." not in text
    assert "engine operation(s) not shown: --all lists them" in text


def test_runs_show_all_lists_the_engine_operations_too(project: Path) -> None:
    text = _show("--all")
    assert "(engine) DBOS.setEvent" in text
    assert "(engine) DBOS.recv" in text
    assert "not shown" not in text
    assert "prep › first = user__note" in text


def test_runs_show_json_gives_each_step_its_path_label_and_times(project: Path) -> None:
    info = json.loads(_show("--json"))
    assert info["internal"] >= 3  # setEvent, recv, setEvent at least
    assert not any(s["operation"].startswith("DBOS.") for s in info["steps"])
    first = next(s for s in info["steps"] if s["path"] == "E0")
    assert first["operation"] == "E0/tool:user__note#1"
    assert first["kind"] == "tool user__note"
    assert first["label"] == "prep › first = user__note"
    assert first["status"] == "done"
    assert 0 < first["started_at"] <= first["finished_at"]
    asked = [s for s in info["steps"] if s["kind"] == "ask"]
    assert [(s["status"], s["label"]) for s in asked] == [("unanswered", "prep › go = ask")]
    assert info["workers"] == []  # not a fleet run
    starts = [s["started_at"] for s in info["steps"]]
    assert starts == sorted(starts)  # time order across the run's units


def test_runs_show_prints_money_as_money() -> None:
    from agentflow.core.text import money

    # `flowc runs show` printed `$3.6e-05`
    assert money(3.6e-05) == "$0.000036"
    assert (money(0.0123), money(0.5), money(1234.5), money(0)) == (
        "$0.012", "$0.50", "$1,234.50", "$0.00",
    )  # fmt: skip


def test_show_run_with_internals_marks_them(project: Path) -> None:
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable.runs import database_for

    url = database_for(load_config(project / "flow.toml"))
    info = asyncio.run(show_run(url, "tally-1", internals=True))
    engine = [s for s in info.steps if s.get("internal")]
    assert len(engine) == info.internal >= 3
    assert all(s["operation"].startswith("DBOS.") for s in engine)


def test_runs_show_pages_its_steps(project: Path) -> None:
    text = _show("--limit", "2", "--offset", "1")
    lines = text.splitlines()
    start = lines.index(next(ln for ln in lines if ln.startswith("steps:")))
    page = lines[start + 1 : start + 3]
    assert [ln.split(None, 3)[3] for ln in page] == [
        "prep › go = ask",
        "prep › item 0 › user__note",
    ], text
    assert lines[start + 3] == "  (steps 2-3 of 5: --offset 3 shows more)", text
    info = json.loads(_show("--json", "--offset", "4"))
    assert (info["steps_total"], info["steps_offset"]) == (5, 4)
    assert [s["label"] for s in info["steps"]] == ["after › last = user__note"]
    assert "(steps" not in _show()  # the whole run fits the default page
    # a page past the end says so (it printed "steps: none yet" and "(steps 50-50 of 5)")
    past = _show("--offset", "50")
    assert "steps: none at --offset 50 (the run has 5)" in past, past
    assert "(steps" not in past and "none yet" not in past


def test_every_page_of_runs_show_is_its_slice_of_the_whole_listing(project: Path) -> None:
    # a page reads only the first offset + limit item records in start order (items.item_page)
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable.runs import database_for

    url = database_for(load_config(project / "flow.toml"))
    whole = asyncio.run(show_run(url, "tally-1", values=True))
    assert whole.steps_total == len(whole.steps) == 5
    for limit in (1, 2, 3):
        for offset in range(6):
            info = asyncio.run(show_run(url, "tally-1", values=True, limit=limit, offset=offset))
            assert info.steps == whole.steps[offset : offset + limit], (limit, offset)
            assert (info.steps_total, info.cost) == (5, whole.cost)


def test_on_temporal_runs_show_names_the_same_steps_with_values_and_unanswered_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temporal_server
) -> None:
    # the same `.flow` and the same `runs show` on Temporal (one line of flow.toml): the
    # unanswered question is read from its unit's memo, the values from the histories
    (tmp_path / "tally.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text(
        '[tools]\nmodules = ["tools.py"]\n\n[durable]\nask_timeout = "300ms"\n'
        f'engine = "temporal"\naddress = "{temporal_server.address}"\n'
        f'task_queue = "show-{tmp_path.name}"\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    result = asyncio.run(
        agentflow.run(
            tmp_path / "tally.flow", {"xs": [1, 2]}, config=tmp_path / "flow.toml",
            durable=True, run_id="tally-1",
        )
    )  # fmt: skip
    assert result.status == "ok", result.error
    text = _show()
    lines = text.splitlines()
    steps = lines[lines.index(next(ln for ln in lines if ln.startswith("steps:"))) + 1 :]
    assert sorted(ln.split(None, 3)[3] for ln in steps) == sorted(
        [
            "prep › first = user__note",
            "prep › go = ask",
            "prep › item 0 › user__note",
            "prep › item 1 › user__note",
            "after › last = user__note",
        ]
    ), text
    from agentflow import api
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable.runs import database_for

    url = database_for(load_config(tmp_path / "flow.toml"))
    info = asyncio.run(api.show_durable_run(url, "tally-1", values=True, limit=3))
    assert (info.steps_total, len(info.steps)) == (5, 3)
    asked = [s for s in info.steps if s["kind"] == "ask"]
    assert [(s["status"], s["label"]) for s in asked] == [("unanswered", "prep › go = ask")]
    first = next(s for s in info.steps if s["path"] == "E0")
    assert first["value"] == 10


def test_runs_show_past_a_64_bit_page_says_none_there(project: Path) -> None:
    # an outside tester: `--offset 9223372036854775807` (offset + limit past what SQLite holds)
    # was a 91-line OverflowError traceback; on PostgreSQL `bigint out of range`
    top, half = str(2**63 - 1), str(2**62)
    for args, offset in (
        (("--offset", top), top),
        (("--limit", half, "--offset", half), half),
        (("--limit", top, "--offset", top), top),
    ):
        past = _show(*args)
        assert f"steps: none at --offset {offset} (the run has 5)" in past, past
    assert "(steps" not in _show("--limit", top)  # the whole run on one page
