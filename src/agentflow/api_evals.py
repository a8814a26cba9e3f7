"""The api of evaluations and tests: a `.flow` checked with its eval datasets, evaluated on
them, compared with a baseline, its ``test`` blocks run and its outcomes explored
(docs/reference/evals.md, docs/reference/testing.md).  :mod:`agentflow.api` re-exports every
public name here.

This module loads the evaluation runner and the test runner, and with them the runtime
(docs/decisions.md "The api split by what it loads").
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentflow.api_compile import _fspath
from agentflow.compiler.api import check_file
from agentflow.compiler.checker import CheckResult
from agentflow.core.text import json_error
from agentflow.errors import ConfigError
from agentflow.evals.html import build_page
from agentflow.evals.report import EvalReport, check_baseline, compare
from agentflow.evals.runner import (
    EvalTrace,
    ResponseCache,
    dataset_diagnostics,
    prepare,
    run_eval,
)
from agentflow.flowexplore import ExploreReport
from agentflow.flowexplore import explore as run_explore
from agentflow.flowtest import TestReport
from agentflow.flowtest import run_tests as run_all
from agentflow.flowtest import run_tests_async as run_all_async
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.config import (
    Config,
    load_config,
    missing_key_message,
)
from agentflow.runtime.interrupt import run as run_loop
from agentflow.runtime.model_needs import plan_model_refs, plan_model_refusal, plan_needs_model
from agentflow.runtime.telemetry_settings import TelemetrySettings, settings_for

__all__ = [
    "check",
    "compare_eval",
    "read_baseline",
    "interrupted_report",
    "eval_datasets_check",
    "eval_page",
    "evaluate",
    "evaluate_async",
    "explore",
    "run_tests",
    "run_tests_async",
]


def check(path: str | os.PathLike[str]) -> CheckResult:
    """Parse and type-check the `.flow` file at ``path``.

    Never raises for the file's content (every problem is a diagnostic); raises ``OSError`` when
    the file cannot be read. The datasets its ``eval`` blocks name are checked too
    (:func:`eval_datasets_check`).
    """
    result = check_file(path)
    if result.ok and result.evals:
        result.diagnostics.extend(eval_datasets_check(result, str(path))[0])
    return result


def run_tests(
    paths: str | os.PathLike[str] | list[str | os.PathLike[str]],
    pattern: str | None = None,
    fail_fast: bool = False,
    *,
    on_outcome: Callable[[Any], Any] | None = None,
    jobs: int = 1,
    cache: str | os.PathLike[str] | None = None,
) -> TestReport:
    """Run the ``test`` blocks of the `.flow` files under ``paths`` (files or directories,
    searched recursively) hermetically and return a :class:`agentflow.flowtest.TestReport`
    (docs/reference/testing.md).

    Stubbed agents answer their stub, other agents the built-in test model (or the test's
    ``replay`` cassette); stubbed tools return (or fail with) their stub, other builtin file
    tools run in the file's directory, Python tools of ``[tools] modules`` run, and any other
    tool fails the test naming the stub to add; an httpx request to another machine fails the
    test that made it: no request leaves the process.
    ``pattern`` keeps the tests whose name contains it (or matches it as a glob);
    ``fail_fast`` stops after the first failure; ``on_outcome(outcome)`` is called as each test
    ends. A file that does not check is one failed outcome with its diagnostics; this function
    does not raise for mistakes in `.flow` files. Synchronous (it runs its own event loop):
    inside a running event loop (``asyncio.run(main())``, Jupyter, pytest-asyncio) it raises
    ``RuntimeError`` naming :func:`run_tests_async`, the same with ``await``.
    ``jobs``: tests run at once; ``cache``: a directory remembering passed tests, so an
    unchanged file's tests are reported as cached passes (``flowc test`` uses ``.flowc-cache``).
    """
    return run_all(paths, pattern, fail_fast, on_outcome=on_outcome, jobs=jobs, cache=cache)


async def run_tests_async(
    paths: str | os.PathLike[str] | list[str | os.PathLike[str]],
    pattern: str | None = None,
    fail_fast: bool = False,
    *,
    on_outcome: Callable[[Any], Any] | None = None,
    jobs: int = 1,
    cache: str | os.PathLike[str] | None = None,
) -> TestReport:
    """:func:`run_tests` for async code, on the caller's event loop (``await
    agentflow.run_tests_async(paths)`` in ``asyncio.run(main())``, Jupyter or pytest-asyncio):
    the same options and :class:`agentflow.flowtest.TestReport`, the same network guard (while
    it runs, an httpx request to another machine from any task of the process fails);
    docs/reference/python-api.md "Functions"."""
    return await run_all_async(
        paths, pattern, fail_fast, on_outcome=on_outcome, jobs=jobs, cache=cache
    )


async def evaluate_async(
    flow: str | os.PathLike[str],
    datasets: list[str | os.PathLike[str]] | None = None,
    *,
    eval_name: str | None = None,
    config: Config | str | os.PathLike[str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
    models: list[str] | None = None,
    model: str | None = None,
    replay: str | os.PathLike[str] | None = None,
    repeat: int = 1,
    concurrency: int = 4,
    timeout: float | None = None,
    cache: str | os.PathLike[str] | None = ".flowc-cache",
    on_run: Callable[[Any], Any] | None = None,
    telemetry: bool | str | None = None,
    tracer_provider: Any = None,
) -> Any:
    """Evaluate ``flow`` on its datasets and return an :class:`agentflow.evals.EvalReport`
    (docs/reference/evals.md).

    - ``datasets``: JSON Lines / YAML / JSON files of cases (default: the eval block's
      ``dataset`` files, relative to the `.flow`); ``eval_name``: the eval block (default: the
      only one);
    - ``config``: ``flow.toml`` (default: the nearest from the `.flow`'s directory upward,
      docs/reference/configuration.md "Which flow.toml"); ``workspace``: the file tools' root (default: the `.flow`'s directory);
    - ``models``: named models (``[models.named]``) to compare: every model call of the flow is
      answered by each in turn; ``model``: ``"test"`` (the test model, as ``flowc run --model
      test``); ``replay``: answer every request from a cassette;
    - ``repeat``: runs per case (variance, pass^k); ``concurrency``: case runs at once;
      ``timeout``: seconds a case run may take (then its status is ``timeout``);
    - ``cache``: the directory of the answer cache (``eval/`` below it; None: no cache);
    - ``on_run(case_run)``: called as each case run is scored;
    - ``telemetry``: as :func:`run`'s — export one ``eval`` span with a span per case run and,
      under each, the run's spans (docs/observability.md); ``tracer_provider``: a host's
      OpenTelemetry TracerProvider to export with instead (turns telemetry on).

    Never raises for a mistake in the `.flow` or a dataset: the report's ``diagnostics`` hold
    them and nothing runs (no model request is sent). Raises :class:`ConfigError` when the flow
    needs a model and none is configured (or a ``models`` name is unknown).
    """
    if repeat < 1 or concurrency < 1:
        raise ConfigError("repeat and concurrency are at least 1")
    prepared = prepare(flow, [str(d) for d in datasets or []], eval_name)
    if not prepared.ok:
        return EvalReport(
            flow=str(flow),
            name=prepared.block.node.name if prepared.block is not None else (eval_name or ""),
            diagnostics=prepared.diagnostics,
            sources=prepared.sources,
        )
    here = Path(flow).parent
    if not isinstance(config, Config):
        config = load_config(_fspath(config), near=flow)
    if model is None and replay is None:
        for name in models or []:
            config.resolve(name)  # an unknown name is a ConfigError now, not in every case
        judged = "judge" in prepared.block.kinds.values()
        plan = load_plan_data(prepared.plan, str(flow))
        if judged or plan_needs_model(plan):
            # run's check (every agent naming its own `[agents.NAME] model` is enough)
            refused = None if models else plan_model_refusal(config, plan, judged=judged)
            if refused is not None:
                raise ConfigError(refused)
            # every provider the agents use (`--models` runs them on those instead)
            refs = ("chat",) if models else plan_model_refs(config, plan)
            missing = missing_key_message(config, refs)
            if missing:
                raise ConfigError(missing)

    settings = settings_for(config, telemetry) if telemetry is not False else None
    if settings is None and tracer_provider is not None:
        settings = TelemetrySettings()
    trace = None
    if settings is not None:
        trace = EvalTrace(settings, tracer_provider, prepared.block.node.name, str(flow))
    report = await run_eval(
        prepared,
        config=config,
        workspace=Path(workspace) if workspace is not None else here,
        models=models,
        model=model,
        replay=replay,
        repeat=repeat,
        concurrency=concurrency,
        timeout_s=timeout,
        cache=ResponseCache(Path(cache) / "eval") if cache is not None else None,
        on_run=on_run,
        trace=trace,
    )
    report.diagnostics = prepared.diagnostics  # warnings
    report.sources = prepared.sources
    return report


def evaluate(flow: str | os.PathLike[str], datasets: Any = None, **kwargs: Any) -> Any:
    """:func:`evaluate_async` for synchronous callers (``flowc eval``): its own event loop,
    where SIGINT/SIGTERM stop it gracefully."""
    return run_loop(
        evaluate_async(flow, datasets, **kwargs),
        name="agentflow.evaluate()",
        instead="`await agentflow.api.evaluate_async(...)`",
    )


def interrupted_report(stopped: BaseException) -> EvalReport | None:
    """The :class:`~agentflow.evals.EvalReport` an :func:`evaluate` stopped by SIGINT /
    SIGTERM returned (``Interrupted.result``: the finished case runs, the others ``aborted``;
    docs/reference/evals.md "Comparing and gating"), or None (stopped before it had one, or not
    an evaluation's stop)."""
    result = getattr(stopped, "result", None)
    return result if isinstance(result, EvalReport) else None


def read_baseline(baseline: str | os.PathLike[str]) -> dict[str, Any]:
    """The data of the ``--json`` report file ``baseline`` (docs/reference/evals.md
    "Baselines"), checked for the shape :func:`compare_eval` reads. ``flowc eval --baseline``
    reads it before any case runs, so a wrong file costs no inference. Raises
    :class:`ConfigError` when the file cannot be read or is not an eval report."""
    try:
        text = Path(baseline).read_text(encoding="utf-8")
        if not text.strip():  # `--json > base.json` of a run that failed, or a placeholder
            raise ConfigError(
                f"{baseline}: not a baseline: the file is empty"
                f"\nhint: write one with `flowc eval FILE --json > {baseline}`"
            )
        return check_baseline(json.loads(text))
    except OSError as e:
        raise ConfigError(f"{baseline}: cannot read the baseline: {e.strerror or e}") from None
    except json.JSONDecodeError as e:  # where, in words: `line 1, column 6` (as --input says it)
        raise ConfigError(
            f"{baseline}:{e.lineno}:{e.colno}: not a baseline: not valid JSON "
            f"({json_error(e).lower()} at line {e.lineno}, column {e.colno})"
        ) from None
    except (ValueError, RecursionError) as e:
        raise ConfigError(f"{baseline}: not a baseline: {e}") from None


def compare_eval(report: Any, baseline: str | os.PathLike[str] | dict[str, Any]) -> Any:
    """Compare an :class:`~agentflow.evals.EvalReport` with the ``--json`` file ``baseline``
    (or its data, from :func:`read_baseline`): an :class:`agentflow.evals.Comparison` (the cases
    whose scores changed, regressions and improvements, per-scorer deltas with a note on noise,
    ``compared``: how many case/model/scorer scores both have, ``warnings``: a baseline of
    another flow or eval block). Raises :class:`ConfigError` when the file cannot be read or is
    not an eval report."""
    data = baseline if isinstance(baseline, dict) else read_baseline(baseline)
    try:
        return compare(report, data)
    except ValueError as e:
        raise ConfigError(f"not a baseline: {e}") from None


def eval_page(report: Any, comparison: Any = None) -> str:
    """The HTML page of an eval (one self-contained file, the run report's look): the scorers'
    table, every case run with its scores, and one click from each its run's conversation."""
    return build_page(report, comparison)


def eval_datasets_check(result: CheckResult, file: str) -> tuple[list[Any], dict[str, str]]:
    """The problems of the datasets the ``eval`` blocks of the checked flow ``result`` (of the
    `.flow` ``file``) name, each at its line and column in the dataset (docs/reference/evals.md
    "Datasets"), and the datasets' texts by file name (for rendering). ``flowc check`` and
    :func:`check` report them; a block naming no dataset adds nothing."""
    diagnostics: list[Any] = []
    sources: dict[str, str] = {}
    for block in result.evals:
        if block.node.datasets:
            _, found, texts = dataset_diagnostics(result, file, block, [])
            diagnostics.extend(found)
            sources.update(texts)
    return diagnostics, sources


def explore(path: str | os.PathLike[str], runs: int) -> ExploreReport:
    """``flowc test --explore``: run the flow at ``path`` ``runs`` times with generated answers
    and report the outcomes (docs/reference/testing.md "Exploring").  Never raises for a
    mistake in the file."""
    return run_explore(path, runs)
