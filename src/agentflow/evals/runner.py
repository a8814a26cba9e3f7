"""Running an eval (docs/reference/evals.md): every case of the datasets, with each model under
test, ``repeat`` times, a few at a time, each within its time limit; then each scorer on each run.

- **Preparation** (:func:`prepare`): the `.flow` is checked, its eval block chosen, the datasets
  read and checked against the flow's input type and the type of ``expected``. Any problem is a
  diagnostic and nothing runs — no model request is sent.
- **A case run**: the flow's plan (its finish extended to hand back every stage, as ``flowc
  test`` does) runs through :func:`agentflow.api.run` with its own model router: the configured
  models, or for ``--models a,b`` every model call of the flow answered by the named model
  ``a`` (then ``b``), or the test model (``model="test"``; repetition ``k`` uses seed
  ``seed + k``), or a cassette (``replay``).
- **The cache** (:class:`ResponseCache`, in ``.flowc-cache/eval/``): every model answer is kept
  under the SHA-256 of (the model, the repetition, the request as a cassette keys it). A rerun
  sends only the requests it has not seen: nothing when nothing changed, and after a prompt
  changed only the requests of the cases that prompt reaches. An eval cut short (a crash, ^C)
  keeps every answer it got, so running it again pays only for the rest.
- **Tracing** (:class:`EvalTrace`): with telemetry on, one ``eval`` span holds a span per case
  run, under which the run exports its own spans.
- **Scoring**: a ``score`` is the expression language evaluated over ``input``, ``output``,
  ``expected``, ``usage``, ``case`` and the stages; a ``judge`` puts its rubric to the ``judge``
  role with the contract ``{ score: number 0..1, reason: text }`` (cached too).

Layer: api (it compiles and runs).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow.api_run import run
from agentflow.compiler.api import check_source, read_source
from agentflow.compiler.contracts import ContractError, contract_for
from agentflow.compiler.lower_expressions import absent_reads_null
from agentflow.compiler.lowering import LoweringError, lower_with_stages
from agentflow.core import diagnostics as D
from agentflow.core import version as core_version
from agentflow.core.diagnostics import Diagnostic
from agentflow.core.redaction import redact_data
from agentflow.core.spans import Span
from agentflow.core.text import escape_surrogates
from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, FlowError
from agentflow.evals.dataset import Case, check_cases, read_dataset
from agentflow.evals.report import DEFAULT_EVAL_NAME, CaseRun, EvalReport, ScoreResult
from agentflow.grammar import ast
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.expressions import evaluate, to_text
from agentflow.runtime.extract import ExtractionError, extract_json, validate
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.cassette import (
    ReplayRouter,
    request_key,
    response_data,
    response_from,
    response_problem,
)
from agentflow.runtime.models.router import ModelRouter, RoutedClient, test_router
from agentflow.runtime.models.test_model import parse_model_option
from agentflow.runtime.telemetry import OtelSink
from agentflow.runtime.telemetry_settings import new_tracer_provider

__all__ = ["EVAL_JUDGE_PROMPT", "EvalTrace", "Prepared", "ResponseCache", "prepare", "run_eval"]

#: the judge's instructions for a ``judge`` scorer (its rubric is the user message)
EVAL_JUDGE_PROMPT = (
    "You are a strict evaluator. Grade the answer described in the user's message against its "
    "rubric. Reply with a JSON object: score (a number from 0, entirely fails the rubric, to 1, "
    "fully meets it) and reason (one or two sentences)."
)
#: the typed verdict of a ``judge`` scorer
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string"},
    },
    "required": ["score", "reason"],
    "additionalProperties": False,
}


# ---------------------------------------------------------------------------------- the cache


class ResponseCache:
    """Model answers on disk, one JSON file per request under ``root`` (``.flowc-cache/eval``),
    keyed by the SHA-256 of ``scope`` (model and repetition) and the request's cassette key.
    Written atomically (a crash never leaves half a file); counts ``hits``."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)
        self.hits = 0
        self.stores = 0

    def key(self, scope: str, request: Any) -> str:
        return hashlib.sha256(f"{scope}\x00{request_key(request)}".encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if response_problem(data) is not None:
            return None
        self.hits += 1
        return response_from(data)

    def put(self, key: str, response: Any) -> None:
        path = self._path(key)
        text = escape_surrogates(json.dumps(redact_data(response_data(response)), sort_keys=True))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
            self.stores += 1
        except OSError:  # a cache that cannot be written only costs a rerun its requests
            pass


class _CachingClient:
    """A model client answering from the cache, else from ``inner`` (then kept)."""

    def __init__(
        self, inner: Any, cache: ResponseCache | None, scope: str, counts: dict[str, int]
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.scope = scope
        self.counts = counts

    async def chat(self, request: Any) -> Any:
        key = self.cache.key(self.scope, request) if self.cache is not None else None
        if key is not None and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.counts["cached"] += 1
                if hit.chunks and request.on_delta is not None:
                    for piece in hit.chunks:
                        request.on_delta(piece)
                return hit
        self.counts["requests"] += 1
        response = await self.inner.chat(request)
        if key is not None and self.cache is not None:
            self.cache.put(key, response)
        return response

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


def _router(
    config: Any, model: str | None, scope: str, cache: ResponseCache | None, counts: dict[str, int]
) -> ModelRouter:
    """A model router whose clients go through the cache; every call of the flow answered by
    ``model`` (a named model) when given, else by the configured roles."""
    holder: dict[str, Any] = {}

    def factory(resolved: Any) -> Any:
        inner = ModelRouter._build(holder["router"], resolved)
        return _CachingClient(
            inner, cache, f"{scope}\x00{resolved.label}\x00{resolved.model}", counts
        )

    class _EvalRouter(ModelRouter):
        def client_for(self, role_or_name: str | None = None) -> RoutedClient:
            return super().client_for(model if model is not None else role_or_name)

    router = _EvalRouter(config, client_factory=factory)
    holder["router"] = router
    return router


# ---------------------------------------------------------------------------------- preparation


@dataclass
class Prepared:
    """A flow ready to be evaluated: its text, check result, chosen eval block (a
    ``CheckedEval``), the plan data (finish extended with the stages), the cases, and the
    diagnostics that stop it (flow or datasets)."""

    file: str
    text: str = ""
    result: Any = None
    block: Any = None
    plan: dict[str, Any] | None = None
    cases: list[Case] = field(default_factory=list)
    diagnostics: list[Any] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)


def _diag(code: str, message: str, span: Any, hint: str | None = None) -> Any:
    return Diagnostic(code, message, span, [], hint, D.CODES[code].severity)


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False when the file system cannot say (a name too long, a symlink
    loop): reading it then reports why."""
    try:
        return path.is_file()
    except (OSError, RuntimeError, ValueError):
        return False


def dataset_diagnostics(
    result: Any, file: str, block: Any, datasets: list[str]
) -> tuple[list[Case], list[Any], dict[str, str]]:
    """Read and check ``datasets`` (paths; the block's own when empty) for the checked flow
    ``result`` and eval ``block``: ``(cases, diagnostics, sources)``."""
    paths: list[tuple[str, Path]] = []
    #: where the `.flow` names each dataset of its block (a missing file is reported there)
    named_at: dict[str, Span] = {}
    if datasets:
        paths = [(str(p), Path(p)) for p in datasets]
    else:
        for item in block.node.datasets:
            paths.append((str(Path(file).parent / item.path), Path(file).parent / item.path))
            named_at[paths[-1][0]] = item.path_span
    diagnostics: list[Any] = []
    cases: list[Case] = []
    sources: dict[str, str] = {}
    if not paths:
        diagnostics.append(
            _diag(
                D.INVALID_VALUE,
                f'eval "{block.node.name}" names no dataset, and none is given',
                block.node.name_span,
                hint='add `dataset "cases.jsonl"` to the eval block, or name files: '
                "`flowc eval FLOW cases.jsonl`",
            )
        )
        return cases, diagnostics, sources
    try:
        input_schema = contract_for(result.input_type, result.env)
        expected_schema = contract_for(block.expected_type, result.env)
    except ContractError as e:  # pragma: no cover - the checker refuses such types
        diagnostics.append(_diag(D.NOT_SCHEMA_GENERATABLE, str(e), Span(file, 1, 1, 1, 1)))
        return cases, diagnostics, sources
    what = "the eval's `expect` type" if block.node.expects else "the flow's output type"
    for shown, path in paths:
        if shown in named_at and not _is_file(path):
            diagnostics.append(
                _diag(
                    D.INVALID_VALUE,
                    f"no dataset file {shown!r}",
                    named_at[shown],
                    hint="a dataset's path is relative to the `.flow` file's directory; create "
                    'the file (one case per line: `{"input": …, "expected": …}`) or fix the name',
                )
            )
            continue
        ds = read_dataset(path, shown)
        found = ds.diagnostics + check_cases(
            ds.cases,
            input_schema,
            expected_schema,
            expected_what=what,
            input_name=getattr(result.input_type, "name", None),
            expected_name=getattr(block.expected_type, "name", None),
        )
        diagnostics.extend(sorted(found, key=lambda d: (d.span.line, d.span.column)))
        cases.extend(ds.cases)
        try:
            sources[shown] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            pass
    return cases, diagnostics, sources


#: the eval block of a flow that has none (docs/reference/evals.md "With no eval block"):
#: each case scored by whether the output equals its ``expected`` (``==``: canonical JSON)
DEFAULT_EVAL_SOURCE = f'\n\neval "{DEFAULT_EVAL_NAME}" {{\n  score exact = output == expected\n}}\n'


def prepare(
    flow: str | os.PathLike[str], datasets: list[str] | None = None, eval_name: str | None = None
) -> Prepared:
    """Check ``flow``, pick its eval block (``eval_name``, else the only one), read and check
    the datasets (``datasets``, else the block's ``dataset`` files). Never raises for the
    content of the files: every problem is in ``diagnostics``."""
    file = str(flow)
    out = Prepared(file)
    try:
        out.text = read_source(flow)
    except OSError as e:
        out.diagnostics.append(
            _diag(
                D.INVALID_VALUE, f"cannot read the flow: {e.strerror or e}", Span(file, 1, 1, 1, 1)
            )
        )
        return out
    out.sources[file] = out.text
    result = check_source(out.text, file)
    out.result = result
    out.diagnostics.extend(result.diagnostics)
    if not result.ok:
        return out
    if not result.evals and eval_name is None and datasets:
        # no eval block: each case is scored by `output == expected` (docs/reference/evals.md
        # "With no eval block"), the block written after the file's text so its spans stay
        default = check_source(out.text + DEFAULT_EVAL_SOURCE, file)
        if default.ok and len(default.evals) == 1:
            result = out.result = default
            out.text = out.text + DEFAULT_EVAL_SOURCE  # the digest measures the scorer too
    blocks = result.evals
    if eval_name is not None:
        blocks = [b for b in blocks if b.node.name == eval_name]
    if len(blocks) != 1:
        names = ", ".join(f'"{b.node.name}"' for b in result.evals)
        if not result.evals:
            why = "this flow has no eval block"
        elif eval_name is not None:
            why = f'no eval block is named "{eval_name}" (its eval blocks: {names})'
        else:
            why = f"the flow has several eval blocks: choose one with --eval NAME ({names})"
        if not result.evals and not datasets:
            why = "this flow has no eval block, and no dataset is given"
        out.diagnostics.append(
            _diag(
                D.INVALID_VALUE,
                why,
                Span.at(file) if not result.evals else Span(file, 1, 1, 1, 1),
                hint="give the cases (`flowc eval FLOW cases.jsonl`: each scored by `output == "
                "expected`), or add an eval block to the flow, e.g. "
                '`eval "quality" { dataset "cases.jsonl"  score exact = output == expected }` '
                "(each on its own line; docs/reference/evals.md)"
                if not result.evals
                else None,
            )
        )
        return out
    out.block = blocks[0]
    cases, diagnostics, sources = dataset_diagnostics(result, file, out.block, datasets or [])
    out.cases = cases
    out.diagnostics.extend(diagnostics)
    out.sources.update(sources)
    if not out.ok:
        return out
    try:
        plan, stages = lower_with_stages(result, file=file, source=out.text)
    except LoweringError as e:
        out.diagnostics.append(_diag(D.UNSUPPORTED_CONSTRUCT, e.message, e.span))
        return out
    plan["finish"] = {
        "mode": "output",
        "output": {"output": plan["finish"]["output"], "stages": stages},
    }
    out.plan = plan
    return out


def flow_digest(prepared: Prepared) -> str:
    """SHA-256 of the compiled plan and the eval block's text: what the report's ``digest``
    says was measured."""
    node = prepared.block.node
    block_text = prepared.text[node.span.start : node.span.end]
    data = json.dumps(prepared.plan, sort_keys=True, default=str) + "\x00" + block_text
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


# ---------------------------------------------------------------------------------- tracing


class EvalTrace:
    """OpenTelemetry spans of an eval: one ``eval NAME`` span, under it one ``eval case NAME``
    span per case run (model, repetition, scores, passed), and under that the run's own spans
    (an :class:`~agentflow.runtime.telemetry.OtelSink` continuing the case span's
    ``traceparent``). ``provider``: a host's TracerProvider (not shut down), else one exporting
    to ``settings.endpoint`` (shut down, so flushed, by :meth:`close`)."""

    def __init__(self, settings: Any, provider: Any, name: str, flow: str):
        self.settings = settings
        self.owned = provider is None
        if provider is None:
            provider = new_tracer_provider(settings)
        self.provider = provider
        self.tracer = provider.get_tracer("agentflow.eval", core_version.__version__)
        self.root = self.tracer.start_span(
            f"eval {name}", attributes={"agentflow.eval.name": name, "agentflow.eval.flow": flow}
        )

    def case(self, case: Case, model: str, repeat: int) -> tuple[Any, Any]:
        """``(case span, sink)``: the span of one case run, and the sink its run exports to."""
        import dataclasses

        from opentelemetry import trace

        span = self.tracer.start_span(
            f"eval case {case.name}",
            context=trace.set_span_in_context(self.root),
            attributes={
                "agentflow.eval.case": case.name,
                "agentflow.eval.model": model,
                "agentflow.eval.repeat": repeat,
                "agentflow.eval.where": f"{case.file}:{case.line}",
            },
        )
        ids = span.get_span_context()
        parent = f"00-{ids.trace_id:032x}-{ids.span_id:016x}-01"
        settings = dataclasses.replace(self.settings, traceparent=parent)
        return span, OtelSink(settings, tracer_provider=self.provider)

    def end_case(self, span: Any, run: CaseRun) -> None:
        span.set_attribute("agentflow.eval.passed", run.passed)
        span.set_attribute("agentflow.eval.status", run.status)
        for name, score in run.scores.items():
            if score.score is not None:
                span.set_attribute(f"agentflow.eval.score.{name}", score.score)
        span.end()

    def close(self, report: EvalReport) -> None:
        self.root.set_attribute("agentflow.eval.runs", len(report.runs))
        self.root.set_attribute("agentflow.eval.passed", sum(1 for r in report.runs if r.passed))
        self.root.end()
        if self.owned:
            self.provider.shutdown()
        else:
            self.provider.force_flush()


# ---------------------------------------------------------------------------------- running


async def run_eval(
    prepared: Prepared,
    *,
    config: Any,
    workspace: Path,
    models: list[str] | None = None,
    model: str | None = None,
    replay: str | os.PathLike[str] | None = None,
    repeat: int = 1,
    concurrency: int = 4,
    timeout_s: float | None = None,
    cache: ResponseCache | None = None,
    on_run: Any = None,
    trace: EvalTrace | None = None,
) -> EvalReport:
    """Run every case of ``prepared`` (see the module docstring) and score it; ``trace``: the
    eval's OpenTelemetry spans (closed when every case has run).  Raises ConfigError for a
    ``model`` that names no test model, before any case runs."""
    if model is not None:
        try:
            parse_model_option(model, "model")
        except ValueError as e:
            raise ConfigError(str(e)) from None
    block = prepared.block
    names = models or [("test" if model is not None else "replay" if replay else "configured")]
    report = EvalReport(
        flow=prepared.file,
        name=block.node.name,
        scorers={
            s.name.name: {
                "kind": block.kinds[s.name.name],
                "threshold": block.thresholds[s.name.name],
            }
            for s in block.node.scorers
            if s.name.name in block.kinds
        },
        models=names,
        repeat=repeat,
        digest=flow_digest(prepared),
    )
    plan = load_plan_data(prepared.plan, prepared.file)
    slots = asyncio.Semaphore(max(1, concurrency))
    counts = {"requests": 0, "cached": 0, "answered": 0}
    jobs = [(m, k, case) for m in names for k in range(repeat) for case in prepared.cases]

    async def one(m: str, k: int, case: Case) -> CaseRun:
        async with slots:
            span, sink = trace.case(case, m, k) if trace is not None else (None, None)
            run = await _run_case(
                prepared, plan, case, m if models else None, k,
                config=config, workspace=workspace, model=model, replay=replay,
                timeout_s=timeout_s, cache=cache, counts=counts, sink=sink,
            )  # fmt: skip
            run.model = m
            if trace is not None:
                trace.end_case(span, run)
        if on_run is not None:
            on_run(run)
        return run

    try:
        report.runs = list(await asyncio.gather(*(one(*job) for job in jobs)))
    finally:
        if trace is not None:
            trace.close(report)
    report.requests = counts["requests"]
    report.cached = counts["cached"]
    report.answered = counts["answered"]
    if model is not None:
        report.answered_by = "test model"
    elif replay is not None:
        report.answered_by = "cassette"
    return report


async def _run_case(
    prepared: Prepared,
    plan: Any,
    case: Case,
    named: str | None,
    repeat: int,
    *,
    config: Any,
    workspace: Path,
    model: str | None,
    replay: Any,
    timeout_s: float | None,
    cache: ResponseCache | None,
    counts: dict[str, int],
    sink: Any = None,
) -> CaseRun:
    mine = {"requests": 0, "cached": 0, "answered": 0}
    events: list[dict[str, Any]] = []
    run_out = CaseRun(
        case=case.name, model=named or "", repeat=repeat, status="error",
        input=case.input, expected=case.expected if case.has_expected else None,
        file=case.file, line=case.line,
    )  # fmt: skip
    router = _case_router(config, named, model, replay, repeat, cache, mine)
    started = time.monotonic()
    try:
        coro = run(
            plan,
            case.input,
            config=config,
            workspace=workspace,
            router=router,
            shape_cache=False,
            telemetry=False,
            sinks=[CallbackSink(lambda e: events.append(e.to_dict()))]
            + ([sink] if sink is not None else []),
        )
        result = await (asyncio.wait_for(coro, timeout_s) if timeout_s else coro)
    except TimeoutError:
        run_out.status = "timeout"
        run_out.error = {"code": Code.TIMEOUT, "message": f"the case ran over {timeout_s:g}s"}
        result = None
    except FlowError as e:
        run_out.error = {"code": getattr(e, "code", None) or "config", "message": str(e)}
        result = None
    finally:
        await router.aclose()
        for key in mine:
            counts[key] += mine[key]
    run_out.duration_ms = int((time.monotonic() - started) * 1000)
    run_out.events = events
    run_out.requests, run_out.cached = mine["requests"], mine["cached"]
    stages: dict[str, Any] = {}
    if result is not None:
        run_out.status = result.status
        usage = result.usage or {}
        if model is not None or replay is not None:  # answered here: no request was sent
            counts["answered"] += int(usage.get("inferences", 0))
        run_out.usage = {
            "inferences": int(usage.get("inferences", 0)),
            "input_tokens": int(usage.get("input_tokens", 0)),
            "output_tokens": int(usage.get("output_tokens", 0)),
            "tokens": int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0)),
            "cost": float(usage.get("cost") or 0.0),
            "duration_ms": int(result.duration_ms),
        }
        if result.ok and isinstance(result.output, dict):
            run_out.output = result.output.get("output")
            stages = result.output.get("stages") or {}
        elif result.error is not None:
            run_out.error = {"code": result.error.code, "message": result.error.message}
    run_out.scores = await _score(
        prepared, case, run_out, stages, config, model, replay, repeat, cache, counts
    )
    return run_out


def _case_router(
    config: Any,
    named: str | None,
    model: str | None,
    replay: Any,
    repeat: int,
    cache: ResponseCache | None,
    counts: dict[str, int],
) -> Any:
    if model is not None:
        seed, call_tools = parse_model_option(model, "model")
        # each repetition its own seed: repeated runs vary as a real model's do
        return test_router(config, seed + repeat, call_tools=call_tools)
    if replay is not None:
        return ReplayRouter(replay, config)
    return _router(config, named, f"repeat {repeat}", cache, counts)


#: the comparisons whose failed `bool` score shows both sides' values
_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in"})
#: the most characters of one side's value a reason shows
_SHOWN = 120


def _compared(written: Any, expr: Any, scope: dict[str, Any], text: str) -> str | None:
    """The reason of a failed `bool` score that is a comparison (``output.team ==
    expected.team``): each side as written with its value (``output.team is "billing";
    expected.team is "platform"``), abridged, a literal side left out; None for any other
    expression, or a side that cannot be evaluated alone."""
    if not isinstance(written, ast.Binary) or written.op not in _COMPARISONS:
        return None
    if not isinstance(expr, ast.Binary):
        return None
    sides = []
    for shown, side in ((written.left, expr.left), (written.right, expr.right)):
        if _constant(shown):  # `== "none"`: its value is what is written
            continue
        try:
            value = evaluate(side, scope)
        except FlowError:
            return None
        source = text[shown.span.start : shown.span.end]
        if not source or "\n" in source:
            return None
        dumped = json.dumps(redact_data(value), ensure_ascii=False, default=str)
        if len(dumped) > _SHOWN:
            dumped = dumped[: _SHOWN - 1] + "…"
        sides.append(f"{source} is {escape_surrogates(dumped)}")
    return "; ".join(sides) or None


def _constant(expr: Any) -> bool:
    """True for a literal whose value is its text: a number, `true`/`false`, `null`, a
    duration, a string without `${…}`."""
    if isinstance(expr, ast.StringLit):
        return expr.is_plain
    return isinstance(expr, (ast.NumberLit, ast.BoolLit, ast.NullLit, ast.DurationLit))


async def _score(
    prepared: Prepared,
    case: Case,
    run: CaseRun,
    stages: dict[str, Any],
    config: Any,
    model: str | None,
    replay: Any,
    repeat: int,
    cache: ResponseCache | None,
    counts: dict[str, int],
) -> dict[str, ScoreResult]:
    block = prepared.block
    out: dict[str, ScoreResult] = {}
    ran = run.status in ("ok", "exited")
    scope: dict[str, Any] = {
        **stages,
        "input": case.input,
        "output": run.output,
        "expected": case.expected,
        "usage": run.usage,
        "case": {"name": case.name, "tags": case.tags, "metadata": case.metadata},
    }
    for scorer in block.node.scorers:
        name = scorer.name.name
        if name not in block.kinds or name in out:
            continue
        kind = block.kinds[name]
        threshold = block.thresholds[name]
        if block.reads_expected.get(name) and not case.has_expected:
            out[name] = ScoreResult(None, None, "not scored: the case gives no `expected`")
            continue
        if not ran:
            code = (run.error or {}).get("code", run.status)
            out[name] = ScoreResult(0.0, False, f"the run ended {run.status} ({code})")
            continue
        try:
            # read as a stage reads: an absent optional field is null (docs/reference/types.md)
            expr = absent_reads_null(scorer.expr, prepared.result)
            value = evaluate(expr, scope)
        except FlowError as e:
            out[name] = ScoreResult(0.0, False, f"could not be evaluated: {e}")
            continue
        if kind == "bool":
            passed = value is True
            why = None if passed else _compared(scorer.expr, expr, scope, prepared.text)
            out[name] = ScoreResult(1.0 if passed else 0.0, passed, why)
        elif kind == "number":
            raw = float(value) if isinstance(value, (int, float)) else 0.0
            score = min(1.0, max(0.0, raw))
            # a number score is a fraction: one outside 0..1 is counted at the nearer end, and
            # the report says so (a formula that goes negative is usually a mistake in it)
            reason = (
                None if raw == score else f"the score {raw:g} is outside 0..1: counted as {score:g}"
            )
            out[name] = ScoreResult(score, score >= threshold, reason)
        else:
            out[name] = await _judge(
                to_text(value), threshold, config, model, replay, repeat, cache, counts
            )
    return out


async def _judge(
    rubric: str,
    threshold: float,
    config: Any,
    model: str | None,
    replay: Any,
    repeat: int,
    cache: ResponseCache | None,
    counts: dict[str, int],
) -> ScoreResult:
    """One ``judge`` scorer: the rubric to the ``judge`` role, its verdict checked."""
    mine = {"requests": 0, "cached": 0, "answered": 0}
    if model is not None or replay is not None:
        mine["answered"] += 1  # the test model or the cassette answers the judge: no request
        router = _case_router(config, None, model, replay, repeat, cache, mine)
    else:
        router = _router(config, None, f"judge repeat {repeat}", cache, mine)
    try:
        client = router.client_for("judge")
        request = ChatRequest(
            messages=[
                Message(role="system", content=EVAL_JUDGE_PROMPT),
                Message(role="user", content=rubric),
            ],
            response_schema=VERDICT_SCHEMA,
        )
        response = await client.chat(request)
        verdict = extract_json(response.text).value
        problems = validate(VERDICT_SCHEMA, verdict)
        if problems:
            return ScoreResult(0.0, False, f"the judge's verdict does not fit: {problems[0]}")
    except ExtractionError as e:
        return ScoreResult(0.0, False, f"the judge gave no verdict: {e}")
    except FlowError as e:
        return ScoreResult(0.0, False, f"the judge could not be asked: {e}")
    finally:
        await router.aclose()
        for key in mine:
            counts[key] += mine[key]
    score = float(verdict["score"])
    return ScoreResult(score, score >= threshold, str(verdict["reason"]))
