"""Running the `test` blocks of `.flow` files (docs/reference/testing.md): ``flowc test`` and
:func:`agentflow.run_tests`.

Each test compiles its file once (the plan of ``flowc compile``, with the finish extended to
hand back every stage's value), then runs it through :func:`agentflow.api.run` with:

- a model router whose client for a stubbed agent answers the stub: each agent step the stub
  covers names that client as its ``model`` (a stage stub wins over an alias stub); every other
  agent is answered by the built-in test model (seed 0) — no request leaves the process;
- a catalog of the builtin file tools (confined to the file's directory) plus one tool per stub,
  and, for every other tool the flow declares, a tool that fails the test with a message naming
  the stub to add (MCP servers and user tools are never started);
- the ``flow.toml`` a run of the file reads (the nearest from its directory upward), when
  there is one, for agent profiles and teams.

Then each ``expect`` is evaluated over ``output``, ``input``, the stages, ``inferences`` and
``calls``. Layer: api (it compiles and runs).

This module finds the files and runs them (in parallel, cached: :mod:`agentflow.flowtest_cache`);
one test's run is :mod:`agentflow.flowtest_case`, its stubs :mod:`agentflow.flowtest_stubs`, the
report :mod:`agentflow.flowtest_report`.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import time
from pathlib import Path
from typing import Any

from agentflow.compiler.api import check_source, read_source
from agentflow.compiler.lower_expressions import absent_reads_null
from agentflow.compiler.lowering import LoweringError, lower_with_stages
from agentflow.compiler.render import render_text
from agentflow.errors import CompileError, FlowError, PlanLoadError, RunError
from agentflow.flowtest_cache import _Cache
from agentflow.flowtest_case import _run_one
from agentflow.flowtest_network import network_guard
from agentflow.flowtest_report import TestOutcome, TestReport, _where
from agentflow.flowtest_steps import plan_steps
from agentflow.flowtest_stubs import _unused_across_cases
from agentflow.ir.functions import bind_calls, table_from_data
from agentflow.ir.templates import compile_value
from agentflow.runtime.expressions import evaluate
from agentflow.runtime.tools.catalog import WRITE_TOOLS

__all__ = [
    "TestOutcome",
    "TestReport",
    "run_tests",
    "run_tests_async",
]

#: a line that starts a `test` block (a file whose test blocks do not parse still has them)
_TEST_LINE = re.compile(r'^[ \t]*test[ \t]+"', re.M)


def find_flow_files(paths: list[str | os.PathLike[str]]) -> list[Path]:
    """The `.flow` files named by ``paths`` (directories searched recursively, sorted)."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        try:
            is_dir = path.is_dir()
        except OSError:  # a name too long, a link to one: reading it says so
            is_dir = False
        if is_dir:
            out.extend(
                f
                for f in sorted(path.rglob("*.flow"))
                if not any(part.startswith(".") for part in f.relative_to(path).parts)
            )
        else:
            out.append(path)
    return out


def run_tests(
    paths: list[str | os.PathLike[str]] | str | os.PathLike[str],
    pattern: str | None = None,
    fail_fast: bool = False,
    *,
    on_outcome: Any = None,
    jobs: int = 1,
    cache: str | os.PathLike[str] | None = None,
) -> TestReport:
    """Run the `test` blocks of the `.flow` files under ``paths`` (files or directories) and
    return a :class:`TestReport` (docs/reference/testing.md).

    ``pattern``: keep the tests whose name contains it (or matches it as a glob);
    ``fail_fast``: stop after the first failure; ``on_outcome(outcome)``: called as each test
    finishes, in file and test order (the command line prints from it); ``jobs``: how many tests
    run at once (tests of a flow that writes files run one at a time); ``cache``: a directory
    (``flowc test`` uses ``.flowc-cache``) remembering the tests that passed: a test whose file,
    directory and agentflow version are unchanged is reported as a cached pass without running.
    Never raises for a mistake in a `.flow` file: a file that does not read or check is a
    failed outcome. Synchronous: runs its own event loop, under the network guard; inside a
    running event loop it raises ``RuntimeError`` naming :func:`run_tests_async`, which async
    code awaits instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "agentflow.run_tests() cannot be called while an event loop is running in this "
            "thread (it runs its own: asyncio.run(), Jupyter and pytest-asyncio already run "
            "one); in async code use `await agentflow.run_tests_async(...)` instead"
        )
    return asyncio.run(
        run_tests_async(paths, pattern, fail_fast, on_outcome=on_outcome, jobs=jobs, cache=cache)
    )


async def run_tests_async(
    paths: list[str | os.PathLike[str]] | str | os.PathLike[str],
    pattern: str | None = None,
    fail_fast: bool = False,
    *,
    on_outcome: Any = None,
    jobs: int = 1,
    cache: str | os.PathLike[str] | None = None,
) -> TestReport:
    """:func:`run_tests` for async code (``asyncio.run(main())``, Jupyter, pytest-asyncio): the
    same options and report, on the caller's event loop. The network guard is on while it runs:
    an httpx request to another machine from any task of the process fails, as in a test."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    store = _Cache(Path(cache)) if cache is not None else None
    files = find_flow_files(list(paths))
    with network_guard:
        return await _run_all(files, pattern, fail_fast, on_outcome, max(1, jobs), store)


def _selected(name: str, pattern: str | None) -> bool:
    if not pattern:
        return True
    return pattern in name or fnmatch.fnmatchcase(name, pattern)


async def _run_all(
    files: list[Path],
    pattern: str | None,
    fail_fast: bool,
    on_outcome: Any,
    jobs: int,
    cache: _Cache | None,
) -> TestReport:
    report = TestReport()
    slots = asyncio.Semaphore(jobs)

    def add(outcome: TestOutcome) -> bool:
        report.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
        return fail_fast and not outcome.passed

    tasks = [asyncio.ensure_future(_run_file(file, pattern, slots, cache)) for file in files]
    try:
        for task in tasks:
            for outcome in await task:
                if add(outcome):
                    return report
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return report


async def _run_file(
    file: Path, pattern: str | None, slots: asyncio.Semaphore, cache: _Cache | None = None
) -> list[TestOutcome]:
    shown = str(file)
    try:
        text = read_source(file)
    except (OSError, FlowError, UnicodeDecodeError) as e:
        return [TestOutcome(shown, "flowc check", 0, False, [f"{shown}: cannot read: {e}"])]
    key = cache.key(file, text) if cache is not None else None
    record = cache.load(key) if cache is not None and key is not None else None
    if record is not None:
        chosen = [name for name in record["tests"] if _selected(name, pattern)]
        if all(name in record["passed"] for name in chosen):
            return [
                TestOutcome(shown, run, record["passed"][name]["line"], True, [], 0, cached=True)
                for name in chosen
                for run in record["passed"][name]["runs"]
            ]
    result = check_source(text, shown)
    tests = [t for t in result.tests if _selected(t.name, pattern)]
    has_tests = bool(result.tests) or _TEST_LINE.search(text) is not None
    if not has_tests:
        return []
    # the tests a file that does not check holds (its blocks, when they did not parse)
    held = len(tests) if result.tests else len(_TEST_LINE.findall(text))
    if not result.ok:
        rendered = render_text(result.errors, {shown: text}, color=False)
        return [TestOutcome(shown, "flowc check", 0, False, [rendered.rstrip()], not_run=held)]
    if not tests:
        return []
    try:
        plan, stages = lower_with_stages(result, file=shown, source=text)
    except LoweringError as e:
        where = f"{shown}:{e.span.line}:{e.span.column}"
        failure = [f"{where}: {e.message}"]
        return [TestOutcome(shown, "flowc compile", 0, False, failure, not_run=len(tests))]
    except CompileError as e:  # pragma: no cover - lower raises LoweringError only
        return [TestOutcome(shown, "flowc compile", 0, False, [str(e)], not_run=len(tests))]
    # the stages' values are read after the run (:func:`_stage_values`), not by the plan's
    # finish: its output and `meta` stay the run's, so an error of the output points at the
    # `.flow` as `flowc run`'s does, and a stage no run reads never fails a test
    try:
        staged = bind_calls(
            compile_value(stages, file=shown, conditions=False),
            table_from_data(plan.get("functions"), shown),
        )
    except PlanLoadError as e:  # a stage's value the compiler wrote wrongly: a flowc bug
        failure = [f"{shown}: internal compiler error: {e} (this is a flowc bug)"]
        return [TestOutcome(shown, "flowc compile", 0, False, failure, not_run=len(tests))]
    # tests of a flow that may write files share its directory: they run one at a time
    alone = asyncio.Lock() if _writes(plan) else None
    passed: dict[str, Any] = dict(record["passed"]) if record is not None else {}

    async def one(name: str, test: Any, case: dict[str, Any]) -> TestOutcome:
        async with slots:
            if alone is not None:
                await alone.acquire()
            try:
                started = time.monotonic()
                failures = await _run_one(file, shown, text, result, (plan, staged), test, case)
            finally:
                if alone is not None:
                    alone.release()
        ms = int((time.monotonic() - started) * 1000)
        return TestOutcome(shown, name, test.span.line, not failures, failures, ms)

    async def ready(outcome: TestOutcome) -> TestOutcome:
        return outcome

    pending: list[tuple[Any, list[Any]]] = []  # (test, its runs' awaitables)
    for test in tests:
        if test.name in passed:  # passed last time, nothing changed
            entry = passed[test.name]
            pending.append(
                (
                    test,
                    [
                        ready(TestOutcome(shown, r, entry["line"], True, [], 0, cached=True))
                        for r in entry["runs"]
                    ],
                )
            )
            continue
        runs: list[tuple[str, dict[str, Any]]] = [(test.name, {})]
        if test.cases is not None and test.case is not None:
            try:
                cases = evaluate(absent_reads_null(test.cases, result), {})
            except RunError as e:
                where = _where(shown, test.cases.span)
                failed = TestOutcome(
                    shown,
                    test.name,
                    test.span.line,
                    False,
                    [f"{where}: the cases cannot be evaluated: {e.message}"],
                )
                pending.append((test, [ready(failed)]))
                continue
            runs = [(f"{test.name}[{i}]", {test.case.name: c}) for i, c in enumerate(cases)]
        pending.append((test, [one(name, test, case) for name, case in runs]))
    flat = [asyncio.ensure_future(a) for _, group in pending for a in group]
    try:
        done = await asyncio.gather(*flat)
    finally:
        for f in flat:
            f.cancel()
    outcomes = _unused_across_cases(pending, list(done))
    if cache is not None and key is not None:
        i = 0
        for test, group in pending:
            mine = outcomes[i : i + len(group)]
            i += len(group)
            if mine and all(o.passed for o in mine):
                passed[test.name] = {"line": test.span.line, "runs": [o.name for o in mine]}
            else:
                passed.pop(test.name, None)
        cache.save(key, shown, [t.name for t in result.tests], passed)
    return outcomes


def _writes(plan: Any) -> bool:
    """True when ``plan`` may write files: a write tool, or an agent with a ``write`` scope."""
    for step in plan_steps(plan):
        if step.get("tool_name") in WRITE_TOOLS:
            return True
        if step.get("tool_name") == "agent" and (step.get("input") or {}).get("write"):
            return True
    return False
