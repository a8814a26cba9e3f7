"""What an eval gives back (docs/reference/evals.md "Reports"): every case run and its scores,
the aggregates per scorer and model (mean, pass rate, pass^k, variance), JSON, JUnit XML and the
terminal table, and the comparison with a baseline (an earlier ``--json``).

Pure data and arithmetic: nothing here runs a flow or calls a model. Layer: api.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from math import comb
from pathlib import PurePath
from typing import Any

from agentflow.core.redaction import redact_data
from agentflow.core.text import finite_dumps, xml_attribute, xml_text

__all__ = [
    "DEFAULT_EVAL_NAME",
    "CaseRun",
    "CaseStats",
    "Change",
    "Comparison",
    "EvalReport",
    "ScoreResult",
    "ScorerSummary",
    "compare",
    "FORMAT",
]

#: the ``format`` of an eval's JSON (a baseline must have it)
FORMAT = "agentflow-eval/1"
#: flaky cases the terminal table lists
_SHOWN = 8


#: the name of the eval block a flow with none is scored by (``output == expected``;
#: docs/reference/evals.md "With no eval block")
DEFAULT_EVAL_NAME = "default: output == expected"


@dataclass
class ScoreResult:
    """One scorer on one case run: ``score`` (0..1; None: not scored — the case gives no
    ``expected`` and the scorer reads it), ``passed`` (None when not scored), ``reason`` (a
    judge's reason, or why it could not score)."""

    score: float | None
    passed: bool | None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"score": self.score, "passed": self.passed}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass
class CaseRun:
    """One run of one case with one model: ``case`` (its name), ``model`` (the model under test:
    a named model, ``test`` or ``configured``), ``repeat`` (0-based repetition), ``status`` (the
    run's: ``ok``, ``error``, ``timeout`` …), ``error`` (``{code, message}``), ``output``,
    ``usage`` (inferences, tokens, cost, duration_ms), ``requests`` (model requests sent over the
    network) and ``cached`` (answered from ``.flowc-cache/``), ``scores`` by scorer, and
    ``events`` (the run's trace events, for the HTML page's conversation; not in the JSON)."""

    case: str
    model: str
    repeat: int
    status: str
    output: Any = None
    error: dict[str, Any] | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    duration_ms: int = 0
    requests: int = 0
    cached: int = 0
    scores: dict[str, ScoreResult] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)
    input: Any = None
    expected: Any = None
    file: str = ""
    line: int = 0

    @property
    def passed(self) -> bool:
        """True when the run finished and every scorer that scored it passed."""
        return self.status in ("ok", "exited") and all(
            s.passed is not False for s in self.scores.values()
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "case": self.case,
            "model": self.model,
            "repeat": self.repeat,
            "status": self.status,
            "passed": self.passed,
            "output": self.output,
            "usage": self.usage,
            "duration_ms": self.duration_ms,
            "requests": self.requests,
            "cached": self.cached,
            "scores": {k: v.to_dict() for k, v in self.scores.items()},
            "where": f"{self.file}:{self.line}",
        }
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class ScorerSummary:
    """One scorer with one model over every case: ``mean`` score, ``pass_rate`` (of the runs it
    scored), ``pass_k`` (the share of cases that passed in all ``k`` repetitions, pass^k),
    ``scored`` runs."""

    scorer: str
    model: str
    mean: float | None
    pass_rate: float | None
    pass_k: float | None
    scored: int


@dataclass
class CaseStats:
    """One case, one model, one scorer over its repetitions: ``scores``, their ``mean`` and
    (population) ``variance``, ``passes`` of ``runs``, ``pass_k`` (1 when all passed: pass^k)."""

    case: str
    model: str
    scorer: str
    scores: list[float]
    mean: float
    variance: float
    passes: int
    runs: int

    @property
    def pass_k(self) -> float:
        return 1.0 if self.passes == self.runs else 0.0

    @property
    def flaky(self) -> bool:
        """Passed in some repetitions and failed in others."""
        return 0 < self.passes < self.runs


@dataclass
class EvalReport:
    """Everything an eval did (:func:`agentflow.api.evaluate`): the ``flow`` file, the eval
    block's ``name``, its ``scorers`` (name → ``{kind, threshold}``), the ``models`` compared,
    ``repeat``, every case ``runs`` in (model, repeat, case) order, ``requests`` sent over the
    network in all and ``cached`` answers, ``answered``: the model requests answered with none
    sent, by ``answered_by`` (``"test model"`` under ``--model test``, ``"cassette"`` under
    ``--replay``; else None and 0), and ``diagnostics`` (a flow or dataset that does not
    check: then nothing ran)."""

    flow: str
    name: str
    scorers: dict[str, dict[str, Any]] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    repeat: int = 1
    runs: list[CaseRun] = field(default_factory=list)
    requests: int = 0
    cached: int = 0
    answered: int = 0
    answered_by: str | None = None
    diagnostics: list[Any] = field(default_factory=list)
    digest: str = ""
    #: the text of the flow and dataset files (for rendering diagnostics)
    sources: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """True when it ran (no error diagnostic) and every case run passed."""
        return not self.errors and all(r.passed for r in self.runs)

    @property
    def errors(self) -> list[Any]:
        return [d for d in self.diagnostics if d.severity == "error"]

    # ------------------------------------------------------------------ aggregates

    def stats(self) -> list[CaseStats]:
        """Per case, model and scorer: its scores over the repetitions."""
        groups: dict[tuple[str, str, str], list[ScoreResult]] = {}
        for r in self.runs:
            for name, s in r.scores.items():
                groups.setdefault((r.case, r.model, name), []).append(s)
        out = []
        for (case, model, scorer), results in groups.items():
            scored = [s for s in results if s.score is not None]
            if not scored:
                continue
            values = [float(s.score) for s in scored]  # type: ignore[arg-type]
            mean = sum(values) / len(values)
            variance = sum((v - mean) ** 2 for v in values) / len(values)
            passes = sum(1 for s in scored if s.passed)
            out.append(CaseStats(case, model, scorer, values, mean, variance, passes, len(values)))
        return out

    def summaries(self) -> list[ScorerSummary]:
        """Per scorer and model: mean, pass rate, pass^k over the cases."""
        stats = self.stats()
        out = []
        for scorer in self.scorers:
            for model in self.models:
                mine = [s for s in stats if s.scorer == scorer and s.model == model]
                runs = sum(s.runs for s in mine)
                if not runs:
                    out.append(ScorerSummary(scorer, model, None, None, None, 0))
                    continue
                mean = sum(sum(s.scores) for s in mine) / runs
                rate = sum(s.passes for s in mine) / runs
                k = self.repeat
                # pass^k estimated per case from its n runs (c passed): C(c, k) / C(n, k)
                pass_k = sum(comb(s.passes, k) / comb(s.runs, k) for s in mine if s.runs >= k)
                counted = sum(1 for s in mine if s.runs >= k)
                out.append(
                    ScorerSummary(
                        scorer, model, mean, rate, pass_k / counted if counted else None, runs
                    )
                )
        return out

    def worst(self, limit: int = 5) -> list[CaseRun]:
        """The failing case runs, lowest mean score first, then in dataset order (at most
        ``limit``)."""
        failed = [r for r in self.runs if not r.passed]

        def key(r: CaseRun) -> tuple[float, str, int, int]:
            scores = [s.score for s in r.scores.values() if s.score is not None]
            return (sum(scores) / len(scores) if scores else 0.0, r.file, r.line, r.repeat)

        return sorted(failed, key=key)[:limit]

    def pass_rate(self, scorer: str | None = None) -> float:
        """The share of scored runs that passed ``scorer`` (None: of runs that passed all)."""
        if scorer is None:
            return sum(r.passed for r in self.runs) / len(self.runs) if self.runs else 0.0
        scored = [r.scores[scorer] for r in self.runs if scorer in r.scores]
        scored = [s for s in scored if s.passed is not None]
        return sum(1 for s in scored if s.passed) / len(scored) if scored else 0.0

    # ------------------------------------------------------------------ outputs

    def requests_text(self) -> str:
        """What the model requests were: ``12 model request(s), 0 from the cache``, or
        ``9 model request(s) answered by the test model, none sent`` (``… from the cassette``)."""
        if self.answered_by == "test model":
            return f"{self.answered} model request(s) answered by the test model, none sent"
        if self.answered_by == "cassette":
            return f"{self.answered} model request(s) answered from the cassette, none sent"
        return f"{self.requests} model request(s), {self.cached} from the cache"

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data (``flowc eval --json``; a later ``--baseline``)."""
        return {
            "format": FORMAT,
            "flow": self.flow,
            "eval": self.name,
            "digest": self.digest,
            "models": self.models,
            "repeat": self.repeat,
            "scorers": self.scorers,
            "requests": self.requests,
            "cached": self.cached,
            "answered": self.answered,
            "answered_by": self.answered_by,
            "summary": [
                {
                    "scorer": s.scorer,
                    "model": s.model,
                    "mean": s.mean,
                    "pass_rate": s.pass_rate,
                    "pass_k": s.pass_k,
                    "scored": s.scored,
                }
                for s in self.summaries()
            ],
            "cases": [r.to_dict() for r in self.runs],
            "stats": [
                {
                    "case": s.case,
                    "model": s.model,
                    "scorer": s.scorer,
                    "mean": s.mean,
                    "variance": s.variance,
                    "passes": s.passes,
                    "runs": s.runs,
                }
                for s in self.stats()
            ],
        }

    def to_json(self) -> str:
        return (
            finite_dumps(redact_data(self.to_dict()), indent=2, ensure_ascii=False, default=str)
            + "\n"
        )

    def to_junit(self) -> str:
        """JUnit XML: one ``testsuite`` per model, one ``testcase`` per case run (a failure
        lists the scorers that failed with their scores and reasons)."""
        lines = ['<?xml version="1.0" encoding="utf-8"?>']
        failed = sum(1 for r in self.runs if not r.passed)
        lines.append(
            f'<testsuites name={xml_attribute(self.name)} tests="{len(self.runs)}" failures="{failed}">'
        )
        for model in self.models:
            runs = [r for r in self.runs if r.model == model]
            secs = sum(r.duration_ms for r in runs) / 1000
            lines.append(
                f'  <testsuite name={xml_attribute(f"{self.name} [{model}]")} tests="{len(runs)}" '
                f'failures="{sum(1 for r in runs if not r.passed)}" time="{secs:.3f}">'
            )
            for r in runs:
                name = r.case if self.repeat == 1 else f"{r.case} #{r.repeat + 1}"
                head = (
                    f"    <testcase classname={xml_attribute(self.flow)} name={xml_attribute(name)} "
                    f'time="{r.duration_ms / 1000:.3f}"'
                )
                if r.passed:
                    lines.append(head + "/>")
                    continue
                why = _failure_lines(r)
                lines.append(head + ">")
                lines.append(
                    f"      <failure message={xml_attribute(why[0])}>{xml_text(chr(10).join(why))}"
                    "</failure>"
                )
                lines.append("    </testcase>")
            lines.append("  </testsuite>")
        lines.append("</testsuites>")
        return "\n".join(lines) + "\n"

    def to_text(self) -> str:
        """The terminal table: per scorer and model mean, pass rate (and pass^k), then the worst
        cases with their reasons, then the flaky cases when repeated."""
        out = [f'eval "{self.name}" of {self.flow}: {len(self.runs)} case run(s)']
        if self.name == DEFAULT_EVAL_NAME:  # the flow has no eval block (evals.md)
            out = [
                f"eval of {self.flow} (no eval block: each case scored exact = output == "
                f"expected): {len(self.runs)} case run(s)"
            ]
        head = ["scorer", "model", "mean", "pass rate"] + (
            [f"pass^{self.repeat}"] if self.repeat > 1 else []
        )
        rows = [head]
        for s in self.summaries():
            row = [s.scorer, s.model, _num(s.mean), _pct(s.pass_rate)]
            if self.repeat > 1:
                row.append(_pct(s.pass_k))
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        for r in rows:
            cells = "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))
            out.append(("  " + cells).rstrip())
        worst = self.worst()
        if worst:
            out.append("worst cases:")
            for bad in worst:
                label = bad.case if self.repeat == 1 else f"{bad.case} #{bad.repeat + 1}"
                if len(self.models) > 1:
                    label += f" [{bad.model}]"
                where = f"{bad.file}:{bad.line}"
                out.append(f"  {label}" + (f" ({where})" if bad.case != where else ""))
                out.extend(f"    {line}" for line in _failure_lines(bad))
        if self.repeat > 1:
            flaky = [c for c in self.stats() if c.flaky]
            if flaky:
                out.append(f"flaky cases (passed in some of {self.repeat} runs):")
                for c in flaky[:_SHOWN]:
                    out.append(
                        f"  {c.case} · {c.scorer}"
                        + (f" [{c.model}]" if len(self.models) > 1 else "")
                        + f": passed {c.passes}/{c.runs}, mean {c.mean:.2f}, "
                        f"variance {c.variance:.3f}, pass^{self.repeat} {c.pass_k:.0f}"
                    )
                if len(flaky) > _SHOWN:
                    out.append(f"  … and {len(flaky) - _SHOWN} more (--json has them all)")
        cost = sum(float(r.usage.get("cost") or 0) for r in self.runs)
        passed = sum(1 for r in self.runs if r.passed)
        out.append(f"{passed} of {len(self.runs)} passed · {self.requests_text()} · ${cost:.4f}")
        return "\n".join(out) + "\n"


def _failure_lines(r: CaseRun) -> list[str]:
    if r.status not in ("ok", "exited"):
        err = r.error or {}
        return [f"the run ended {r.status}: {err.get('code', r.status)}: {err.get('message', '')}"]
    out = []
    for name, s in r.scores.items():
        if s.passed is False:
            reason = f" — {s.reason}" if s.reason else ""
            out.append(f"{name}: {_num(s.score)}{reason}")
    return out or ["failed"]


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:.0f}%"


# ---------------------------------------------------------------------------------- baseline


@dataclass
class Change:
    """A case whose score for ``scorer`` changed from the baseline: ``before``/``after`` (mean
    scores over the repetitions, None: not scored then), ``kind`` ``regression`` or
    ``improvement``, and ``passed_before``/``passed_after`` (all repetitions passed)."""

    case: str
    model: str
    scorer: str
    before: float | None
    after: float | None
    kind: str
    passed_before: bool | None = None
    passed_after: bool | None = None


@dataclass
class Comparison:
    """The report against a baseline: per-case ``changes`` (exactly the cases whose scores
    changed), per-scorer ``deltas`` (``{scorer, model, before, after, delta, note}``: the mean
    score's change; ``note`` says whether it is beyond the noise the repetitions measured),
    ``added``/``removed`` cases."""

    changes: list[Change] = field(default_factory=list)
    deltas: list[dict[str, Any]] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: what makes the comparison doubtful: a baseline of another flow or eval block
    warnings: list[str] = field(default_factory=list)
    #: (case, model, scorer) keys scored both in the baseline and now: 0 means nothing was compared
    compared: int = 0

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "regression"]

    @property
    def improvements(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "improvement"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "regressions": [c.__dict__ for c in self.regressions],
            "improvements": [c.__dict__ for c in self.improvements],
            "deltas": self.deltas,
            "added": self.added,
            "removed": self.removed,
            "compared": self.compared,
            "warnings": self.warnings,
        }

    def to_text(self) -> str:
        out = [
            f"against the baseline: {len(self.regressions)} regression(s), "
            f"{len(self.improvements)} improvement(s)"
        ]
        out.extend(f"  warning: {w}" for w in self.warnings)
        for c in [*self.regressions, *self.improvements]:
            mark = "-" if c.kind == "regression" else "+"
            out.append(
                f"  {mark} {c.case} · {c.scorer} [{c.model}]: {_num(c.before)} → {_num(c.after)}"
            )
        for d in self.deltas:
            if d["delta"]:
                out.append(
                    f"  {d['scorer']} [{d['model']}]: mean {_num(d['before'])} → "
                    f"{_num(d['after'])} ({d['delta']:+.2f}; {d['note']})"
                )
        if self.added:
            out.append(f"  new cases: {', '.join(self.added)}")
        if self.removed:
            out.append(f"  cases gone: {', '.join(self.removed)}")
        return "\n".join(out) + "\n"


def _stats_of(data: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(s["case"], s["model"], s["scorer"]): s for s in data.get("stats") or []}


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def check_baseline(data: Any) -> dict[str, Any]:
    """``data`` (an earlier ``flowc eval --json``, decoded) when it has the shape
    :func:`compare` reads: ``format`` this version's, ``cases`` a list of objects with a text
    ``case``, ``stats`` a list of objects with text ``case``/``model``/``scorer``, a number or
    null ``mean`` and whole ``passes``/``runs``. Raises ValueError naming the first part that is
    not (docs/reference/evals.md "Baselines"): a baseline is read before any case runs."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not an eval report of this version (want `format: {FORMAT}`)")
    for key in ("flow", "eval"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise ValueError(f"`{key}` is not text")
    for key, fields in (("cases", ("case",)), ("stats", ("case", "model", "scorer"))):
        rows = data.get(key)
        if rows is None:
            continue
        if not isinstance(rows, list):
            raise ValueError(f"`{key}` is not a list")
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise ValueError(f"`{key}[{i}]` is not an object")
            for name in fields:
                if not isinstance(row.get(name), str):
                    raise ValueError(f"`{key}[{i}].{name}` is not text")
            if key == "stats":
                if row.get("mean") is not None and not _is_number(row["mean"]):
                    raise ValueError(f"`stats[{i}].mean` is not a number")
                for name in ("passes", "runs"):
                    if not isinstance(row.get(name), int) or isinstance(row[name], bool):
                        raise ValueError(f"`stats[{i}].{name}` is not a whole number")
    return data


def compare(report: EvalReport, baseline: dict[str, Any]) -> Comparison:
    """Compare ``report`` with ``baseline`` (the data of an earlier ``--json``; raises
    ValueError when it is not one). A case changed when its mean score for a scorer moved by
    more than 1e-9; a regression when it went down, an improvement when it went up."""
    check_baseline(baseline)
    before = _stats_of(baseline)
    after = _stats_of(report.to_dict())
    out = Comparison()
    out.compared = len(set(before) & set(after))
    for part, now in (("flow", report.flow), ("eval", report.name)):
        was = baseline.get(part)
        # a flow by its file's name: the same file run from another directory is the same flow
        same = PurePath(was).name == PurePath(now).name if part == "flow" and was else was == now
        if was is not None and not same:
            out.warnings.append(
                f"the baseline is of {part} {was!r}, this report of {part} {now!r}: "
                "its scores may not be comparable"
            )
    order = {r.case: i for i, r in reversed(list(enumerate(report.runs)))}
    scorer_order = {name: i for i, name in enumerate(report.scorers)}

    def place(key: tuple[str, str, str]) -> tuple[int, str, str, int, str]:
        case, model, scorer = key
        return (order.get(case, len(order)), case, model, scorer_order.get(scorer, 0), scorer)

    for key in sorted(set(before) | set(after), key=place):
        b, a = before.get(key), after.get(key)
        bm = b["mean"] if b else None
        am = a["mean"] if a else None
        if bm is None or am is None or abs(am - bm) <= 1e-9:
            continue
        out.changes.append(
            Change(
                *key,
                before=bm,
                after=am,
                kind="regression" if am < bm else "improvement",
                passed_before=b["passes"] == b["runs"] if b else None,
                passed_after=a["passes"] == a["runs"] if a else None,
            )
        )
    cases_before = {c["case"] for c in baseline.get("cases") or []}
    cases_after = {r.case for r in report.runs}
    out.added = sorted(cases_after - cases_before)
    out.removed = sorted(cases_before - cases_after)
    for scorer in report.scorers:
        for model in report.models:
            bs = [s for k, s in before.items() if k[1] == model and k[2] == scorer]
            as_ = [s for k, s in after.items() if k[1] == model and k[2] == scorer]
            if not bs or not as_:
                continue
            bmean = sum(s["mean"] for s in bs) / len(bs)
            amean = sum(s["mean"] for s in as_) / len(as_)
            out.deltas.append(
                {
                    "scorer": scorer,
                    "model": model,
                    "before": bmean,
                    "after": amean,
                    "delta": amean - bmean,
                    "note": _significance(bs, as_, amean - bmean),
                }
            )
    return out


def _significance(before: list[dict[str, Any]], after: list[dict[str, Any]], delta: float) -> str:
    """Whether ``delta`` is beyond twice its standard error, from the variance the repetitions
    measured (``single runs``: no repetitions, no variance to judge by)."""
    if not any(g["runs"] > 1 for g in before + after):
        return "single runs: no variance measured (use --repeat)"
    var = 0.0
    for group in (before, after):
        n = len(group)
        # the variance of a mean of per-case means: each case's variance over its runs
        var += sum(g["variance"] / max(g["runs"], 1) for g in group) / (n * n)
    se = math.sqrt(var)
    if se == 0:
        return "beyond the measured noise (no variance)" if delta else "no change"
    if abs(delta) > 2 * se:
        return f"beyond the noise (±{2 * se:.2f} at two standard errors)"
    return f"within the noise (±{2 * se:.2f} at two standard errors)"
