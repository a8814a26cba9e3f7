"""`flowc test`: the `test` blocks of `.flow` files (:func:`agentflow.api.run_tests`), and
`flowc test --explore N FILE` (:func:`agentflow.flowexplore.explore`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from agentflow import api
from agentflow.cli.common import Styled, _err, _flow_files, _out
from agentflow.core.text import visible

#: the exit code of a `flowc test` that ran no test (pytest's for "no tests collected")
NO_TESTS = 5


class _Runs(click.IntRange):
    """``--explore N``: a number of runs; a value that is no number (``--explore FILE``, N
    forgotten) is told the option's form, not only click's "not a valid integer range"."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip().lstrip("+-").isdigit():
            self.fail(
                f"{value!r} is not a number of runs: the number comes first, "
                f"`flowc test --explore 20 {value}`",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


@click.command("test")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("-k", "pattern", help="Run only the tests whose name contains (or matches) this.")
@click.option("-x", "--exitfirst", "fail_fast", is_flag=True, help="Stop at the first failure.")
@click.option(
    "--junit", "junit", type=click.Path(dir_okay=False), help="Write a JUnit XML report here."
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1, 256),
    default=None,
    help="Tests run at once (default: the number of CPU cores).",
)
@click.option("--no-cache", is_flag=True, help="Run every test, even those cached as passed.")
@click.option(
    "--explore",
    "explore_runs",
    type=_Runs(1, 10_000),
    metavar="N",
    help="Instead: run FILE N times with generated answers and report the branches exercised.",
)
def test_cmd(
    paths: tuple[str, ...],
    pattern: str | None,
    fail_fast: bool,
    junit: str | None,
    jobs: int | None,
    no_cache: bool,
    explore_runs: int | None,
) -> None:
    """Run the `test` blocks of .flow files (default: the current directory) with no network:
    stubbed agents and tools answer their stubs, other agents the test model
    (docs/reference/testing.md). Exit code 0 when every test passed, 1 otherwise, 5 when no
    test ran (no .flow file, no test block, none matching -k; as pytest). Tests run
    -j at once; a test that passed is not run again while its file, its directory, its
    flow.toml and tool modules, and agentflow are unchanged (reported "PASSED (cached)"; the
    cache is .flowc-cache/, --no-cache runs all).

    With --explore N FILE: run FILE N times, every agent and tool answering generated values
    (test model seeds 0..N-1), and report which `if` branches, `require`/`verify` outcomes and
    `map` paths each run took, and which answers made a run fail (exit code 0; 1 when FILE does
    not check)."""
    if explore_runs is not None:
        _explore(paths, explore_runs)
        return
    files = _flow_files(paths or (".",))
    for other in [f for f in files if f.suffix != ".flow"]:  # a plan, a dataset …: no tests
        click.echo(f"{other}: not a .flow file; `test` blocks are written in .flow files")
    files = [f for f in files if f.suffix == ".flow"]
    if not files:  # nothing ran: exit 5, as pytest's "no tests collected"
        if not any(Path(p).is_file() for p in paths):
            _out(f"no .flow files in {', '.join(paths or ('.',))}")
        sys.exit(NO_TESTS)

    def show(outcome: Any) -> None:
        mark = (
            click.style("PASSED", fg="green") if outcome.passed else click.style("FAILED", fg="red")
        )
        if outcome.cached:
            mark += " (cached)"
        if outcome.not_run:  # a file that does not check: its tests were not run
            mark += f" ({outcome.not_run} test{'s' if outcome.not_run > 1 else ''} not run)"
        where = f"{outcome.file}:{outcome.line}" if outcome.line else outcome.file
        _out(Styled(f"{visible(where)} {visible(outcome.name)} {mark}"))  # the mark's colour
        for failure in outcome.failures:
            _out("  " + failure.replace("\n", "\n  "))

    jobs = jobs or os.cpu_count() or 1
    cache = None if no_cache else ".flowc-cache"
    report = api.run_tests(list(files), pattern, fail_fast, on_outcome=show, jobs=jobs, cache=cache)
    if junit is not None:
        try:
            Path(junit).write_text(report.to_junit(), encoding="utf-8")
        except OSError as e:
            _err(f"{junit}: cannot write the JUnit report: {e.strerror or e}")
            sys.exit(1)
    if not report.outcomes:
        if pattern:
            _out(f"no test matches -k {pattern!r} in {len(files)} .flow file(s)")
        else:
            _out(f"no test blocks in {len(files)} .flow file(s)")
            for given in [p for p in paths if p.endswith(".flow") and Path(p).is_file()]:
                note = api.library_tests_note(given)  # a library: where its types are tested
                if note is not None:
                    _out(note)
        sys.exit(NO_TESTS)
    summary = report.summary()
    _out(Styled(click.style(visible(summary), fg="green" if report.ok else "red")))
    sys.exit(0 if report.ok else 1)


def _explore(paths: tuple[str, ...], runs: int) -> None:
    if len(paths) != 1 or not Path(paths[0]).is_file():
        raise click.UsageError("--explore N takes exactly one .flow FILE")
    report = api.explore(paths[0], runs)
    if report.error is not None:
        _err(report.error)
        sys.exit(1)
    seeds = "seed 0" if runs == 1 else f"seeds 0..{runs - 1}"
    noun = "run" if report.runs == 1 else "runs"
    _out(f"explored {report.file}: {report.runs} {noun} (test model {seeds})")
    width = max((len(s.source) for s in report.sites), default=0)
    for site in report.sites:
        counts = "  ".join(f"{o}: {n}" for o, n in site.counts.items())
        _out(f"  {site.source.ljust(width)}  {site.kind:<8} {counts}")
    missed = [f"{s.source} {s.kind} {o}" for s in report.sites for o in s.missed]
    if missed:
        _out("not exercised:")
        for m in missed:
            _out(f"  {m}")
    else:
        _out("every branch and check outcome was exercised")
    _out(f"failing runs: {len(report.failures)}")
    groups: dict[tuple[str, str | None], list[Any]] = {}
    for f in report.failures:
        groups.setdefault((f.code, f.source), []).append(f)
    for (code, source), fails in groups.items():
        where = f" at {source}" if source else ""
        seeds = ", ".join(str(f.seed) for f in fails[:10]) + (", …" if len(fails) > 10 else "")
        _out(f"  {len(fails)} failed with {code}{where} (seeds {seeds}); seed {fails[0].seed}:")
        _out(f"    {fails[0].message}")
        for who, answer in fails[0].answers:
            shown = answer if len(answer) <= 200 else answer[:199] + "…"
            _out(f"    {who} answered {shown}")
