"""`flowc eval`: a flow's `eval` block run over its datasets (:func:`agentflow.api.evaluate`,
docs/reference/evals.md)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import click

from agentflow import api
from agentflow.cli.common import (
    Styled,
    _err,
    _fail,
    _otel_endpoint,
    _out,
    _render,
    _telemetry_option,
    _with_sources,
    _write_or_echo,
    checked_model,
    error_text,
    given_files,
    no_such,
)
from agentflow.core.redaction import redact, redact_data
from agentflow.core.text import finite_dumps, visible
from agentflow.errors import ConfigError, FlowError, Interrupted

#: exit codes (as every command's: 1 when the input has errors): a gate failed (scores under
#: --fail-under, a regression with --fail-on-regression); the flow or a dataset does not check
GATE_FAILED = 1
NOT_CHECKED = 1


def _models(value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise click.BadParameter("name at least one model: --models a,b")
    return names


def _fraction(value: str | None) -> float | None:
    if value is None:
        return None
    text = value.strip()
    try:
        x = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a fraction (0.8) or a percentage (80%)"
        ) from None
    if not 0 <= x <= 1:
        raise click.BadParameter(f"{value!r} is not between 0 and 1 (0% and 100%)")
    return x


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    # FloatRange lets `nan` through (every comparison with it is false) and `inf` means none
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number of seconds", ctx, param)
    return value


def _write(path: str, text: str, what: str) -> str | None:
    """Write ``text`` to ``path``; the problem, in words, when it cannot be written."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        return f"cannot write the {what} to {path}: {e.strerror or e}"
    return None


@click.command("eval")
@click.argument("flow", type=click.Path(dir_okay=False))
@click.argument("datasets", nargs=-1, type=click.Path(dir_okay=False), callback=given_files)
@click.option("--eval", "eval_name", help="The eval block to run (when the flow has several).")
@click.option(
    "--config", type=click.Path(dir_okay=False), callback=given_files, help="flow.toml to use."
)
@click.option("--models", "models", help="Named models to compare: every model call of the flow "
              "is answered by each in turn (--models fast,smart).")  # fmt: skip
@click.option("--model", "model", callback=checked_model,
              help='"test": answer every agent with the built-in test model.')  # fmt: skip
@click.option("--replay", type=click.Path(dir_okay=False), callback=given_files, help="Answer every model request "
              "from this cassette.")  # fmt: skip
@click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Runs per case (variance, pass^k).")  # fmt: skip
@click.option("-j", "--concurrency", type=click.IntRange(1, 256), default=4, show_default=True,
              help="Case runs at once.")  # fmt: skip
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), callback=_finite,
              help="Seconds a case run may take (then it is a failed run, status timeout).")  # fmt: skip
@click.option("--no-cache", is_flag=True, help="Send every model request (the answer cache in "
              ".flowc-cache/eval is neither read nor written).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (a later "
              "--baseline).")  # fmt: skip
@click.option("--save", type=click.Path(dir_okay=False), help="Write the JSON report here (a "
              "later --baseline).")  # fmt: skip
@click.option("--junit", type=click.Path(dir_okay=False), help="Write JUnit XML here.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False),
              help="Write the HTML page here.")  # fmt: skip
@click.option("--baseline", type=click.Path(dir_okay=False), callback=given_files,
              help="An earlier --json report: list the cases whose scores changed.")  # fmt: skip
@click.option("--fail-under", "fail_under", help="Exit 1 when a scorer's pass rate (of any "
              "model) is under this (0.8 or 80%).")  # fmt: skip
@click.option("--otel", is_flag=False, flag_value="on", default=None, metavar="[ENDPOINT]",
              callback=lambda ctx, param, value: _otel_endpoint(value),
              help="Export the eval as OpenTelemetry spans: one eval span, a span per case run, "
              "the run's spans under it.")  # fmt: skip
@click.option("--no-otel", is_flag=True, help="Do not export, even when flow.toml says so.")
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when a case scores lower than "
              "in --baseline.")  # fmt: skip
def eval_cmd(
    flow: str,
    datasets: tuple[str, ...],
    eval_name: str | None,
    config: str | None,
    models: str | None,
    model: str | None,
    replay: str | None,
    repeat: int,
    concurrency: int,
    timeout: float | None,
    no_cache: bool,
    as_json: bool,
    save: str | None,
    junit: str | None,
    html_out: str | None,
    baseline: str | None,
    fail_under: str | None,
    otel: str | None,
    no_otel: bool,
    fail_on_regression: bool,
) -> None:
    """Run FLOW's `eval` block over its datasets (or DATASETS: JSON Lines, YAML or JSON files of
    cases) and report every scorer: per model its mean and pass rate (pass^k with --repeat), the
    worst cases with their reasons. The datasets are checked against the flow's types first: a
    bad case is a diagnostic at its line and nothing runs. Model answers are cached in
    .flowc-cache/eval: an unchanged rerun sends no request. Exit code 0; 1 when a gate fails
    (--fail-under, --fail-on-regression), and 1 too when the flow or a dataset does not check
    (nothing runs then)."""
    threshold = _fraction(fail_under)
    if sum(x is not None for x in (models, model, replay)) > 1:
        raise click.UsageError("give one of --models, --model and --replay")
    if fail_on_regression and baseline is None:
        raise click.UsageError("--fail-on-regression needs --baseline FILE")
    if not Path(flow).is_file():
        raise no_such(flow)

    def progress(run: Any) -> None:
        if as_json:
            return
        mark = "pass" if run.passed else "FAIL"
        if sys.stderr.isatty():
            mark = click.style(mark, fg="green" if run.passed else "red")
        repeat_mark = f" #{run.repeat + 1}" if repeat > 1 else ""
        _err(Styled(f"  {visible(run.case)}{repeat_mark} [{visible(run.model)}] {mark}"))

    interrupted: Interrupted | None = None
    try:
        # read before any case runs: a wrong baseline file costs no inference
        baseline_data = api.read_baseline(baseline) if baseline is not None else None
        report = api.evaluate(
            flow,
            list(datasets),
            eval_name=eval_name,
            config=config,
            models=_models(models),
            model=model,
            replay=replay,
            repeat=repeat,
            concurrency=concurrency,
            timeout=timeout,
            cache=None if no_cache else ".flowc-cache",
            on_run=progress,
            telemetry=_telemetry_option(otel, no_otel),
        )
    except ConfigError as e:
        if "no model is configured" in str(e) and model is None and replay is None:
            # an eval is often tried before any model is set up: say how to run it offline
            _err(error_text(e))
            _err("  = hint: `flowc eval FLOW --model test` runs it offline with made-up answers")
            sys.exit(1)
        _fail(e)
    except FlowError as e:
        _fail(e)
    except Interrupted as e:  # Ctrl-C / SIGTERM: the case runs wound down; show what finished
        stopped_report = api.interrupted_report(e)
        if stopped_report is None:
            raise
        report, interrupted = stopped_report, e
    if report.errors:
        _err(_render(report.diagnostics, _with_sources(report.diagnostics, report.sources), "text"))
        sys.exit(NOT_CHECKED)
    try:
        comparison = api.compare_eval(report, baseline_data) if baseline_data is not None else None
    except ConfigError as e:
        _fail(e)
    if as_json:
        data = report.to_dict()
        if comparison is not None:
            data["baseline"] = comparison.to_dict()
            for warning in comparison.warnings:
                _err(f"warning: {warning}")
        _write_or_echo(
            finite_dumps(redact_data(data), indent=2, ensure_ascii=False, default=str) + "\n", None
        )
    else:
        _out(redact(report.to_text()), nl=False)
        if comparison is not None:
            _out(comparison.to_text(), nl=False)
    # the files after the report is shown: a file that cannot be written loses nothing shown
    unwritten = [
        problem
        for problem in (
            save and _write(save, report.to_json(), "report"),  # redacted (EvalReport.to_json)
            junit and _write(junit, redact(report.to_junit()), "JUnit XML"),
            html_out and _write(html_out, redact(api.eval_page(report, comparison)), "HTML page"),
        )
        if problem
    ]
    for problem in unwritten:
        _err(f"error: {problem}")
    if interrupted is not None:  # no gate judges a stopped eval: the exit code is the signal's
        stopped = sum(r.status == "aborted" for r in report.runs)
        _err(
            f"interrupted by {interrupted.signal}: {len(report.runs) - stopped} case run(s) "
            f"finished, {stopped} stopped (status aborted)"
        )
        sys.exit(interrupted.exit_code)
    failed = []
    if threshold is not None:
        for s in report.summaries():
            if s.pass_rate is not None and s.pass_rate < threshold:
                failed.append(
                    f"{s.scorer} [{s.model}] passes {s.pass_rate * 100:.0f}%, under "
                    f"{threshold * 100:.0f}%"
                )
        if not any(s.pass_rate is not None for s in report.summaries()):
            # 0 of 0 is no pass rate: a gate that judged nothing must not pass
            failed.append("no case run was scored: --fail-under has nothing to judge")
    if fail_on_regression and comparison is not None:
        if comparison.regressions:
            failed.append(f"{len(comparison.regressions)} case(s) regressed from {baseline}")
        elif not comparison.compared:
            failed.append(
                f"no case of {baseline} was scored here: --fail-on-regression compared nothing"
            )
    for line in failed:
        _err(f"gate: {line}")
    if failed:
        sys.exit(GATE_FAILED)
    if unwritten:
        sys.exit(1)
