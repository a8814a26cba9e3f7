"""Every error code spelled in the source is registered, as every diagnostic code is.

Run-time error codes (docs/spec/PLAN_IR.md §8) are registered once, in
``agentflow.core.vocabulary.ERROR_CODES`` (code, retryable, summary); ``RunError`` refuses any
other (an ``exit`` step's own code excepted, ``ExitError``), like ``Diagnostic`` refuses an
unregistered diagnostic code.  A construction on a path no test runs would only fail in a user's
run, so this test reads every ``.py`` under ``src/agentflow`` with :mod:`ast` and checks each code
written as a literal where a run-time error code goes:

- the code of ``RunError(…)``, ``ErrorInfo(…)`` and ``_error_content(…)`` (a tool result the
  model reads), positional or ``code=``;
- ``{"code": "…"}`` in a dict display (events, results);
- the right side of ``….code == "…"`` / ``….code in ("…", …)`` and ``.get("code") == …``
  (snake_case: a kebab-case one is a diagnostic code);
- the items of a module-level ``…_CODES`` collection (a dict's values).

Diagnostic codes written as literals (``Diagnostic("…", …)``, ``d.code == "…"``) must be in
``CODES``; a run-time code never passes for a diagnostic code or the other way round.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from support import source_tree

import agentflow
from agentflow.core.diagnostics import CODES, PLAN_CODES
from agentflow.core.vocabulary import ERROR_CODES
from agentflow.errors import ErrorInfo, ExitError, RunError

PACKAGE = Path(agentflow.__file__).resolve().parent
#: the registry itself
REGISTRY = PACKAGE / "core" / "vocabulary.py"
#: callables whose first argument (or ``code=``) is a run-time error code
RUN_CODE_CALLS = frozenset({"RunError", "ErrorInfo", "_error_content"})


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _strings(node: ast.expr) -> list[ast.Constant]:
    """The string constants of a literal or of a tuple/list/set/frozenset(...) of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [c for e in node.elts for c in _strings(e)]
    if isinstance(node, ast.Call) and _name(node.func) in ("frozenset", "set", "tuple"):
        return [c for a in node.args for c in _strings(a)]
    return []


def _reads_code(node: ast.expr) -> bool:
    """``x.code``, ``x["code"]`` or ``x.get("code")``."""
    if isinstance(node, ast.Attribute):
        return node.attr == "code"
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value == "code"
    if isinstance(node, ast.Call) and _name(node.func) == "get" and node.args:
        first = node.args[0]
        return isinstance(first, ast.Constant) and first.value == "code"
    return False


def run_codes(tree: ast.AST) -> list[ast.Constant]:
    """The literals of ``tree`` written where a run-time error code goes (module docstring)."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) in RUN_CODE_CALLS:
            args = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "code")]
            found += [c for a in args for c in _strings(a)]
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "code" and value is not None:
                    found += _strings(value)
        elif isinstance(node, ast.Compare) and _reads_code(node.left):
            found += [c for c in _compared(node) if "-" not in c.value]
    for stmt in getattr(tree, "body", []):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        if isinstance(stmt, ast.AnnAssign):
            targets = [stmt.target]
        value = getattr(stmt, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and target.id.endswith("_CODES") and value:
                items = value.values if isinstance(value, ast.Dict) else [value]
                found += [c for item in items for c in _strings(item)]
    return found


def diagnostic_codes(tree: ast.AST) -> list[ast.Constant]:
    """The literal codes of ``Diagnostic(…)`` constructions (first argument or ``code=``) and the
    kebab-case literals compared with a ``.code`` (``d.code == "unknown-type"``)."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) == "Diagnostic":
            args = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "code")]
            found += [c for a in args for c in _strings(a)]
        elif isinstance(node, ast.Compare) and _reads_code(node.left):
            found += [c for c in _compared(node) if "-" in c.value]
    return found


def _compared(node: ast.Compare) -> list[ast.Constant]:
    return [c for comp in node.comparators for c in _strings(comp)]


@functools.cache
def _sources() -> list[tuple[Path, ast.AST]]:
    return [
        (source.path, source.tree)
        for source in source_tree.sources(PACKAGE)  # each file parsed once per process
        if source.path != REGISTRY
    ]


@functools.cache
def _run_codes() -> list[tuple[Path, ast.Constant]]:
    """Every run-time code literal of the package (walked once per process)."""
    return [(path, c) for path, tree in _sources() for c in run_codes(tree)]


@functools.cache
def _diagnostic_codes() -> list[tuple[Path, ast.Constant]]:
    """Every diagnostic code literal of the package (walked once per process)."""
    return [(path, c) for path, tree in _sources() for c in diagnostic_codes(tree)]


def _where(path: Path, node: ast.Constant) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value!r}"


def test_every_run_time_error_code_in_the_source_is_registered():
    unknown = [_where(path, c) for path, c in _run_codes() if c.value not in ERROR_CODES]
    assert unknown == [], "run-time error codes not in core.vocabulary.ERROR_CODES:\n" + "\n".join(
        unknown
    )


def test_every_diagnostic_code_in_the_source_is_registered():
    unknown = [_where(path, c) for path, c in _diagnostic_codes() if c.value not in CODES]
    assert unknown == [], "diagnostic codes not in core.diagnostics.CODES:\n" + "\n".join(unknown)


def test_the_walk_finds_the_codes_the_runtime_writes():
    """The checks above see real constructions, not nothing: the executor's, the budget's,
    the cassette's and the planner's codes are among what they read."""
    seen = {c.value for _, c in _run_codes()}
    assert {"tool_error", "validation", "aborted", "budget_exceeded", "replay_miss"} <= seen
    assert {"unsupported-construct"} <= {c.value for _, c in _diagnostic_codes()}


def test_the_walk_flags_an_unregistered_code():
    tree = ast.parse(
        'raise RunError("tool_eror", "x")\n'
        'e = ErrorInfo(code="nope", message="m")\n'
        'd = {"code": "cancelled", "message": "m"}\n'
        'if err.code in ("timeout", "slow"):\n    pass\n'
        'HARD_STOP_CODES = frozenset({"aborted", "stopped"})\n'
    )
    assert sorted(c.value for c in run_codes(tree) if c.value not in ERROR_CODES) == [
        "cancelled",
        "nope",
        "slow",
        "stopped",
        "tool_eror",
    ]


def test_run_error_refuses_an_unregistered_code():
    with pytest.raises(ValueError, match="unregistered run-time error code 'tool_eror'"):
        RunError("tool_eror", "a typo")
    assert RunError("timeout", "slow").retryable
    assert not RunError("tool_error", "broke").retryable


def test_an_exit_step_keeps_its_own_code():
    """``exit`` takes any error-code name (docs/spec/PLAN_IR.md §5); the run ends with it."""
    err = ExitError("needs_review", "a person must look", "E4")
    assert err.info() == ErrorInfo("needs_review", "a person must look", "E4")


def test_run_time_codes_and_diagnostic_codes_do_not_mix():
    """Run-time codes are snake_case (``plan_cycle``), diagnostic codes kebab-case
    (``plan-cycle``); the plan codes of the diagnostic registry all start with ``plan-``."""
    assert all(c.replace("_", "").isalpha() and c.islower() for c in ERROR_CODES)
    assert all("_" not in c for c in CODES)
    assert not set(ERROR_CODES) & set(CODES)
    assert PLAN_CODES and all(c.startswith("plan-") and c in CODES for c in PLAN_CODES)


async def test_a_user_tool_raising_an_unregistered_code_fails_with_tool_error_naming_it():
    from agentflow.ir import load_plan_text
    from agentflow.runtime.executor import run_plan
    from agentflow.runtime.tools.build import build_catalog
    from agentflow.runtime.tools.user import function_tool

    def flaky(x: int) -> int:
        raise RunError("my_code", "custom")

    catalog = build_catalog(None, entry_points=False)
    catalog.register(function_tool(flaky))
    plan = load_plan_text(
        "version: 1\nname: p\nsteps:\n  - {id: E0, tool_name: user__flaky, input: {x: 1}}\n",
        "p.yaml",
    )
    result = await run_plan(plan, {}, catalog=catalog)
    assert (result.status, result.error.code, result.error.step_path) == (
        "error",
        "tool_error",
        "E0",
    )
    assert "unregistered run-time error code 'my_code'" in result.error.message
