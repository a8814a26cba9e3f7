"""``flowc runs`` lists a page of the newest runs and says what it leaves out (how many, and
how many of them have not ended); ``--status``/``--plan`` select in the query, before the
limit, so a run stopped at its question long ago is found however many runs came after it;
``--all`` lists every run.  The web console's filter is the same query
(docs/reference/cli.md "flowc runs").  On the same stopped run: ``flowc answer`` by the
question's ``let`` name of a question answered while the run was stopped says it was answered,
as by its path; a refused value is quoted as JSON; the ``answer with:`` hint is shell-quoted."""

from __future__ import annotations

import asyncio
import json
import signal

import pytest
from click.testing import CliRunner
from support.durable_questions import start_flowc, wait_asked

from agentflow import api
from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

ASKS = """\
flow release
stage decide -> int {
  let n = ask "How many?" expect int
  return n
}
"""

QUICK = """\
flow quick
stage a -> int {
  return 1
}
"""


def _cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    shutdown()
    return result


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory):
    """A run ``old`` stopped at its question, then four newer runs that ended ``ok`` (shared
    by the tests of this module: each leaves the others' view as it found it, or says so)."""
    tmp_path = tmp_path_factory.mktemp("runs")
    (tmp_path / "release.flow").write_text(ASKS)
    (tmp_path / "quick.flow").write_text(QUICK)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("NO_COLOR", "1")
        proc = start_flowc(tmp_path, "run", "--durable", "--run-id", "old", "release.flow")
        try:
            wait_asked(tmp_path / ".flowc" / "durable.sqlite", "old", proc)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
        for n in range(4):
            done = _cli("run", "--durable", "--run-id", f"new{n}", "quick.flow")
            assert done.exit_code == 0, done.output
        yield tmp_path
    shutdown()


@pytest.fixture
def here(many, monkeypatch):
    monkeypatch.chdir(many)
    monkeypatch.setenv("NO_COLOR", "1")
    return many


def test_runs_pages_filters_in_the_query_and_counts_what_it_leaves_out(here):
    page = _cli("runs", "--limit", "3")
    assert page.exit_code == 0, page.output
    assert [line.split()[0] for line in page.stdout.splitlines()[:3]] == ["new3", "new2", "new1"]
    assert page.stdout.splitlines()[-1] == (
        "… 2 more runs, 1 of them not ended (flowc runs --status unfinished): "
        "flowc runs --all, or --limit N"
    )
    as_json = _cli("runs", "--limit", "3", "--json")
    assert len(json.loads(as_json.stdout)) == 3 and "2 more runs" in as_json.stderr

    stopped = _cli("runs", "--limit", "1", "--status", "unfinished")
    assert stopped.stdout.startswith("old  stopped")
    assert "[decide › n = ask · E0] How many?" in stopped.stdout  # waiting, or answered
    assert "more" not in stopped.stdout
    oks = _cli("runs", "--limit", "2", "--status", "ok", "--plan", "qui")
    assert oks.stdout.splitlines()[-1] == (
        "… more runs of status ok and of a plan named like 'qui': flowc runs --all, or --limit N"
    )
    every = _cli("runs", "--all")
    assert len([x for x in every.stdout.splitlines() if not x.startswith(" ")]) == 5
    none = _cli("runs", "--status", "error")
    assert none.stdout == "" and "no durable runs of status error" in none.stderr

    url = f"sqlite:///{here}/.flowc/durable.sqlite"  # what the console's filter asks
    try:
        found = asyncio.run(api.list_durable_runs(url, limit=2, status="stopped"))
        counted = asyncio.run(api.count_durable_runs(url))
    finally:
        shutdown()
    assert [r.run_id for r in found] == ["old"] and counted == (5, 1)


def test_a_filter_that_matches_nothing_names_the_databases_own_plans_not_elsewhere(here):
    # before: "no durable runs of a plan named like 'relase'" and then "runs were started
    # elsewhere …" lines pointing at other projects' databases, though this one holds runs
    typo = _cli("runs", "--plan", "relase")
    assert typo.exit_code == 0 and typo.stdout == ""
    assert typo.stderr == (
        "no durable runs of a plan named like 'relase'\n"
        "  the database holds runs of other statuses or plans (plans: quick, release): "
        "flowc runs lists them; did you mean --plan release?\n"
    )
    none = _cli("runs", "--status", "cancelled")
    assert "started elsewhere" not in none.stderr
    assert none.stderr.splitlines()[-1] == (
        "  the database holds runs of other statuses or plans (plans: quick, release): "
        "flowc runs lists them"
    )


def test_answering_by_name_a_question_answered_while_stopped_says_it_was_answered(here):
    for wrong, says in (
        ("true", "`answer` is true, but the ask's type wants `int` here"),
        ("null", "`answer` is null, but the ask's type wants `int` here"),
        ('{"a": 1}', '`answer` is {"a": 1}, but the ask\'s type wants `int` here'),
    ):  # the value as JSON, never Python's repr (True, None, {'a': 1}); the .flow's `int`
        refused = _cli("answer", "old", "n", wrong)
        assert refused.exit_code == 1 and f"answer to `How many?`: {says}" in refused.stderr
    first = _cli("answer", "old", "n", "5")
    assert first.exit_code == 0, first.output
    for name, shown in (
        ("n", "the question `n` of run old"),
        ("E0", "the question of run old at 'E0'"),
    ):
        again = _cli("answer", "old", name, "7")  # by its let's name as by its path: named so
        assert again.exit_code == 1
        assert again.stderr.strip() == (
            f"error: {shown} was already answered (5): this answer was not taken"
        )


def test_the_answer_hint_quotes_what_the_shell_would_split(capsys):
    from agentflow.cli.common import _show_question

    _show_question("it's x", "E0/do.1", "Q?")
    assert "answer with: flowc answer 'it'\"'\"'s x' E0/do.1 VALUE" in capsys.readouterr().err


def test_the_consoles_filter_is_the_query_and_its_page_counts_what_it_leaves_out(here):
    from starlette.testclient import TestClient

    from agentflow.ui.app import Console, build_app

    console = Console(f"sqlite:///{here}/.flowc/durable.sqlite", limit=2)
    try:
        with TestClient(build_app(console), base_url="http://127.0.0.1:8421") as client:
            page = client.get("/").text
            stopped = client.get("/", params={"status": "stopped"}).text
    finally:
        shutdown()
    assert 'data-run="new3"' in page and 'data-run="old"' not in page
    assert "3 more runs not listed, 1 of them not ended: filter by status to see them" in page
    assert 'data-run="old"' in stopped and 'data-run="new3"' not in stopped
