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
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import json
import os
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentflow.api_run import run
from agentflow.compiler.api import check_source, read_source
from agentflow.compiler.contracts import expect_is_wrapped
from agentflow.compiler.imports import file_key
from agentflow.compiler.lower_expressions import absent_reads_null
from agentflow.compiler.lowering import LoweringError, lower_with_stages
from agentflow.compiler.render import render_text
from agentflow.core import version as core_version
from agentflow.core.text import xml_attribute, xml_text
from agentflow.core.vocabulary import Code
from agentflow.errors import (
    CompileError,
    ConfigError,
    ErrorInfo,
    FlowError,
    InputError,
    PlanLoadError,
    RunError,
)
from agentflow.flowtest_network import CALLER, GUARD, network_guard
from agentflow.flowtest_steps import (
    answers_tool,
    plan_steps,
    step_contract,
    stub_named_steps,
    unstubbed_asks,
)
from agentflow.grammar import ast
from agentflow.ir.functions import bind_calls, table_from_data
from agentflow.ir.loader import load_plan_data
from agentflow.ir.mismatch import mismatch_lines
from agentflow.ir.schemas import whole_numbers
from agentflow.ir.templates import compile_value
from agentflow.runtime.agent import check_answer
from agentflow.runtime.config import (
    Config,
    ProviderConfig,
    ResolvedModel,
    find_config,
    load_config,
)
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.expressions import evaluate, render_value, to_json_value
from agentflow.runtime.extract import validate
from agentflow.runtime.hooks import Hooks, SleepRequest
from agentflow.runtime.models.base import ChatResponse
from agentflow.runtime.models.cassette import ReplayClient
from agentflow.runtime.models.router import ModelRouter, RoutedClient
from agentflow.runtime.models.test_model import TestModel
from agentflow.runtime.tools.builtin import default_catalog
from agentflow.runtime.tools.catalog import WRITE_TOOLS, Tool
from agentflow.runtime.tools.user import load_user_tools

__all__ = [
    "TestOutcome",
    "TestReport",
    "run_tests",
    "run_tests_async",
]

#: a line that starts a `test` block (a file whose test blocks do not parse still has them)
_TEST_LINE = re.compile(r'^[ \t]*test[ \t]+"', re.M)
#: the names of the outcome standing for a file whose tests could not run
_UNCHECKED = frozenset({"flowc check", "flowc compile"})
#: the ``model`` an agent step answered by a stub names (never a configured model)
_STUB_PREFIX = "flowc-test-stub:"


@dataclass
class TestOutcome:
    """One test's result: ``file`` (as found), ``name``, ``line`` of the ``test`` keyword,
    ``passed``, ``failures`` (one message per failed expectation or problem, each starting with
    its ``file:line:col``), ``duration_ms``; ``cached``: it passed in an earlier run of the
    same file, directory and agentflow version and was not run again. A file that does not
    check is one outcome named ``flowc check`` carrying its diagnostics (``flowc compile`` when
    it does not lower), ``not_run`` the number of its tests that were therefore not run."""

    __test__ = False  # not a pytest test class

    file: str
    name: str
    line: int
    passed: bool
    failures: list[str] = field(default_factory=list)
    duration_ms: int = 0
    cached: bool = False
    not_run: int = 0


@dataclass
class TestReport:
    """What :func:`run_tests` returns: every outcome in run order."""

    __test__ = False  # not a pytest test class

    outcomes: list[TestOutcome] = field(default_factory=list)

    @property
    def passed(self) -> int:
        """Number of tests that passed."""
        return sum(1 for o in self.outcomes if o.passed)

    @property
    def failed(self) -> int:
        """Number of tests (and files that do not check) that failed."""
        return sum(1 for o in self.outcomes if not o.passed)

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return self.failed == 0

    @property
    def cached(self) -> int:
        """Number of passes taken from the cache (not run)."""
        return sum(1 for o in self.outcomes if o.cached)

    def summary(self) -> str:
        """``N passed, N failed`` (and `` (N cached)`` when some passes were not run), counting
        tests; then, for the files that do not check, ``; N tests not run: FILE does not
        check`` (docs/reference/testing.md "Running")."""
        cached = f" ({self.cached} cached)" if self.cached else ""
        broken = [o for o in self.outcomes if o.name in _UNCHECKED]
        failed = self.failed - len(broken)
        text = f"{self.passed} passed, {failed} failed{cached}"
        if not broken:
            return text
        count = sum(o.not_run for o in broken)
        tests = "1 test" if count == 1 else f"{count} tests" if count else "its tests"
        files = sorted({o.file for o in broken})
        if len(files) == 1:
            does = "compile" if broken[0].name == "flowc compile" else "check"
            why = f"{files[0]} does not {does}"
        else:
            why = f"{len(files)} files do not check"
        return f"{text}; {tests} not run: {why}"

    def to_junit(self) -> str:
        """The report as JUnit XML (one ``testsuite`` per file, one ``testcase`` per test)."""
        by_file: dict[str, list[TestOutcome]] = {}
        for o in self.outcomes:
            by_file.setdefault(o.file, []).append(o)
        lines = ['<?xml version="1.0" encoding="utf-8"?>']
        lines.append(f'<testsuites tests="{len(self.outcomes)}" failures="{self.failed}">')
        for file, outs in by_file.items():
            failed = sum(1 for o in outs if not o.passed)
            secs = sum(o.duration_ms for o in outs) / 1000
            lines.append(
                f'  <testsuite name={xml_attribute(file)} tests="{len(outs)}" '
                f'failures="{failed}" time="{secs:.3f}">'
            )
            for o in outs:
                head = (
                    f"    <testcase classname={xml_attribute(file)} name={xml_attribute(o.name)} "
                    f'time="{o.duration_ms / 1000:.3f}"'
                )
                if o.passed:
                    lines.append(head + "/>")
                    continue
                text = "\n".join(o.failures)
                first = o.failures[0] if o.failures else "failed"
                lines.append(head + ">")
                lines.append(
                    f"      <failure message={xml_attribute(first)}>{xml_text(text)}</failure>"
                )
                lines.append("    </testcase>")
            lines.append("  </testsuite>")
        lines.append("</testsuites>")
        return "\n".join(lines) + "\n"


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


#: files a cache key looks at in a flow's directory, at most (beyond: the file is not cached)
_CACHE_MAX_FILES = 2000
#: what the cache key leaves out of a flow's directory
_CACHE_SKIP = ("__pycache__",)
_REPLAY_LINE = re.compile(r'^[ \t]*replay[ \t]+"([^"\n]*)"', re.M)
#: an ``import { … } from "PATH"`` item (docs/reference/programs.md "import")
_IMPORT_LINE = re.compile(r'^[ \t]*import[ \t]*\{[^}]*\}[ \t\n]*from[ \t]+"([^"\n]*)"', re.M)


def _imported_files(file: Path, text: str, seen: set[Path]) -> list[Path]:
    """The files ``text`` (of ``file``) imports, transitively (those that can be read)."""
    out = []
    for written in _IMPORT_LINE.findall(text):
        path = file_key(file.parent / written)  # a symlink loop too (never raises)
        if path in seen:
            continue
        seen.add(path)
        try:
            inner = path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            continue
        out.append(path)
        out.extend(_imported_files(path, inner, seen))
    return out


@functools.cache
def _build() -> str:
    """A fingerprint of the agentflow that runs the tests: the SHA-256 of the name and contents
    of every file of the installed package (``__pycache__`` aside) — the compiler and runtime
    themselves, so an upgrade or an edit of an editable install runs every test again even when
    the version number stays (docs/reference/testing.md "Running"). Computed once per process
    (some 200 files, 7 MB: tens of milliseconds); a file that cannot be read counts as missing."""
    import hashlib

    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).parts
        if "__pycache__" in rel or not path.is_file():
            continue
        h.update("/".join(rel).encode("utf-8", "surrogatepass") + b"\0")
        try:
            h.update(hashlib.sha256(path.read_bytes()).digest())
        except OSError:
            h.update(b"missing\0")
    return h.hexdigest()


class _Cache:
    """The ``.flowc-cache`` directory: ``tests/<key>.json`` per `.flow` file state, holding
    its test names and the tests that passed (``{name: {line, runs}}``). The key is the SHA-256
    of the agentflow version and build (:func:`_build`), the file's path and text, the contents of the cassettes it
    replays, and the name, size and modification time of every file under its directory
    (hidden ones and ``__pycache__`` left out): a change to any of them runs its tests again."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def key(self, file: Path, text: str) -> str | None:
        """The cache key of ``file`` with source ``text``; None when it cannot be cached."""
        import hashlib

        h = hashlib.sha256()
        base = file.parent.resolve()
        for part in (core_version.__version__, _build(), str(file.resolve()), text):
            h.update(part.encode("utf-8", "surrogatepass") + b"\0")
        for cassette in _REPLAY_LINE.findall(text):
            try:
                h.update(hashlib.sha256((base / cassette).read_bytes()).digest())
            except OSError:
                h.update(b"missing\0")
        for imported in _imported_files(file, text, {file_key(file)}):  # their texts
            try:
                h.update(hashlib.sha256(imported.read_bytes()).digest())
            except OSError:
                h.update(b"missing\0")
        count = 0
        try:
            for path in sorted(base.rglob("*")):
                rel = path.relative_to(base).parts
                if any(p.startswith(".") or p in _CACHE_SKIP for p in rel):
                    continue
                count += 1
                if count > _CACHE_MAX_FILES:
                    return None
                st = path.stat()
                h.update(f"{'/'.join(rel)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        except OSError:
            return None
        return h.hexdigest()

    def load(self, key: str) -> dict[str, Any] | None:
        """The record of ``key`` or None (none, or unreadable)."""
        try:
            data = json.loads((self.root / "tests" / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        ok = isinstance(data, dict) and isinstance(data.get("tests"), list)
        return data if ok and isinstance(data.get("passed"), dict) else None

    def save(self, key: str, shown: str, tests: list[str], passed: dict[str, Any]) -> None:
        """Remember ``passed`` for ``key``; a directory that cannot be written is left alone."""
        try:
            folder = self.root / "tests"
            folder.mkdir(parents=True, exist_ok=True)
            ignore = self.root / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# made by flowc test\n*\n", encoding="utf-8")
            record = {"file": shown, "tests": tests, "passed": passed}
            tmp = folder / f"{key}.json.{os.getpid()}"
            tmp.write_text(json.dumps(record), encoding="utf-8")
            tmp.replace(folder / f"{key}.json")
        except OSError:
            pass


def _writes(plan: Any) -> bool:
    """True when ``plan`` may write files: a write tool, or an agent with a ``write`` scope."""
    for step in plan_steps(plan):
        if step.get("tool_name") in WRITE_TOOLS:
            return True
        if step.get("tool_name") == "agent" and (step.get("input") or {}).get("write"):
            return True
    return False


def _where(shown: str, span: Any) -> str:
    return f"{shown}:{span.line}:{span.column}"


def _show(value: Any) -> str:
    return json.dumps(to_json_value(value), ensure_ascii=False, sort_keys=False)


def virtual_sleep(request: SleepRequest) -> None:
    """A test's ``sleep`` waits no real time (virtual time: docs/reference/statements.md
    "sleep"; also ``flowc test --explore``'s runs): its step still runs, with its events, and
    ``sleeps`` lists it.  The ``sleeper`` hook of :class:`~agentflow.runtime.hooks.Hooks`."""


def _plan_tool_name(name: str, sig: Any) -> str:
    return str(sig.catalog_name)


async def _run_one(
    file: Path,
    shown: str,
    text: str,
    result: Any,
    plan: Any,
    test: Any,
    case: dict[str, Any],
) -> list[str]:
    """Run one test (``case``: the binding of a parametrised test's case, else empty); the
    failure messages (empty when it passed)."""
    try:
        return await _run_prepared(file, shown, text, result, plan, test, case)
    except RunError as e:  # a constant of the test that cannot be evaluated (`1 / 0`)
        return [f"{_where(shown, test.name_span)}: {e.message}"]


async def _run_prepared(
    file: Path,
    shown: str,
    text: str,
    result: Any,
    prepared: Any,
    test: Any,
    case: dict[str, Any],
) -> list[str]:
    import copy

    plan, staged = prepared  # the compiled plan, its stages' value templates (compiled)

    failures: list[str] = []
    problems: list[str] = []  # stubs run out, requests that tried to leave the process
    inp: Any = {}
    if test.inputs:
        inp = evaluate(absent_reads_null(test.inputs[0].value, result), case)
    agent_values: dict[str, Answers] = {}
    stage_values: dict[str, Answers] = {}
    tool_stubs: dict[str, Any] = {}
    named: list[Any] = []  # `stub ask` and `stub step`
    for stub in test.stubs:
        if stub.kind == "tool":
            tool_stubs[stub.target.name] = stub
        elif stub.kind in ("ask", "step"):
            named.append(stub)
        elif stub.kind == "agent":
            # by the alias the step was written with (`meta.agent`): two aliases of one agent
            # name (`use agent "writer" as writer` / `as critic`) are stubbed apart
            agent_values[stub.target.name] = Answers.of(stub, case, shown, problems, result)
        else:
            stage_values[stub.target.name] = Answers.of(stub, case, shown, problems, result)
    every = [*agent_values.values(), *stage_values.values()]  # every stub, to see it consumed
    data = copy.deepcopy(plan)
    answers: dict[str, Answers] = {}
    _route_stubs(data, agent_values, stage_values, answers, result.env)
    catalog = default_catalog()
    for stub in named:
        answer = Answers.of(stub, case, shown, problems, result)
        every.append(answer)
        tools = stub_named_steps(data, stub, answer, Tool, stages=result.stages)
        if not tools:
            return [
                f"{_where(shown, stub.span)}: `stub {stub.kind} {stub.written}` answers no "
                "step of the compiled flow (the value is computed inline, not by a step): "
                "stub what it is computed from instead"
            ]
        for tool in tools:
            catalog.register(tool, replace=True)
    unstubbed_asks(data)  # an ask no stub answers says how a test answers it
    try:
        loaded = load_plan_data(data, shown)
    except PlanLoadError as e:  # pragma: no cover - the compiled plan validated
        return [f"{shown}: internal error: the test plan does not load: {e}"]

    config: Any = Config()
    toml = find_config(file)  # the flow.toml a run of the file reads
    if toml is not None:
        try:
            config = load_config(toml, env={})
        except ConfigError as e:
            return [f"{toml}: {e}"]
    try:
        user = _user_tools(config)
    except FlowError as e:
        return [f"{toml}: {e}"]
    for name, sig in result.tool_decls.items():
        plan_name = _plan_tool_name(name, sig)
        stub = tool_stubs.get(name)
        if stub is not None:
            answer = Answers.of(stub, case, shown, problems, result)
            every.append(answer)
            declared = [st for st in plan_steps(data) if st.get("tool_name") == plan_name]
            contract = step_contract({**declared[0], "tool_name": name}) if declared else None
            catalog.register(answers_tool(Tool, plan_name, answer, None, contract), replace=True)
        elif plan_name in user:
            catalog.register(user[plan_name], replace=True)
        elif plan_name not in catalog:
            catalog.register(_unstubbed_tool(Tool, RunError, name, plan_name), replace=True)
    replay = None
    for item in test.replays[:1]:
        cassette = file.parent / item.path
        if not cassette.is_file():
            return [f"{_where(shown, item.span)}: replay: no cassette at {cassette}"]

        try:
            replay = (item, ReplayClient(cassette))
        except ConfigError as e:
            return [f"{_where(shown, item.span)}: replay: {e}"]
    calls: dict[str, int] = {}
    sleeps: list[Any] = []  # the durations `sleep` steps waited (virtual time: no real wait)

    generated: dict[str, None] = {}  # the agents the built-in test model answered, in order

    def count(event: Any) -> None:
        if event.kind == "model_call" and event.data.get("model") == _GENERATED:
            generated[str(event.data.get("agent") or event.data.get("role") or "?")] = None
        if event.kind == "tool_started":
            name = event.data.get("tool_name")
            calls[name] = calls.get(name, 0) + 1
        elif event.kind == "step_started" and event.data.get("tool_name") == "sleep":
            sleeps.append((event.data.get("input") or {}).get("for"))

    router = _StubRouter(config, answers, replay[1] if replay is not None else None)
    token = GUARD.set(problems)
    try:
        outcome = await run(
            loaded,
            inp,
            config=config,
            workspace=file.parent,
            catalog=catalog,
            router=router,
            shape_cache=False,
            telemetry=False,
            sinks=[CallbackSink(count)],
            hooks=Hooks(sleeper=virtual_sleep),
        )
    except InputError as e:
        return [f"{_where(shown, test.name_span)}: the test's input is refused: {e}"]
    except FlowError as e:
        return [f"{_where(shown, test.name_span)}: the run could not start: {e}"]
    finally:
        GUARD.reset(token)
        await router.aclose()
    if problems:  # a stub ran out, or a request tried to leave the process: whatever happened
        return list(dict.fromkeys(problems))
    if outcome.ok:  # a run that ended early may not reach a stub; one that finished must have
        unused = _unconsumed(shown, every, stage_values)
        if test.cases is not None and test.case is not None:  # decided over the whole table
            unused = [_Unused(f) for f in unused]
        failures.extend(unused)

    scope: dict[str, Any] = {**case, "input": inp}
    stage_errors: dict[str, str] = {}
    if outcome.ok:
        scope["output"] = outcome.output
        ran = {"input": whole_numbers(loaded.input_schema, inp), **outcome.results}
        scope.update(_stage_values(shown, staged, ran, result, stage_errors))
    scope["inferences"] = int(outcome.usage.get("inferences", 0))
    scope["sleeps"] = sleeps
    scope["calls"] = {
        name: calls.get(_plan_tool_name(name, sig), 0) for name, sig in result.tool_decls.items()
    }
    error: ErrorInfo | dict[str, Any] = outcome.error or {}
    expected_fail = [e for e in test.expects if e.fail_code is not None]
    if not outcome.ok and not expected_fail:
        where = str(error.get("source") or shown)
        if where.startswith(f"{file.name}:"):  # the plan's `file:line:col`, as the test names it
            where = shown + where[len(file.name) :]
        failures.append(
            f"{_where(shown, test.name_span)}: the run failed with {error.get('code')}: "
            f"{error.get('message')} (at {where})"
        )
        if error.get("code") == Code.REPLAY_MISS and replay is not None:
            failures[-1] += f"; the cassette is replayed by {_where(shown, replay[0].span)}"
        return failures
    for exp in test.expects:
        if exp.fail_code is not None:
            if outcome.ok:
                failures.append(
                    f"{_where(shown, exp.span)}: expected the run to fail with "
                    f"{exp.fail_code}, it finished with output "
                    f"{_show(scope.get('output'))}"
                )
            elif error.get("code") != exp.fail_code:
                failures.append(
                    f"{_where(shown, exp.span)}: expected the run to fail with "
                    f"{exp.fail_code}, it failed with {error.get('code')}: {error.get('message')}"
                )
            continue
        failures.extend(_check_expect(shown, exp, scope, outcome.ok, text, result, stage_errors))
    return _with_generated_note(failures, list(generated))


def _with_generated_note(failures: list[str], generated: list[str]) -> list[str]:
    """``failures`` with a note on the first naming the agents no stub covered, whose values
    came from the built-in test model (docs/reference/testing.md "Stubs"); as they are when
    nothing failed or every agent was stubbed or replayed."""
    if not failures or not generated:
        return failures
    names = ", ".join(f"`{name}`" for name in generated)
    which = f"agent {names}" if len(generated) == 1 else f"agents {names}"
    note = (
        f"\n    note: no `stub agent` covered {which}: the built-in test model answered "
        f"{'it' if len(generated) == 1 else 'them'} with values generated from the contract "
        f"(stub it: `stub agent {generated[0]} returns …`)"
    )
    return [failures[0] + note, *failures[1:]]


def _stage_values(
    shown: str, staged: dict[str, Any], ran: dict[str, Any], result: Any, errors: dict[str, str]
) -> dict[str, Any]:
    """Each stage's value (``{name: value}``), rendered from its template over ``ran`` (the
    run's input and its top-level steps' results).  A stage whose value cannot be computed (a
    pure stage no step reads, whose expression fails: the run never computed it either) has
    none; ``errors[name]`` says why, at the stage's value in the `.flow`."""
    decls = {s.name.name: s for s in result.stages}
    values = {}
    for name, template in staged.items():
        try:
            values[name] = render_value(template, ran)
        except RunError as e:
            decl = decls.get(name)
            last = decl.body.stmts[-1] if decl is not None and decl.body.stmts else None
            span = (
                last.value.span if isinstance(last, ast.ReturnStmt) else getattr(decl, "span", None)
            )
            where = f" (at {_where(shown, span)})" if span is not None else ""
            errors[name] = f"the stage `{name}` failed with {e.code}: {e.message}{where}"
    return values


#: the comparisons an expectation's failure explains operand by operand
_EXPLAINED = ("==", "!=", "<", "<=", ">", ">=", "in")


def _check_expect(
    shown: str,
    exp: Any,
    scope: dict[str, Any],
    ran: bool,
    text: str,
    result: Any,
    stage_errors: dict[str, str] | None = None,
) -> list[str]:
    source = text[exp.cond.span.start : exp.cond.span.end]
    head = f"{_where(shown, exp.span)}: expect {source}"
    # read as a stage reads: an absent optional field is null (docs/reference/types.md)
    cond = absent_reads_null(exp.cond, result)
    try:
        value = evaluate(cond, scope)
    except RunError as e:
        why = e.message
        if not ran:
            why += " (the run failed: `output` and the stages have no value)"
        errors = stage_errors or {}
        failed = [
            errors[n.name]
            for n in ast.walk(exp.cond)
            if isinstance(n, ast.Name) and n.name in errors
        ]
        if failed:
            why = failed[0]
        return [f"{head}\n    could not be evaluated: {why}"]
    if value is True:
        return []
    # explained from the condition as written: its operands read one by one, so a comparison
    # the compiler wrote by length (`seconds(output) == seconds("3m")`) shows `output` and the
    # durations' texts, never the rewrite's seconds (docs/reference/testing.md)
    original = exp.cond
    if isinstance(original, ast.Binary) and original.op in _EXPLAINED:
        try:
            left = evaluate(absent_reads_null(original.left, result), scope)
            right = evaluate(absent_reads_null(original.right, result), scope)
        except RunError:  # pragma: no cover - the whole evaluated
            return [f"{head}\n    is false"]
        lsrc = text[original.left.span.start : original.left.span.end]
        rsrc = text[original.right.span.start : original.right.span.end]
        if not any(isinstance(n, ast.Name) for n in ast.walk(original.right)):
            lines = [f"actual ({lsrc}): {_show(left)}", f"expected: {_show(right)}"]
        else:
            lines = [f"{lsrc}: {_show(left)}", f"{rsrc}: {_show(right)}"]
        return [head + "".join("\n    " + line for line in lines)]
    return [f"{head}\n    is {_show(value)}"]


class _Unused(str):
    """A table test's case failure that only says a stub was not used in that case: it stands
    only when no case of the table used the stub (:func:`_unused_across_cases`); it reads as
    its message wherever it goes."""

    __slots__ = ()


def _unused_across_cases(
    pending: list[tuple[Any, list[Any]]], outcomes: list[TestOutcome]
) -> list[TestOutcome]:
    """``outcomes`` (in the order of ``pending``'s runs) with each table test's "never used"
    failures decided over the whole table: a case that routes elsewhere need not reach every
    stub (one stub per branch is how a routing table is tested), so a stub is reported unused
    only when no case of the table used it, and then in every case."""
    out: list[TestOutcome] = []
    i = 0
    for _test, group in pending:
        mine = outcomes[i : i + len(group)]
        i += len(group)
        marked = [{f for f in o.failures if isinstance(f, _Unused)} for o in mine]
        common = set.intersection(*marked) if marked else set()
        for o, unused in zip(mine, marked, strict=True):
            if not unused:
                out.append(o)
                continue
            kept = [f for f in o.failures if f not in unused or f in common]
            kept = [str(f) for f in kept]
            out.append(replace(o, failures=kept, passed=not kept))
    return out


#: why a stub of each kind was not used (a stub's kind is `stub KIND NAME`)
_UNUSED = dict(
    agent="no call of the agent `{name}` reached it",
    stage="no agent of stage `{name}` was called",
    tool="the tool `{name}` was not called",
    ask="no `ask` it answers was reached",
    step="the step `{name}` did not run",
)


def _unconsumed(shown: str, every: list[Answers], stage_values: dict[str, Answers]) -> list[str]:
    """A failure for each stub no call consumed in a run that finished (issue 36: a stub the
    run ignored must not pass silently), saying what answered instead when it can tell."""
    out = []
    for answers in every:
        if answers.calls:
            continue
        stub = answers.stub
        name = stub.written
        why = _UNUSED[stub.kind].format(name=name)
        if stub.kind == "agent" and stage_values:
            stubbed = ", ".join(f"`stub stage {s}`" for s in stage_values)
            why += f" (a {stubbed} answers the agents of its stage first)"
        out.append(
            f"{_where(shown, stub.span)}: `stub {stub.kind} {name}` was never used: {why}; "
            "remove the stub, or change the test's input so the run reaches it"
        )
    return out


def _route_stubs(
    data: dict[str, Any],
    agent_values: dict[str, Any],
    stage_values: dict[str, Any],
    answers: dict[str, Answers],
    env: Any,
) -> None:
    """Point every stubbed agent step of plan ``data`` (sub-plans included) at a stub client:
    its ``model`` becomes ``flowc-test-stub:<n>`` and ``answers[that]`` the value. An agent
    stub is found by the ``use`` alias the step was written with (``meta.agent``); ``env``
    (the flow's named types) tells a wrapped contract from a named object type."""

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("tool_name") == "agent" and isinstance(node.get("input"), dict):
                inp = node["input"]
                meta = node.get("meta") or {}
                alias = meta.get("agent")
                stage = meta.get("stage")
                # an `expect` that is not a named object type is wrapped as `{ value: T }`
                # (LANGUAGE.md §10): the stub answers the wrapped value (a `:value` key). The
                # `select` cannot tell: the compiler may fold what follows into it
                # (`{{ (result.output.value).ok }}`)
                wrapped = ":value" if expect_is_wrapped(str(meta.get("expect")), env) else ""
                if stage in stage_values:
                    key = f"{_STUB_PREFIX}stage:{stage}{wrapped}"
                    answers[key] = stage_values[stage]
                    inp["model"] = key
                elif alias in agent_values:
                    key = f"{_STUB_PREFIX}agent:{alias}{wrapped}"
                    answers[key] = agent_values[alias]
                    inp["model"] = key
            for v in node.values():
                visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)

    visit(data)


class Answers:
    """The answers of one stub, in call order: one answer answers every call; several answer
    the calls in turn, and a call after the last adds a message to ``problems`` (the test
    fails) and raises ``RunError(aborted)``, which stops the run."""

    def __init__(self, stub: Any, values: list[Any], shown: str, problems: list[str]) -> None:
        self.stub, self.values, self.shown, self.problems = stub, values, shown, problems
        self.calls = 0

    @classmethod
    def of(
        cls, stub: Any, case: dict[str, Any], shown: str, problems: list[str], result: Any
    ) -> Answers:
        """The evaluated answers of ``stub`` (``case``: a parametrised test's binding; fields
        read as a stage reads them, ``result`` the check that typed them)."""
        exprs = list(stub.values) or ([stub.value] if stub.value is not None else [])
        values = [
            e if isinstance(e, ast.StubFails) else evaluate(absent_reads_null(e, result), case)
            for e in exprs
        ]
        return cls(stub, values, shown, problems)

    def next(self) -> Any:
        """The answer to the next call (a fresh copy); an answer ``fails "code"`` raises
        ``RunError(code)`` saying the failure is stubbed (an agent's, as a real one, is then
        placed at the agent step: ``err.where.agent``, ``err.where.stage``, …)."""
        self.calls += 1
        if len(self.values) == 1:
            value = self.values[0]
        elif self.calls <= len(self.values):
            value = self.values[self.calls - 1]
        elif getattr(self.stub, "always", False):  # `… then always V`: V answers every later call
            value = self.values[-1]
        else:
            stub = self.stub
            message = (
                f"{_where(self.shown, stub.span)}: `stub {stub.kind} {stub.written}` gives "
                f"{len(self.values)} answers; call {self.calls} has none left"
            )
            self.problems.append(message)
            raise RunError(Code.ABORTED, message)
        if isinstance(value, ast.StubFails):
            stub = self.stub
            name = stub.target.name
            what = {"agent": f"the agent `{name}`", "stage": f"an agent of stage `{name}`"}
            raise RunError(
                value.code,
                f"stubbed failure of {what.get(stub.kind, f'`{name}`')} "
                f"({_where(self.shown, stub.span)})",
            )
        return json.loads(json.dumps(value))

    def held_to(self, value: Any, contract: tuple[dict[str, Any], str]) -> None:
        """Fail the test when ``value`` (the answer just given) breaks ``contract``: ``(schema,
        what it is)``, the step's own (``result_schema``, an ``ask``'s or agent's ``expect``)."""
        schema, what = contract
        errors = validate(schema, value)
        if errors:
            try:
                found = mismatch_lines(schema, value, root="answer", what=what, limit=3)
            except (ValueError, RecursionError):  # no usable schema: `validate` said how
                found = []
            self.off_contract(found or errors, what)

    def off_contract(self, errors: list[str], what: str = "the agent's `expect`") -> None:
        """Fail the test: the answer just given breaks the step's contract, ``what`` (``errors``:
        the validation's). A real answer off contract would be repaired; a stub is not, as
        repairing it would replace the stub by the test model's answer."""
        stub = self.stub
        which = f"answer {self.calls}" if len(self.values) > 1 else "its answer"
        message = (
            f"{_where(self.shown, stub.span)}: `stub {stub.kind} {stub.written}` does not fit "
            f"{what} ({which}): {'; '.join(errors[:3])}; a stub is never repaired: "
            'write an answer the contract accepts, or stub `fails "output_validation"` to test '
            "an answer that cannot be made to conform"
        )
        self.problems.append(message)
        raise RunError(Code.ABORTED, message)


def _named_caller(tool: Any, what: str) -> Any:
    """``tool`` running with ``what`` as the guard's name for it."""
    import dataclasses

    inner = tool.func

    async def func(args: dict[str, Any], ctx: Any) -> Any:
        token = CALLER.set(what)
        try:
            return await inner(args, ctx)
        finally:
            CALLER.reset(token)

    return dataclasses.replace(tool, func=func)


def _user_tools(config: Any) -> dict[str, Any]:
    """The ``user__*`` tools of the ``flow.toml``'s ``[tools] modules`` (they run in tests,
    under the network guard; entry points are not loaded)."""
    modules = list(getattr(getattr(config, "tools", None), "modules", []) or [])
    if not modules:
        return {}
    tools = load_user_tools(modules, base_dir=config.base_dir(), entry_points=False)
    return {t.name: _named_caller(t, f"tool `{t.name}`") for t in tools}


def _unstubbed_tool(Tool: Any, RunError: Any, name: str, plan_name: str) -> Any:
    async def refuse(args: dict[str, Any], ctx: Any) -> Any:
        raise RunError(
            Code.TOOL_ERROR,
            f"tool `{name}` is not stubbed and tests run without network, MCP servers or user "
            f'tools: add `stub tool {name} returns …` (or `fails "code"`) to the test',
        )

    return Tool(plan_name, f"unstubbed {name}", {"type": "object"}, refuse, source="test-stub")


def _stub_router(config: Any, answers: dict[str, Answers], replay: Any = None) -> Any:
    """A model router: stubbed agents answer their stubs, the others the cassette ``replay``
    (a ``ReplayClient``) when given, else the test model (seed 0)."""

    class StubModel:
        """A model client answering a stub's answers in turn, whatever the request."""

        def __init__(self, answers: Answers, wrapped: bool) -> None:
            self.answers, self.wrapped = answers, wrapped

        async def chat(self, request: Any) -> Any:
            usage = {"input_tokens": 0, "output_tokens": 0}
            value = self.answers.next()
            text = json.dumps({"value": value} if self.wrapped else value, ensure_ascii=False)
            if request.response_schema:  # a stub is held to the contract, never repaired
                _, errors, _ = check_answer(text, _as_checked(request.response_schema))
                if errors:
                    self.answers.off_contract(errors)
            return ChatResponse(text=text, usage=usage, model="stub")

        async def aclose(self) -> None:
            """Nothing to close."""

    def resolved(label: str) -> Any:
        return ResolvedModel(
            label=label, provider_name="test", provider=ProviderConfig(kind="test"), model=label
        )

    generated = TestModel(0)

    class Router(ModelRouter):
        def client_for(self, role_or_name: str | None = None) -> RoutedClient:
            name = role_or_name or "chat"
            if name not in self._routed:
                if name in answers:
                    client: Any = (
                        resolved("stub"),
                        StubModel(answers[name], name.endswith(":value")),
                    )
                elif replay is not None:
                    client = (resolved("replay"), replay)
                else:
                    client = (resolved(_GENERATED), generated)
                self._routed[name] = RoutedClient(self, name, [client])
            return self._routed[name]

    return Router(config)


_StubRouter = _stub_router
#: the model label of a call the built-in test model answered in a test (not a stub or replay)
_GENERATED = "test"


def _as_checked(schema: Any) -> Any:
    """The contract an answer is checked against, from the one the model is shown: a
    ``member`` node's ``enum`` of the team's members is shown, not checked (a member outside
    the team fails ``invalid_member`` where it is routed; ``agent_step.with_member_choices``)."""
    if isinstance(schema, list):
        return [_as_checked(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _as_checked(value) for key, value in schema.items()}
    if schema.get("x-flow-type") == "member":
        out.pop("enum", None)
    return out
