"""What ``flowc test`` reports (docs/reference/testing.md): a :class:`TestOutcome` per test, the
:class:`TestReport` of a run, and the place a failure names (``file:line:column``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentflow.core.text import xml_attribute, xml_text

#: the names of the outcome standing for a file whose tests could not run
_UNCHECKED = frozenset({"flowc check", "flowc compile"})


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


def _where(shown: str, span: Any) -> str:
    return f"{shown}:{span.line}:{span.column}"
